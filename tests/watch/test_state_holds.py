"""A held incident is saved as held; a state file of the previous version (no such flag)
loads its incidents as delivered, so nothing is sent twice and nothing kept back."""

from __future__ import annotations

import json
from pathlib import Path

from clusterwatch.notify.incident import Action
from clusterwatch.watch import state
from clusterwatch.watch.decisions import Incident, TargetRecord
from clusterwatch.watch.state_codec import resend_after_loss

from .support import T0

HELD = "node:worker2.example.org"
DELIVERED = "node:worker1.example.org"


def _saved(tmp_path: Path) -> dict[str, list[object]]:
    records = {
        DELIVERED: TargetRecord(T0, None, None, None, Incident("aaaa", T0 - 60, "missing")),
        HELD: TargetRecord(T0, None, None, None, Incident("bbbb", T0 - 30, "missing",
                                                           held=True)),
    }
    state.save(tmp_path, state.WatchState(records=records))
    return json.loads((tmp_path / state.STATE_FILE).read_bytes())["targets"]  # type: ignore[no-any-return]


def test_a_held_incident_survives_a_save_and_a_load(tmp_path: Path) -> None:
    rows = _saved(tmp_path)
    assert rows[HELD][-1] is True and len(rows[HELD]) == 8
    assert len(rows[DELIVERED]) == 7  # a delivered incident's row is the previous version's
    loaded = state.load(tmp_path, repair=False)
    assert loaded.records[HELD].incident == Incident("bbbb", T0 - 30, "missing", held=True)
    assert loaded.records[DELIVERED].incident == Incident("aaaa", T0 - 60, "missing")


def test_a_previous_versions_incident_row_loads_as_delivered(tmp_path: Path) -> None:
    path = tmp_path / state.STATE_FILE
    path.write_text(json.dumps({
        "version": 1, "targets": {DELIVERED: [T0, None, None, None, "aaaa", T0, "stale"]},
        "outbox": {"next_seq": 1, "channels": {}}, "last_poll": {}}))
    loaded = state.load(tmp_path, repair=False)  # would raise if it counted as damage
    incident = loaded.records[DELIVERED].incident
    assert incident is not None and incident.held is False


def test_an_unreadable_held_flag_drops_the_incident_with_a_note(tmp_path: Path) -> None:
    path = tmp_path / state.STATE_FILE
    path.write_text(json.dumps({
        "version": 1, "targets": {HELD: [T0, None, None, None, "bbbb", T0, "missing", "yes"]},
        "outbox": {"next_seq": 1, "channels": {}}, "last_poll": {}}))
    loaded = state.load(tmp_path)
    assert loaded.records[HELD].incident is None
    assert loaded.damage is not None and "incident" in loaded.damage


def test_an_outbox_loss_announces_delivered_incidents_again_but_not_held_ones(
    tmp_path: Path,
) -> None:
    _saved(tmp_path)
    loaded = state.load(tmp_path, repair=False)
    resend_after_loss(loaded.outbox, loaded.records, ["slack"])
    assert [(e.action, e.target, e.incident) for e in loaded.outbox.events] == [
        (Action.ALERT, DELIVERED, "aaaa")]
