"""`watch status` and the health file show what is held, by what, until when."""

from __future__ import annotations

import io
import json
import time

import pytest

from clusterwatch.notify.silences import new_silence, parse_matcher, parse_windows
from clusterwatch.watch import health, state, status
from clusterwatch.watch.decisions import Incident, TargetRecord
from clusterwatch.watch.holds import MATCHER_KINDS
from clusterwatch.watch.state import WatchState

from .support import T0, Pool, cli
from .support import watch_argv as watch_args

W1, W2 = "node:worker1.example.org", "node:worker2.example.org"
GPU = "gpu:worker2.example.org:9100"


def _state() -> WatchState:
    silence = new_silence((parse_matcher("node:worker2*", MATCHER_KINDS),), T0, T0 + 3600,
                          "kernel update", "alice", T0)
    return WatchState(records={
        W1: TargetRecord(T0, incident=Incident("aaaa", T0, "missing")),
        W2: TargetRecord(T0, incident=Incident("bbbb", T0, "missing", held=True)),
        GPU: TargetRecord(T0, incident=Incident("cccc", T0, "stale", held=True)),
    }, silences=[silence], last_poll={"t": T0 + 60})


WINDOWS = parse_windows([{"comment": "rack 12", "matchers": ["gpu:*:9100"],
                          "start": "2026-10-02T13:00:00Z", "end": "2026-10-02T18:00:00Z"}],
                        MATCHER_KINDS)


def test_status_marks_held_incidents_with_their_hold_and_lists_silences_and_windows() -> None:
    watch_state = _state()
    data = status.summary(watch_state, T0 + 60, WINDOWS)
    rows = {item["target"]: item for item in data["open_incidents"]}
    assert rows[W1]["held"] is False and "held_by" not in rows[W1]
    silence_id = watch_state.silences[0].id
    assert (rows[W2]["held_by"], rows[W2]["held_until"]) == (f"silence {silence_id}",
                                                             T0 + 3600)
    # The node silence and the window both cover the GPU file: the one that ends last says.
    assert rows[GPU]["held_by"] == "maintenance window 'rack 12'"
    assert [row["id"] for row in data["silences"]] == [silence_id]
    assert [window["comment"] for window in data["maintenance"]] == ["rack 12"]


def test_a_held_incident_whose_hold_has_ended_is_said_to_go_out_at_the_next_poll() -> None:
    data = status.summary(_state(), T0 + 7200)
    rows = {item["target"]: item for item in data["open_incidents"]}
    assert rows[W2]["held"] is True and rows[W2]["held_by"] is None
    assert data["silences"] == [] and data["maintenance"] == []


def test_the_text_names_who_holds_what_until_when(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(status.time, "time", lambda: T0 + 60)
    out = io.StringIO()
    status.print_status(_state(), out, windows=WINDOWS)
    text = out.getvalue()
    assert (f"{W2} (missing) since 2026-10-02 14:00:00Z incident bbbb HELD, silenced by "
            "alice until 2026-10-02 15:00Z") in text
    assert f"{W1} (missing) since 2026-10-02 14:00:00Z incident aaaa\n" in text
    assert "active silences: 1\n" in text and "maintenance windows open: 1\n" in text
    assert "rack 12 (gpu:*:9100): 2026-10-02 13:00Z to 2026-10-02 18:00Z" in text


def test_the_health_file_counts_held_incidents_and_active_silences() -> None:
    text = health.render(_state())
    assert 'clusterwatch_watch_held_incidents{check="node"} 1.0' in text
    assert 'clusterwatch_watch_held_incidents{check="gpu"} 1.0' in text
    assert 'clusterwatch_watch_open_incidents{check="node"} 2.0' in text
    assert "clusterwatch_watch_active_silences 1.0" in text


def test_silence_list_says_active_ended_or_expired_and_drops_them_a_week_after() -> None:
    from clusterwatch.watch.silence_cli import listing

    made = [new_silence((parse_matcher(f"node:wn{i}*", MATCHER_KINDS),), T0, T0 + 3600,
                        "work", "bob", T0) for i in range(3)]
    silences = [made[0], made[1], made[2].expire(T0 + 60)]
    assert [row["state"] for row in listing(silences, T0 + 120)] == [
        "active", "active", "expired"]
    later = {row["id"]: row["state"] for row in listing(silences, T0 + 7200)}
    assert later == {made[0].id: "ended", made[1].id: "ended", made[2].id: "expired"}
    assert listing(silences, T0 + 3600 + 7 * 86400) == []


# --- a GPU file on an expected node, held by that node's silence or window ------------------
# A node seen well keeps no record (issue 23): status must learn the expected nodes from the
# inventory, as the poll does, not from the records.

def _gpu_only_state() -> WatchState:
    silence = new_silence((parse_matcher("node:worker2*", MATCHER_KINDS),), T0, T0 + 3600,
                          "kernel update", "alice", T0)
    return WatchState(records={
        GPU: TargetRecord(T0, incident=Incident("dddd", T0, "stale", held=True)),
    }, silences=[silence], last_poll={"t": T0 + 60})


def test_a_gpu_file_on_an_expected_node_is_shown_held_by_the_nodes_silence() -> None:
    watch_state = _gpu_only_state()
    held = status.summary(watch_state, T0 + 60, node_names=["worker2.example.org"])
    row = held["open_incidents"][0]
    assert row["held_by"] == f"silence {watch_state.silences[0].id}"
    assert row["held_until"] == T0 + 3600
    # Not on an expected node: a node matcher is not about it, as in the poll.
    assert status.summary(watch_state, T0 + 60)["open_incidents"][0]["held_by"] is None


def test_a_gpu_file_on_an_expected_node_is_shown_held_by_the_nodes_window() -> None:
    window = parse_windows([{"comment": "PDU swap", "matchers": ["node:worker2*"],
                             "start": "2026-10-02T13:00:00Z", "end": "2026-10-02T18:00:00Z"}],
                           MATCHER_KINDS)
    watch_state = WatchState(records=_gpu_only_state().records, last_poll={"t": T0 + 60})
    data = status.summary(watch_state, T0 + 60, window, node_names=["worker2.example.org"])
    row = data["open_incidents"][0]
    assert (row["held_by"], row["held_until"]) == ("maintenance window 'PDU swap'",
                                                   T0 + 4 * 3600)  # 18:00Z


def test_watch_status_shows_the_hold_the_poll_applied_to_a_gpu_file_on_a_well_node(
    pool: Pool, capsys: pytest.CaptureFixture[str],
) -> None:
    """The console command end to end: the node answers well (no record of it is kept), its
    GPU file is stale and held by the node's silence; status says so, as the poll did."""
    now = time.time()
    node, gpu = "worker2.example.org", "worker2.example.org:9100"
    pool.set_inventory(["worker1.example.org", node], [gpu])
    pool.set_machines(["worker1.example.org", node])
    pool.set_gpu_mtimes({gpu: now - 2000}, now)
    code, added, err = cli(capsys, *watch_args(pool, "silence", "add", "node:worker2*",
                                               "--for", "2h", "--comment", "kernel update",
                                               "--author", "alice"))
    assert code == 0, err
    ident = added.splitlines()[-1]
    code, out, err = cli(capsys, *watch_args(pool))
    assert code == 0 and out == "", err
    assert f"held back: ALERT gpu:{gpu} (stale)" in err
    assert f"node:{node}" not in state.load(pool.state_dir).records

    code, out, err = cli(capsys, *watch_args(pool, "status", "--json"))
    assert code == 0, err
    (row,) = json.loads(out)["open_incidents"]
    assert (row["target"], row["held"], row["held_by"]) == (f"gpu:{gpu}", True,
                                                            f"silence {ident}")
    code, out, err = cli(capsys, *watch_args(pool, "status"))
    assert code == 0 and "HELD, silenced by alice until " in out, out
    assert "its hold has ended" not in out


@pytest.mark.parametrize("breakage", ["missing", "a line with spaces", "not UTF-8",
                                      "a directory"])
def test_watch_status_with_an_unreadable_inventory_says_the_hold_is_not_known_and_exits_78(
    pool: Pool, capsys: pytest.CaptureFixture[str], breakage: str,
) -> None:
    """The poll fails with 78 until the inventory is fixed and holds the alert meanwhile:
    status must not say the hold ended and the alert goes out at the next poll."""
    now = time.time()
    node, gpu = "worker2.example.org", "worker2.example.org:9100"
    pool.set_inventory([node], [gpu])
    pool.set_machines([node])
    pool.set_gpu_mtimes({gpu: now - 2000}, now)
    assert cli(capsys, *watch_args(pool, "silence", "add", "node:worker2*", "--for", "2h",
                                   "--comment", "kernel update"))[0] == 0
    assert cli(capsys, *watch_args(pool))[0] == 0  # the alert, held
    inventory = pool.config_dir / "expected_nodes"
    inventory.unlink()
    if breakage == "a line with spaces":
        inventory.write_text(f"{node} extra\n")
    elif breakage == "not UTF-8":
        inventory.write_bytes(b"worker2\xff\n")
    elif breakage == "a directory":
        inventory.mkdir()

    code, out, err = cli(capsys, *watch_args(pool, "status"))
    assert code == 78 and len(err.splitlines()) == 1 and "expected_nodes" in err, err
    assert f"gpu:{gpu} (stale)" in out and "HELD, by what is not known" in out, out
    assert "its hold has ended" not in out
    code, out, _ = cli(capsys, *watch_args(pool, "status", "--json"))
    (row,) = json.loads(out)["open_incidents"]
    assert code == 78 and (row["held"], row["held_by"], row["hold_known"]) == (True, None, False)
    assert cli(capsys, *watch_args(pool))[0] == 78  # as the poll says


def test_a_node_incidents_hold_is_known_without_the_inventory() -> None:
    data = status.summary(_state(), T0 + 60, node_names=None)
    rows = {item["target"]: item for item in data["open_incidents"]}
    assert rows[W2]["hold_known"] is True and rows[W2]["held_by"] is not None
