"""The state file: rows round-trip, and a re-save can reuse the records' encoding."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clusterwatch.notify.incident import Action
from clusterwatch.notify.outbox import Outbox
from clusterwatch.watch import state
from clusterwatch.watch.decisions import Incident, TargetRecord

from .support import T0


def sample_state() -> state.WatchState:
    outbox = Outbox()
    outbox.attach(["slack"])
    outbox.append(T0, Action.ALERT, "gpu:192.0.2.10:9100", "stale", "0badcafe")
    return state.WatchState(
        records={
            "node:worker1.example.org": TargetRecord(T0, T0 - 60, None, None),
            "gpu:192.0.2.10:9100": TargetRecord(
                T0, None, T0 - 120, T0 - 130.5, Incident("0badcafe", T0 - 900, "stale")),
            "node:never-polled.example.org": TargetRecord(),
        },
        outbox=outbox,
        last_poll={"t": T0, "node_error": None},
    )


def test_it_loads_what_it_saved(tmp_path: Path) -> None:
    saved = sample_state()
    state.save(tmp_path, saved)
    loaded = state.load(tmp_path)
    assert loaded.records == saved.records
    assert loaded.outbox.to_json() == saved.outbox.to_json()
    assert loaded.last_poll == saved.last_poll


def test_it_stores_records_as_rows_of_4_or_7(tmp_path: Path) -> None:
    state.save(tmp_path, sample_state())
    data = json.loads((tmp_path / state.STATE_FILE).read_bytes())
    assert list(data) == ["version", "targets", "outbox", "last_poll", "silences"]
    assert data["targets"] == {
        "node:worker1.example.org": [T0, T0 - 60, None, None],
        "gpu:192.0.2.10:9100": [T0, None, T0 - 120, T0 - 130.5, "0badcafe", T0 - 900, "stale"],
        "node:never-polled.example.org": [None, None, None, None],
    }


def test_it_rewrites_the_whole_file_when_reusing_the_records_encoding(tmp_path: Path) -> None:
    watch_state = sample_state()
    records_json = state.save(tmp_path, watch_state)
    watch_state.outbox.channels["slack"].cursor = 1  # what a delivery changes
    watch_state.outbox.compact()
    state.save(tmp_path, watch_state, records_json)
    reused = (tmp_path / state.STATE_FILE).read_bytes()
    state.save(tmp_path, watch_state)
    assert reused == (tmp_path / state.STATE_FILE).read_bytes()
    assert state.load(tmp_path).outbox.events == []


@pytest.mark.parametrize("row", [[T0], [T0, None, None, None, "id", T0], "no list",
                                 [T0, "x", None, None], [True, None, None, None]])
def test_it_resets_a_malformed_row_and_keeps_the_others(tmp_path: Path, row: object) -> None:
    saved = sample_state()
    state.save(tmp_path, saved)
    data = json.loads((tmp_path / state.STATE_FILE).read_bytes())
    data["targets"]["node:worker1.example.org"] = row
    (tmp_path / state.STATE_FILE).write_text(json.dumps(data))
    loaded = state.load(tmp_path)
    assert loaded.records == {**saved.records, "node:worker1.example.org": TargetRecord()}
    assert loaded.damage is not None and "node:worker1.example.org" in loaded.damage
    assert list(tmp_path.glob(f"{state.STATE_FILE}.corrupt-*"))
    assert state.load(tmp_path).damage is None  # the kept state was written in its place


def test_it_queues_kept_messages_again_for_channels_whose_positions_were_lost(
    tmp_path: Path,
) -> None:
    state.save(tmp_path, sample_state())
    raw = (tmp_path / state.STATE_FILE).read_bytes()
    torn = raw.replace(b'"channels":{"slack":{"cursor":', b'"channels":{"slack":{"cursor"', 1)
    (tmp_path / state.STATE_FILE).write_bytes(torn)
    loaded = state.load(tmp_path, channel_names=["slack"])
    assert [event.target for event in loaded.outbox.pending("slack")] == [
        "gpu:192.0.2.10:9100"]
    assert "queue position" in (loaded.damage or "")


def test_it_announces_open_incidents_again_when_queued_messages_were_lost(
    tmp_path: Path,
) -> None:
    saved = sample_state()
    saved.outbox.channels["slack"].cursor = 1  # the alert was delivered
    saved.outbox.append(T0 + 60, Action.RECOVER, "node:worker1.example.org", "present", "0ddba11")
    state.save(tmp_path, saved)
    raw = (tmp_path / state.STATE_FILE).read_bytes()
    (tmp_path / state.STATE_FILE).write_bytes(raw.replace(b'"action":"recover"',
                                                          b'"action":"rec', 1))
    loaded = state.load(tmp_path, channel_names=["slack"])
    [again] = loaded.outbox.pending("slack")
    assert (again.action.value, again.target, again.incident, again.t) == (
        "alert", "gpu:192.0.2.10:9100", "0badcafe", T0 - 900)


def test_it_drops_a_queued_message_whose_action_no_engine_writes(tmp_path: Path) -> None:
    saved = sample_state()
    saved.outbox.channels["slack"].cursor = 1  # the alert was delivered
    saved.outbox.append(T0 + 60, Action.RECOVER, "node:worker1.example.org", "present", "0ddba11")
    state.save(tmp_path, saved)
    raw = (tmp_path / state.STATE_FILE).read_bytes()
    (tmp_path / state.STATE_FILE).write_bytes(raw.replace(b'"action":"recover"',
                                                          b'"action":"resolve"', 1))
    loaded = state.load(tmp_path, channel_names=["slack"])
    assert "1 of 2 queued messages unreadable: dropped" in (loaded.damage or "")
    [again] = loaded.outbox.pending("slack")  # the open incident, announced again
    assert (again.action, again.target, again.incident) == (
        Action.ALERT, "gpu:192.0.2.10:9100", "0badcafe")
