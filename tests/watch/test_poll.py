"""One poll end to end on loopback: observation handling rows, state, delivery, health."""

from __future__ import annotations

import json
import logging
import os
import stat

import pytest

from clusterwatch.loopback.fake_condor import recorded_argv, write_fake_condor_status
from clusterwatch.loopback.fake_prometheus import error_response, vector_response
from clusterwatch.loopback.http_recorder import ScriptedResponse, SlackResponses
from clusterwatch.watch import state
from clusterwatch.watch.prometheus import gpu_file_query

from .support import T0, Pool

W1, W2 = "worker1.example.org", "worker2.example.org"
G1, G2 = "192.0.2.10:9100", "192.0.2.11:9100"


def minutes(pool: Pool, start: int, stop: int, setup=None) -> list:  # type: ignore[no-untyped-def]
    """Poll once a minute from `start` to `stop` (exclusive); return all decisions."""
    decisions = []
    for m in range(start, stop):
        now = T0 + m * 60
        if setup is not None:
            setup(now)
        decisions += [(m, d.action.value, d.target, d.status.value)
                      for d in pool.poll(now).decisions]
    return decisions


# --- execute nodes: condor_status ---------------------------------------------------------

def test_it_queries_condor_status_for_machine_names(pool: Pool) -> None:
    pool.all_healthy(T0)
    result = pool.poll(T0)
    assert result.node_error is None and result.decisions == []
    assert recorded_argv(pool.bin_dir) == [["-af", "Machine", "LastHeardFrom"]]


def test_it_alerts_on_a_node_missing_from_a_successful_query_for_15_minutes(pool: Pool) -> None:
    def setup(now: float) -> None:
        pool.all_healthy(now)
        pool.set_machines([W1])  # one slot line left for worker1, none for worker2
    assert minutes(pool, 0, 17, setup) == [(15, "alert", f"node:{W2}", "missing")]
    text = pool.slack.requests[0].json()["text"]
    assert text == (f"2026-10-02 14:15:00Z ALERT node:{W2} (missing) incident "
                    f"{text.rsplit(' ', 1)[1]}")


def test_it_counts_one_remaining_slot_ad_as_present(pool: Pool) -> None:
    def setup(now: float) -> None:
        pool.all_healthy(now)
        pool.set_machines([W1, "  " + W2 + "  ", ""])
    assert minutes(pool, 0, 20, setup) == []


def test_it_takes_an_empty_answer_of_a_successful_query_as_every_node_missing(pool: Pool) -> None:
    def setup(now: float) -> None:
        pool.all_healthy(now)
        pool.set_machines([])
    decided = minutes(pool, 0, 16, setup)
    assert sorted(d[2] for d in decided) == [f"node:{W1}", f"node:{W2}"]


@pytest.mark.parametrize("failure", ["exit", "timeout", "absent"])
def test_it_makes_every_node_unknown_when_condor_status_fails(pool: Pool, failure: str) -> None:
    if failure == "exit":
        program = str(write_fake_condor_status(pool.root / "fail", pool.machines_file, 1))
    elif failure == "timeout":
        pool.write_toml("[condor]\ntimeout_s = 0.2\n")
        program = str(write_fake_condor_status(pool.root / "slow", pool.machines_file, 0, 5))
    else:
        program = str(pool.root / "no-such-condor_status")
    config = pool.config(condor_status=program)
    for m in range(0, 20):
        now = T0 + m * 60
        pool.set_gpu_mtimes({G1: now - 20, G2: now - 2000}, now)  # GPU check goes on
        result = pool.poll(now, config)
        assert result.node_error is not None
        # The GPU check keeps its own result: G2 is stale at the first poll.
        expected = [("alert", f"gpu:{G2}")] if m == 0 else []
        assert [(d.action.value, d.target) for d in result.decisions] == expected


def test_it_restarts_the_node_window_after_a_failed_query(pool: Pool) -> None:
    failing = pool.config(condor_status=str(
        write_fake_condor_status(pool.root / "fail", pool.machines_file, 1)))
    pool.set_machines([W1])
    pool.set_gpu_mtimes({G1: T0, G2: T0}, T0)
    decided = []
    for m in range(0, 30):
        config = failing if m == 10 else pool.config()
        decided += [(m, d.target) for d in pool.poll(T0 + m * 60, config).decisions
                    if d.target.startswith("node:")]
    assert decided == [(26, f"node:{W2}")]


# --- GPU files: Prometheus ----------------------------------------------------------------

def test_it_sends_the_spec_query_at_the_poll_time(pool: Pool) -> None:
    pool.all_healthy(T0)
    pool.poll(T0 + 0.25)
    query = pool.prometheus.last_query
    assert query is not None
    assert query["query"] == gpu_file_query("node")
    assert float(query["time"]) == T0 + 0.25
    assert 'file=~"(.*/)?gpu_vram[.]prom"' in query["query"]
    assert 'and on (job, instance) (up{job="node"} == 1)' in query["query"]


def test_it_uses_the_job_label_from_the_config(pool: Pool) -> None:
    pool.write_toml('[prometheus]\njob = "gpu-nodes"\n')
    pool.all_healthy(T0)
    pool.poll(T0)
    assert 'job="gpu-nodes"' in pool.prometheus.last_query["query"]  # type: ignore[index]


def test_it_uses_the_sample_value_not_the_query_time_as_the_mtime(pool: Pool) -> None:
    pool.set_machines([W1, W2])
    # The pair's first element is the query time (now); the value is 20 minutes old.
    pool.set_gpu_mtimes({G1: T0 - 1200, G2: T0 - 10}, T0)
    decisions = pool.poll(T0).decisions
    assert [(d.target, d.status.value) for d in decisions] == [(f"gpu:{G1}", "stale")]


def test_it_alerts_on_a_gpu_row_missing_from_a_successful_vector(pool: Pool) -> None:
    def setup(now: float) -> None:
        pool.set_machines([W1, W2])
        pool.set_gpu_mtimes({G1: now - 20}, now)
    assert minutes(pool, 0, 16, setup) == [(15, "alert", f"gpu:{G2}", "missing")]


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param((400, error_response("parse error")), id="non-success status"),
        pytest.param((200, error_response("boom")), id="status error with 200"),
        pytest.param((503, b"Service Unavailable"), id="not json"),
        pytest.param((200, vector_response([], warnings=["partial answer"])), id="warning"),
        pytest.param((200, json.dumps({"status": "success", "data": {
            "resultType": "matrix", "result": []}}).encode()), id="not a vector"),
        pytest.param((200, vector_response([({"job": "node"}, T0, "1")])), id="no instance"),
        pytest.param((200, vector_response([({"instance": ""}, T0, "1")])), id="empty instance"),
    ],
)
def test_it_makes_every_gpu_unknown_when_the_answer_is_unusable(pool: Pool, answer) -> None:  # type: ignore[no-untyped-def]
    status, body = answer
    pool.prometheus.set_response(body, status)
    pool.set_machines([W1, W2])
    for m in range(0, 20):
        result = pool.poll(T0 + m * 60)
        assert result.gpu_error is not None and result.node_error is None
        assert result.decisions == []
    # No absence window was kept for the GPU workers (a quiet record is not kept at all).
    assert sorted(state.load(pool.state_dir).records) == []


def test_it_makes_every_gpu_unknown_when_prometheus_is_unreachable(pool: Pool) -> None:
    pool.set_machines([W1, W2])
    config = state_config = pool.config()
    config = type(state_config)(**{**state_config.__dict__, "prometheus_url":
                                   "http://127.0.0.1:1", "prometheus_timeout_s": 1.0})
    result = pool.poll(T0, config)
    assert result.gpu_error == "request failed (connection)"


def test_it_makes_every_gpu_unknown_when_prometheus_times_out(pool: Pool) -> None:
    pool.write_toml("[prometheus]\ntimeout_s = 0.3\n")
    pool.prometheus.set_response(vector_response([]), hold=True)  # only the client's clock
    pool.set_machines([W1, W2])
    result = pool.poll(T0)
    assert result.gpu_error == "request failed (timeout)"


@pytest.mark.parametrize(
    "bad_rows",
    [
        pytest.param([({"instance": G2}, T0, "100"), ({"instance": G2}, T0, "200")], id="dup"),
        pytest.param([({"instance": G2}, T0, "NaN")], id="nan"),
        pytest.param([({"instance": G2}, T0, "+Inf")], id="inf"),
        pytest.param([({"instance": G2}, T0, "abc")], id="text"),
        pytest.param([({"instance": G2}, T0, "0")], id="zero"),
        pytest.param([({"instance": G2}, T0, "-5")], id="negative"),
        pytest.param([({"instance": G2}, T0, repr(T0 + 3600))], id="future"),
    ],
)
def test_it_makes_only_the_bad_worker_unknown(pool: Pool, bad_rows, caplog) -> None:  # type: ignore[no-untyped-def]
    pool.set_machines([W1, W2])
    decided = []
    with caplog.at_level(logging.WARNING):
        for m in range(0, 20):
            now = T0 + m * 60
            good = [({"instance": G1}, now, repr(now - 1000))]  # stale: alerts at once
            rows = [(labels, now, value) for labels, _, value in bad_rows]
            pool.prometheus.set_response(vector_response(good + rows))
            result = pool.poll(now)
            assert result.gpu_error is None
            decided += [(m, d.target, d.status.value) for d in result.decisions]
    assert decided == [(0, f"gpu:{G1}", "stale")]  # G2 unknown throughout: never alerts
    assert f"gpu:{G2}: unknown this poll" in caplog.text


def test_it_ignores_rows_for_instances_not_in_the_inventory(pool: Pool) -> None:
    pool.set_machines([W1, W2])
    pool.set_gpu_mtimes({G1: T0 - 10, G2: T0 - 10, "198.51.100.1:9100": T0 - 5000}, T0)
    assert pool.poll(T0).decisions == []


# --- inventories and state -----------------------------------------------------------------

def test_it_forgets_a_retired_target_but_keeps_its_queued_messages(pool: Pool) -> None:
    pool.slack.set_default(SlackResponses.server_error())
    pool.set_machines([W1])
    for m in range(0, 16):
        pool.set_gpu_mtimes({G1: T0 + m * 60, G2: T0 + m * 60}, T0 + m * 60)
        pool.poll(T0 + m * 60)
    pool.set_inventory([W1], [G1, G2])  # the operator retires worker2
    pool.set_gpu_mtimes({G1: T0 + 960, G2: T0 + 960}, T0 + 960)
    pool.poll(T0 + 16 * 60)
    saved = state.load(pool.state_dir)
    assert f"node:{W2}" not in saved.records
    queued = saved.outbox.pending("slack")
    assert [(e.target, e.t) for e in queued] == [(f"node:{W2}", T0 + 900)]
    pool.slack.set_default(SlackResponses.ok())
    pool.poll(T0 + 17 * 60)
    assert "2026-10-02 14:15:00Z ALERT node:worker2" in pool.slack.requests[-1].json()["text"]


def test_it_saves_the_state_with_private_modes(pool: Pool) -> None:
    pool.all_healthy(T0)
    pool.poll(T0)
    assert stat.S_IMODE(os.stat(pool.state_dir).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(pool.state_dir / "state.json").st_mode) == 0o600


def test_it_saves_transitions_before_trying_any_channel(pool: Pool) -> None:
    seen = {}

    def on_request(now: float) -> None:
        seen["state"] = json.loads((pool.state_dir / "state.json").read_bytes())

    pool.slack.set_default(ScriptedResponse(200, b"ok"))
    pool.set_machines([W1, W2])
    pool.set_gpu_mtimes({G1: T0 - 2000, G2: T0}, T0)
    original = pool.slack.respond

    def recording_respond(request):  # type: ignore[no-untyped-def]
        on_request(T0)
        return original(request)

    pool.slack.respond = recording_respond  # type: ignore[method-assign]
    pool.poll(T0)
    events = seen["state"]["outbox"]["events"]
    assert [e["target"] for e in events] == [f"gpu:{G1}"]
    assert seen["state"]["targets"][f"gpu:{G1}"][4:6] == [events[0]["incident"], T0]
    # After the acknowledgement the event is gone from the queue.
    assert state.load(pool.state_dir).outbox.events == []


def test_it_keeps_messages_queued_while_slack_fails_and_sends_them_in_order(pool: Pool) -> None:
    pool.slack.set_default(SlackResponses.server_error())

    def setup(now: float) -> None:
        pool.set_machines([W1] if now < T0 + 20 * 60 else [W1, W2])
        pool.set_gpu_mtimes({G1: now, G2: now}, now)
    minutes(pool, 0, 31, setup)  # alert at 15, recovery at 30, Slack down throughout
    pending = state.load(pool.state_dir).outbox.pending("slack")
    assert [(e.action.value, e.t) for e in pending] == [("alert", T0 + 900), ("recover", T0 + 1800)]
    pool.slack.set_default(SlackResponses.ok())
    pool.poll(T0 + 31 * 60)
    lines = pool.slack.requests[-1].json()["text"].splitlines()
    assert [line.split()[2] for line in lines] == ["ALERT", "RECOVER"]
    assert lines[0].startswith("2026-10-02 14:15:00Z") and lines[1].startswith("2026-10-02 14:30")


def test_it_writes_its_own_health_textfile(pool: Pool) -> None:
    target = pool.root / "textfiles" / "clusterwatch_watch.prom"
    target.parent.mkdir()
    pool.write_toml(f'[health]\ntextfile = "{target}"\n')
    pool.slack.set_default(SlackResponses.no_service())
    pool.set_machines([W1, W2])
    pool.set_gpu_mtimes({G1: T0 - 2000, G2: T0}, T0)
    pool.poll(T0)
    text = target.read_text()
    assert text == (pool.state_dir / "clusterwatch_watch.prom").read_text()
    assert f"clusterwatch_watch_last_poll_timestamp_seconds {T0!r}" in text
    assert 'clusterwatch_watch_open_incidents{check="gpu"} 1.0' in text
    assert 'clusterwatch_watch_dead_letter_messages{channel="slack"} 1.0' in text
    assert 'clusterwatch_watch_pending_messages{channel="slack"} 0.0' in text
    error_sample = ('clusterwatch_watch_last_delivery_error_timestamp_seconds'
                    '{channel="slack",kind="http_404_no_service"}')
    assert f"{error_sample} {T0!r}" in text
    assert 'clusterwatch_watch_source_up{source="prometheus"} 1.0' in text


def test_it_waits_for_an_overlapping_run_and_gives_up_after_the_lock_timeout(pool: Pool) -> None:
    with state.locked(pool.state_dir):  # noqa: SIM117 - nesting shows which lock waits
        with pytest.raises(state.StateError, match="holds"):
            with state.locked(pool.state_dir, timeout=0.3):
                pass


def test_it_moves_a_corrupt_state_file_aside_and_keeps_watching(pool: Pool, caplog) -> None:  # type: ignore[no-untyped-def]
    pool.state_dir.mkdir(mode=0o700)
    (pool.state_dir / "state.json").write_text('{"version": 1, "targets": ')
    pool.all_healthy(T0)
    with caplog.at_level(logging.ERROR):
        pool.poll(T0)
    assert list(pool.state_dir.glob("state.json.corrupt-*"))
    assert "was damaged (not valid JSON" in caplog.text
    assert state.load(pool.state_dir).last_poll["t"] == T0


def test_it_sends_open_incidents_to_a_channel_added_later(pool: Pool, caplog) -> None:  # type: ignore[no-untyped-def]
    (pool.config_dir / "slack_webhook").unlink()
    pool.set_machines([W1])
    with caplog.at_level(logging.WARNING):
        for m in range(0, 16):
            pool.set_gpu_mtimes({G1: T0 + m * 60, G2: T0 + m * 60}, T0 + m * 60)
            pool.poll(T0 + m * 60)
    assert "no channel is configured" in caplog.text
    assert state.load(pool.state_dir).outbox.events == []
    secret = pool.config_dir / "slack_webhook"
    secret.write_text(pool.webhook + "\n")
    secret.chmod(0o600)
    pool.set_gpu_mtimes({G1: T0 + 960, G2: T0 + 960}, T0 + 960)
    pool.poll(T0 + 16 * 60)
    [request] = pool.slack.requests
    assert request.json()["text"].startswith(f"2026-10-02 14:15:00Z ALERT node:{W2} (missing)")


def test_it_tightens_an_existing_state_dir_and_keeps_its_health_copy_private(
    pool: Pool,
) -> None:
    pool.state_dir.mkdir(mode=0o755)
    os.chmod(pool.state_dir, 0o755)  # noqa: S103 - the loose mode under test
    target = pool.root / "textfiles" / "clusterwatch_watch.prom"
    target.parent.mkdir()
    pool.write_toml(f'[health]\ntextfile = "{target}"\n')
    pool.all_healthy(T0)
    pool.poll(T0)
    assert stat.S_IMODE(os.stat(pool.state_dir).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(pool.state_dir / "clusterwatch_watch.prom").st_mode) == 0o600
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o644


def test_it_reports_the_last_poll_with_every_source_answering(pool: Pool) -> None:
    pool.all_healthy(T0)
    pool.poll(T0)
    pool.prometheus.set_response(b"not json")
    pool.poll(T0 + 60)
    text = (pool.state_dir / "clusterwatch_watch.prom").read_text()
    assert f"clusterwatch_watch_last_poll_timestamp_seconds {T0 + 60!r}" in text
    assert f"clusterwatch_watch_last_successful_poll_timestamp_seconds {T0!r}" in text
    assert 'clusterwatch_watch_source_up{source="prometheus"} 0.0' in text


@pytest.mark.parametrize("source", ["query_machines", "query_gpu_files"])
def test_it_saves_and_delivers_when_a_source_fails_in_an_unforeseen_way(
    pool: Pool, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, source: str
) -> None:
    from clusterwatch.watch import poll

    pool.set_machines([W1, W2])
    pool.set_gpu_mtimes({G1: T0 - 2000, G2: T0 - 20}, T0)
    pool.slack.enqueue(SlackResponses.server_error())
    pool.poll(T0)  # G1's alert waits in the queue

    def broken(*args: object) -> None:
        raise RuntimeError("a bug nobody foresaw")

    monkeypatch.setattr(poll, source, broken)
    with caplog.at_level(logging.ERROR):
        result = pool.poll(T0 + 60)
    failed, other = ((result.node_error, result.gpu_error) if source == "query_machines"
                     else (result.gpu_error, result.node_error))
    assert failed == "internal error (RuntimeError)" and other is None
    assert "RuntimeError" in caplog.text
    assert state.load(pool.state_dir).last_poll["t"] == T0 + 60
    assert any(f"ALERT gpu:{G1} (stale)" in r.json()["text"] for r in pool.slack.requests[1:])
