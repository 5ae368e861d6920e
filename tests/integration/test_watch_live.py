"""The watch against real Prometheus, node_exporter and Alertmanager on loopback.

The GPU file is written by the project's own writer (fake nvidia-smi at the process
boundary); the alert goes to a real Alertmanager, which forwards it, and later its
resolution, to a loopback webhook receiver.
"""

from __future__ import annotations

import json
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from clusterwatch.loopback.http_recorder import HttpRecorder, fake_slack
from clusterwatch.loopback.live_pool import LiveGpuWorker, live_gpu_worker
from clusterwatch.loopback.services import alertmanager, free_port
from clusterwatch.notify.incident import Action
from clusterwatch.watch import state
from clusterwatch.watch.channels import build_channels
from clusterwatch.watch.config import load_config
from clusterwatch.watch.poll import PollResult, run_poll
from clusterwatch.watch.prometheus import decode_vector, gpu_file_query, parse_vector
from clusterwatch.watch.vector_scan import scan_vector

pytestmark = pytest.mark.integration


@pytest.fixture
def worker(tmp_path: Path, need_binary: Callable[[str], str]) -> Iterator[LiveGpuWorker]:
    need_binary("prometheus")
    need_binary("prometheus-node-exporter")
    with live_gpu_worker(tmp_path / "live") as live:
        yield live


def make_config_dir(root: Path, instances: list[str], toml: str) -> Path:
    config_dir = root / "config"
    config_dir.mkdir(parents=True)
    (config_dir / "expected_nodes").write_text("")  # node check off: no HTCondor here
    (config_dir / "gpu_instances").write_text("".join(f"{i}\n" for i in instances))
    (config_dir / "watch.toml").write_text(toml)
    return config_dir


def poll(config_dir: Path, state_dir: Path, prometheus_url: str) -> PollResult:
    config = load_config(config_dir, state_dir, prometheus_url)
    return run_poll(config, build_channels(config))


def raw_answer(prometheus_url: str, promql: str) -> bytes:
    """The body Prometheus answers to the instant query, as the watch posts it."""
    data = urllib.parse.urlencode({"query": promql, "time": f"{time.time():.3f}"}).encode()
    with urllib.request.urlopen(prometheus_url + "/api/v1/query", data, timeout=10) as answer:
        return answer.read()  # type: ignore[no-any-return]


def test_it_sees_a_fresh_file_then_alerts_at_once_on_a_20_minute_old_one(
    tmp_path: Path, worker: LiveGpuWorker
) -> None:
    closed = f"127.0.0.1:{free_port()}"  # listed but never scraped: missing
    config_dir = make_config_dir(tmp_path, [worker.instance, closed], "")
    mtime = worker.write_gpu_file()
    worker.wait_until_scraped(mtime)

    result = poll(config_dir, tmp_path / "state", worker.prometheus.url)
    assert result.gpu_error is None and result.decisions == []
    records = state.load(tmp_path / "state").records
    assert f"gpu:{worker.instance}" not in records  # fresh: nothing to remember
    assert records[f"gpu:{closed}"].absent_since is not None  # missing: window started

    # Real Prometheus' answer has the compact shape the scan reads (no decoding), and the
    # scan gives what decoding it would.
    body = raw_answer(worker.prometheus.url, gpu_file_query(load_config(
        config_dir, tmp_path / "state", worker.prometheus.url).prometheus_job))
    rows = scan_vector(body)
    assert rows is not None and [instance for instance, _ in rows] == [worker.instance]
    assert parse_vector(body) == decode_vector(body)

    old = worker.age_gpu_file(20 * 60)
    worker.wait_until_scraped(old)
    result = poll(config_dir, tmp_path / "fresh-state", worker.prometheus.url)
    assert [(d.target, d.action.value, d.status.value) for d in result.decisions] == [
        (f"gpu:{worker.instance}", "alert", "stale")]


def test_it_alerts_through_slack_and_alertmanager_and_resolves_both(
    tmp_path: Path, worker: LiveGpuWorker, need_binary: Callable[[str], str]
) -> None:
    need_binary("prometheus-alertmanager")
    with HttpRecorder() as receiver, fake_slack() as slack, alertmanager(
        tmp_path / "am", receiver.url + "/alerts"
    ) as am:
        secret = tmp_path / "config-secret"
        config_dir = make_config_dir(tmp_path, [worker.instance], (
            "[thresholds]\nrecover_s = 3\n\n"
            '[[channels]]\ntype = "slack"\nwebhook_file = "slack_webhook"\n\n'
            f'[[channels]]\ntype = "alertmanager"\nurl = "{am.url}"\n'
            '[channels.labels]\nteam = "pool-ops"\n'
        ))
        secret = config_dir / "slack_webhook"
        secret.write_text(slack.url + "/services/T0/B0/SECRET\n")
        secret.chmod(0o600)
        state_dir = tmp_path / "state"

        worker.write_gpu_file()
        old = worker.age_gpu_file(20 * 60)
        worker.wait_until_scraped(old)
        result = poll(config_dir, state_dir, worker.prometheus.url)
        assert [d.action.value for d in result.decisions] == ["alert"]
        assert "ALERT gpu:" in slack.requests[0].json()["text"]

        firing = receiver.wait_for(lambda r: r.json()["status"] == "firing", timeout=30)[0]
        alert = firing.json()["alerts"][0]
        assert alert["labels"] == {"alertname": "ClusterwatchTargetDown", "check": "gpu",
                                   "target": worker.instance, "team": "pool-ops"}
        assert alert["annotations"]["status"] == "stale"
        assert active_alerts(am.url) == [worker.instance]

        # The writer resumes: a fresh write starts the recovery window, a later one ends it.
        deadline = time.monotonic() + 60
        recovered = []
        while not recovered and time.monotonic() < deadline:
            mtime = worker.write_gpu_file()
            worker.wait_until_scraped(mtime)
            recovered = [d for d in poll(config_dir, state_dir, worker.prometheus.url).decisions
                         if d.action is Action.RECOVER]
            time.sleep(1.1)  # node_exporter's mtime has whole seconds: let it advance
        assert [(d.status.value, d.incident) for d in recovered] == [("fresh", alert["annotations"][
            "incident"])]
        assert "RECOVER gpu:" in slack.requests[-1].json()["text"]

        resolved = receiver.wait_for(lambda r: r.json()["status"] == "resolved", timeout=30)[0]
        assert resolved.json()["alerts"][0]["labels"]["target"] == worker.instance
        assert active_alerts(am.url) == []
        assert state.load(state_dir).outbox.pending("alertmanager") == []


def test_it_restates_open_alerts_to_a_restarted_alertmanager(
    tmp_path: Path, worker: LiveGpuWorker, need_binary: Callable[[str], str]
) -> None:
    need_binary("prometheus-alertmanager")
    worker.write_gpu_file()
    old = worker.age_gpu_file(20 * 60)
    worker.wait_until_scraped(old)
    state_dir = tmp_path / "state"
    with HttpRecorder() as receiver:
        with alertmanager(tmp_path / "am1", receiver.url) as first:
            config_dir = make_config_dir(tmp_path, [worker.instance], (
                f'[[channels]]\ntype = "alertmanager"\nurl = "{first.url}"\n'))
            poll(config_dir, state_dir, worker.prometheus.url)
            assert active_alerts(first.url) == [worker.instance]
        # A new Alertmanager knows nothing; the next poll tells it again.
        with alertmanager(tmp_path / "am2", receiver.url) as second:
            (config_dir / "watch.toml").write_text(
                f'[[channels]]\ntype = "alertmanager"\nurl = "{second.url}"\n')
            assert active_alerts(second.url) == []
            assert poll(config_dir, state_dir, worker.prometheus.url).decisions == []
            assert active_alerts(second.url) == [worker.instance]


def active_alerts(am_url: str) -> list[str]:
    with urllib.request.urlopen(f"{am_url}/api/v2/alerts?active=true", timeout=5) as answer:
        alerts = json.loads(answer.read())
    return sorted(a["labels"]["target"] for a in alerts if a["status"]["state"] == "active")
