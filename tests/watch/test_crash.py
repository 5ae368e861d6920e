"""A poll killed with SIGKILL at any point loses no transition and corrupts no state.

The poll runs in a child process that kills itself at the Nth call of one of the
operations that matter (file creation, fsync, rename, HTTP send and answer). The test walks
N from 1 until a poll completes, so every such point is hit once, then lets normal polls
carry on and checks what Slack received.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap

import pytest

from clusterwatch.loopback.http_recorder import SlackResponses
from clusterwatch.watch import state

from .support import T0, Pool

W1, W2 = "worker1.example.org", "worker2.example.org"
G1, G2 = "192.0.2.10:9100", "192.0.2.11:9100"

CHILD = textwrap.dedent(
    """
    import http.client, os, signal, sys, tempfile
    kill_at, now = int(sys.argv[1]), float(sys.argv[2])
    calls = [0]

    per_name = {}

    def killing(real):
        def wrapper(*args, **kwargs):
            calls[0] += 1
            per_name[real.__name__] = per_name.get(real.__name__, 0) + 1
            if calls[0] == kill_at:
                sys.stderr.write("killed at %s #%d\\n" % (real.__name__,
                                                          per_name[real.__name__]))
                sys.stderr.flush()
                os.kill(os.getpid(), signal.SIGKILL)
            return real(*args, **kwargs)
        return wrapper

    os.replace = killing(os.replace)
    os.fsync = killing(os.fsync)
    tempfile.mkstemp = killing(tempfile.mkstemp)
    http.client.HTTPConnection.request = killing(http.client.HTTPConnection.request)
    http.client.HTTPConnection.getresponse = killing(http.client.HTTPConnection.getresponse)

    from clusterwatch.watch.channels import build_channels
    from clusterwatch.watch.config import load_config
    from clusterwatch.watch.poll import run_poll

    from pathlib import Path
    config_dir, state_dir, prometheus_url, condor_status = sys.argv[3:7]
    config = load_config(Path(config_dir), Path(state_dir), prometheus_url, condor_status)
    run_poll(config, build_channels(config), clock=lambda: now)
    print("completed", calls[0])
    """
)


def poll_in_child(pool: Pool, now: float, kill_at: int) -> subprocess.CompletedProcess[str]:
    args = [sys.executable, "-c", CHILD, str(kill_at), repr(now), str(pool.config_dir),
            str(pool.state_dir), pool.prometheus.url, str(pool.condor_status)]
    return subprocess.run(args, capture_output=True, text=True, timeout=60, check=False)


def slack_lines(pool: Pool) -> list[str]:
    return [line for request in pool.slack.requests
            for line in request.json()["text"].splitlines()]


def prepare(pool: Pool) -> None:
    """14 minutes of worker2 missing; GPU G2 healthy until it goes stale at minute 15."""
    pool.set_machines([W1])
    for m in range(0, 15):
        now = T0 + m * 60
        pool.set_gpu_mtimes({G1: now - 10, G2: now - 10}, now)
        assert pool.poll(now).decisions == []


def check_state_is_whole(pool: Pool) -> None:
    json.loads((pool.state_dir / "state.json").read_bytes())
    assert not list(pool.state_dir.glob("state.json.corrupt-*"))


def test_it_loses_nothing_when_killed_at_any_point_of_an_alerting_poll(pool: Pool) -> None:
    points_seen = 0
    kill_at = 1
    while True:
        # A fresh pool history for each kill point.
        for path in pool.state_dir.glob("*"):
            path.unlink()
        pool.slack.clear()
        prepare(pool)
        now = T0 + 15 * 60
        pool.set_gpu_mtimes({G1: now - 10, G2: now - 1000}, now)  # G2 stale: second alert
        child = poll_in_child(pool, now, kill_at)
        if child.returncode == 0:
            points_seen = int(child.stdout.split()[-1])
            break
        assert child.returncode == -signal.SIGKILL, child.stderr
        check_state_is_whole(pool)
        # Normal polls go on; both transitions reach Slack, in order, with one incident each.
        for m in range(16, 19):
            later = T0 + m * 60
            pool.set_gpu_mtimes({G1: later - 10, G2: now - 1000}, later)
            pool.poll(later)
        check_state_is_whole(pool)
        lines = slack_lines(pool)
        alerts = [line for line in lines if " ALERT " in line]
        assert {line.split()[3] for line in alerts} == {f"node:{W2}", f"gpu:{G2}"}, (kill_at,
                                                                                       lines)
        for target in (f"node:{W2}", f"gpu:{G2}"):
            incidents = {line.rsplit(" ", 1)[1] for line in alerts if f" {target} " in line}
            assert len(incidents) == 1, (kill_at, lines)  # duplicates allowed, not 2 incidents
        saved = state.load(pool.state_dir)
        assert saved.outbox.pending("slack") == []
        assert {t for t, r in saved.records.items() if r.incident} == {f"node:{W2}", f"gpu:{G2}"}
        assert not list(pool.state_dir.glob(".state.json.*.tmp"))  # no temp files left behind
        kill_at += 1
    # The walk really covered the saves and the send: mkstemp, fsync x2 per save, rename,
    # the HTTP request and its answer.
    assert kill_at > 8 and points_seen >= kill_at - 1


def test_it_redelivers_when_killed_after_slack_accepted_but_before_the_ack_was_saved(
    pool: Pool,
) -> None:
    """At-least-once: a message Slack took may come again, but never goes missing."""
    prepare(pool)
    now = T0 + 15 * 60
    pool.set_gpu_mtimes({G1: now - 10, G2: now - 10}, now)
    # Walk the kill points up to the one waiting for Slack's answer to the first post
    # (the first HTTP exchange of a poll is the Prometheus query).
    kill_at = 1
    while True:
        child = poll_in_child(pool, now, kill_at)
        assert child.returncode != 0, "the poll completed before the kill point was found"
        if "killed at getresponse #2" in child.stderr:
            break
        kill_at += 1
    pool.slack.wait_for(timeout=10)  # the request went out before the kill
    assert len(pool.slack.requests) == 1
    saved = state.load(pool.state_dir)
    assert [e.target for e in saved.outbox.pending("slack")] == [f"node:{W2}"]
    pool.poll(T0 + 16 * 60)
    lines = slack_lines(pool)
    assert len(lines) == 2 and lines[0] == lines[1]  # the same line, incident id included


def test_it_keeps_the_batch_when_the_process_dies_while_slack_is_slow(pool: Pool) -> None:
    """kill -9 from outside while the send is in flight, after the state was saved."""
    prepare(pool)
    pool.slack.set_default(SlackResponses.timeout())  # held until the test ends
    now = T0 + 15 * 60
    pool.set_gpu_mtimes({G1: now - 10, G2: now - 10}, now)
    args = [sys.executable, "-c", CHILD, "0", repr(now), str(pool.config_dir),
            str(pool.state_dir), pool.prometheus.url, str(pool.condor_status)]
    child = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        pool.slack.wait_held(timeout=30)  # the send is in flight
        child.send_signal(signal.SIGKILL)
    finally:
        child.wait(timeout=30)
    saved = state.load(pool.state_dir)
    assert [e.line() for e in saved.outbox.pending("slack")] == [
        f"2026-10-02 14:15:00Z ALERT node:{W2} (missing) incident "
        f"{saved.records[f'node:{W2}'].incident.id}"  # type: ignore[union-attr]
    ]
    pool.slack.set_default(SlackResponses.ok())
    pool.poll(T0 + 16 * 60)
    assert state.load(pool.state_dir).outbox.pending("slack") == []


def test_it_fails_cleanly_when_the_state_dir_cannot_be_created(pool: Pool) -> None:
    pool.state_dir.write_text("a file where the directory should be")
    pool.all_healthy(T0)
    with pytest.raises(state.StateError, match="cannot create state directory"):
        pool.poll(T0)
