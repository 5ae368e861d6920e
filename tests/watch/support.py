"""The watch tests' small pool on loopback and their shared helpers, imported by the tests.

A fake condor_status, a fake Prometheus and a fake Slack from clusterwatch.loopback, with real
config and state files; conftest.py only turns them into fixtures (a conftest is pytest's,
never imported as a module).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Optional

import pytest

from clusterwatch.cli import main
from clusterwatch.loopback.fake_condor import write_fake_condor_status
from clusterwatch.loopback.fake_prometheus import FakePrometheus, vector_response
from clusterwatch.loopback.http_recorder import SLACK_WEBHOOK_PATH, HttpRecorder
from clusterwatch.watch.channels import build_channels
from clusterwatch.watch.config import WatchConfig, load_config
from clusterwatch.watch.poll import PollResult, run_poll

T0 = 1_790_949_600.0  # 2026-10-02 14:00:00Z
TOKEN = "cwTESTsecretTOKEN4242"  # recognisable part of a webhook URL: must never be shown


class Pool:
    def __init__(self, root: Path, prometheus: FakePrometheus, slack: HttpRecorder) -> None:
        self.root = root
        self.prometheus = prometheus
        self.slack = slack
        self.config_dir = root / "config"
        self.state_dir = root / "state"
        self.bin_dir = root / "bin"
        self.config_dir.mkdir()
        self.machines_file = root / "machines.txt"
        self.machines_file.write_text("")
        self.condor_status = write_fake_condor_status(self.bin_dir, self.machines_file)
        self.set_inventory(["worker1.example.org", "worker2.example.org"],
                           ["192.0.2.10:9100", "192.0.2.11:9100"])
        self.webhook = self.slack.url + SLACK_WEBHOOK_PATH
        secret = self.config_dir / "slack_webhook"
        secret.write_text(self.webhook + "\n")
        secret.chmod(0o600)

    def set_inventory(self, nodes: Sequence[str], gpus: Sequence[str]) -> None:
        (self.config_dir / "expected_nodes").write_text("# nodes\n" + "".join(
            f"{n}\n" for n in nodes))
        (self.config_dir / "gpu_instances").write_text("".join(f"{g}\n" for g in gpus))

    def set_machines(self, lines: Sequence[str]) -> None:
        self.machines_file.write_text("".join(f"{line}\n" for line in lines))

    def set_gpu_mtimes(self, mtimes: Mapping[str, float], at: float) -> None:
        rows = [({"__name__": "node_textfile_mtime_seconds", "job": "node", "instance": i,
                  "file": "/var/lib/prometheus/node-exporter/gpu_vram.prom"}, at, repr(m))
                for i, m in mtimes.items()]
        self.prometheus.set_response(vector_response(rows))

    def write_toml(self, text: str) -> None:
        (self.config_dir / "watch.toml").write_text(text)

    def config(self, condor_status: Optional[str] = None) -> WatchConfig:
        return load_config(self.config_dir, self.state_dir, self.prometheus.url,
                           condor_status or str(self.condor_status))

    def poll(self, now: float, config: Optional[WatchConfig] = None) -> PollResult:
        config = config or self.config()
        return run_poll(config, build_channels(config), clock=lambda: now)

    def all_healthy(self, now: float) -> None:
        self.set_machines(["worker1.example.org", "worker1.example.org", "worker2.example.org"])
        self.set_gpu_mtimes({"192.0.2.10:9100": now - 20, "192.0.2.11:9100": now - 20}, now)


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """Run the real command line in-process; (exit status, stdout, stderr)."""
    status = main(list(args))
    out, err = capsys.readouterr()
    return status, out, err


def watch_argv(pool: Pool, *verb: str, condor: Optional[Path] = None) -> list[str]:
    """`clusterwatch watch VERB...` against the pool's config, state and fakes."""
    return ["watch", "--config-dir", str(pool.config_dir), "--state-dir", str(pool.state_dir),
            "--prometheus-url", pool.prometheus.url,
            "--condor-status", str(condor or pool.condor_status), *verb]
