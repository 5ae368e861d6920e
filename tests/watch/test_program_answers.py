"""Hostile answers from Prometheus and the channels, met by the installed program.

Whatever Prometheus answers, the GPU check is `unknown` for that poll and nothing else: the
poll still evaluates the nodes, saves, and delivers. Whatever pace a server keeps, each
request ends by its configured timeout.
"""

from __future__ import annotations

import json
import time

import pytest

from clusterwatch.loopback.dripping_server import DrippingServer
from clusterwatch.loopback.fake_prometheus import vector_response
from clusterwatch.loopback.http_recorder import SLACK_WEBHOOK_PATH, SlackResponses

from .program import run_watch
from .support import Pool

W1, W2 = "worker1.example.org", "worker2.example.org"
G1, G2 = "192.0.2.10:9100", "192.0.2.11:9100"
DEPTH = 100_000
MARGIN_S = 3.0  # process start, the fake condor_status, saving: far below a drip's length

NESTED_ANSWERS = {
    "arrays": b"[" * DEPTH + b"]" * DEPTH,
    "objects in data": (b'{"status":"success","data":' + b'{"a":' * DEPTH + b"1"
                        + b"}" * DEPTH + b"}"),
    "arrays in a value": (b'{"status":"success","data":{"resultType":"vector","result":'
                          b'[{"metric":{"instance":"' + G1.encode() + b'"},"value":'
                          + b"[" * DEPTH + b"]" * DEPTH + b"}]}}"),
}


def stale_g1(pool: Pool, now: float) -> None:
    pool.set_machines([W1, W2])
    pool.set_gpu_mtimes({G1: now - 2000, G2: now - 20}, now)


def status_json(pool: Pool) -> dict:  # type: ignore[type-arg]
    done = run_watch(pool, "status", "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


@pytest.mark.parametrize("answer", list(NESTED_ANSWERS.values()), ids=list(NESTED_ANSWERS))
def test_it_polls_on_when_prometheus_answers_deeply_nested_json(pool: Pool,
                                                               answer: bytes) -> None:
    stale_g1(pool, time.time())
    pool.slack.enqueue(SlackResponses.server_error())
    first = run_watch(pool)
    assert first.returncode == 0 and f"ALERT gpu:{G1} (stale)" in first.stdout
    assert status_json(pool)["channels"]["slack"]["pending"], "the alert should wait in the queue"

    pool.set_machines([W1])  # worker2 leaves the pool during the bad answer
    pool.prometheus.set_response(answer)
    second = run_watch(pool)

    assert second.returncode == 1, second.stderr
    assert "Traceback" not in second.stderr
    assert "Prometheus:" in second.stderr and "unknown for every target" in second.stderr
    delivered = [r.json()["text"] for r in pool.slack.requests[1:]]
    assert any(f"ALERT gpu:{G1} (stale)" in text for text in delivered), delivered
    summary = status_json(pool)
    assert summary["last_poll"]["gpu_error"] and summary["last_poll"]["node_error"] is None
    assert summary["channels"]["slack"]["pending"] == []
    assert [i["target"] for i in summary["open_incidents"]] == [f"gpu:{G1}"]
    health = (pool.state_dir / "clusterwatch_watch.prom").read_text()
    assert 'clusterwatch_watch_source_up{source="prometheus"} 0.0' in health
    assert 'clusterwatch_watch_source_up{source="condor_status"} 1.0' in health


def test_it_ends_a_poll_against_a_dripping_prometheus_by_its_timeout(pool: Pool) -> None:
    timeout = 2.0
    pool.write_toml(f"[prometheus]\ntimeout_s = {timeout}\n")
    now = time.time()
    pool.set_machines([W1, W2])
    answer = vector_response([({"instance": G1}, now, repr(now - 10))])
    with DrippingServer(body=answer, headers={"Content-Type": "application/json"},
                        interval=1.0) as prometheus:
        done = run_watch(pool, prometheus_url=prometheus.url, limit=timeout + 30)
        assert prometheus.requests == 1
    assert done.elapsed < timeout + MARGIN_S, f"the poll took {done.elapsed:.1f} s"
    assert done.returncode == 1 and "request failed (timeout)" in done.stderr


def test_it_ends_each_delivery_to_a_dripping_channel_by_its_timeout(pool: Pool) -> None:
    timeout = 1.0
    stale_g1(pool, time.time())
    with DrippingServer(body=b"ok", interval=1.0) as server:
        hook = pool.config_dir / "hook_url"
        hook.write_text(server.url + "/hook\n")
        hook.chmod(0o600)
        (pool.config_dir / "slack_webhook").write_text(server.url + SLACK_WEBHOOK_PATH + "\n")
        pool.write_toml("".join(
            f'[[channels]]\ntype = "{kind}"\n{setting}\ntimeout_s = {timeout}\n'
            for kind, setting in (("slack", 'webhook_file = "slack_webhook"'),
                                  ("webhook", 'url_file = "hook_url"'),
                                  ("alertmanager", f'url = "{server.url}"'))))
        done = run_watch(pool, limit=3 * timeout + 30)
        assert server.requests == 3
    assert done.elapsed < 3 * timeout + MARGIN_S, f"the poll took {done.elapsed:.1f} s"
    assert done.returncode == 0 and f"ALERT gpu:{G1} (stale)" in done.stdout
    for name, channel in status_json(pool)["channels"].items():
        assert channel["last_error"] == "timeout", name
        assert [e["target"] for e in channel["pending"]] == [f"gpu:{G1}"], name
