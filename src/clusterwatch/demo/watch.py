"""`clusterwatch watch demo`: the exercise, then the watch against real local services.

Starts node_exporter and Prometheus on 127.0.0.1, writes gpu_vram.prom with the project's
writer (a fake nvidia-smi stands in for the GPU), runs real polls with a loopback fake Slack
as the channel, and prints each step. Everything lives in a temporary directory.
"""

from __future__ import annotations

import io
import sys
import tempfile
import time
from pathlib import Path
from typing import IO

from clusterwatch.errors import EXIT_FAILURE, EXIT_OK
from clusterwatch.loopback.http_recorder import SLACK_WEBHOOK_PATH, HttpRecorder, fake_slack
from clusterwatch.loopback.live_pool import LiveGpuWorker, live_gpu_worker
from clusterwatch.loopback.services import MissingComponent, ServiceStartError
from clusterwatch.watch import state
from clusterwatch.watch.channels import build_channels
from clusterwatch.watch.config import load_config
from clusterwatch.watch.exercise import print_exercise
from clusterwatch.watch.poll import run_poll
from clusterwatch.watch.status import print_status

RECOVER_S = 3.0  # the demo's recovery window; the default is 600 s


def run_demo(out: IO[str]) -> int:
    out.write("Part 1: the decision rules on simulated polls (clusterwatch watch exercise)\n")
    print_exercise(out)
    out.write("\nPart 2: the watch against real node_exporter and Prometheus on 127.0.0.1\n")
    try:
        with tempfile.TemporaryDirectory(prefix="clusterwatch-demo-") as tmp, \
                live_gpu_worker(Path(tmp)) as worker, fake_slack() as slack:
            root = Path(tmp)
            config_dir = root / "config"
            config_dir.mkdir()
            (config_dir / "expected_nodes").write_text("")
            (config_dir / "gpu_instances").write_text(f"{worker.instance}\n")
            (config_dir / "watch.toml").write_text(f"[thresholds]\nrecover_s = {RECOVER_S}\n")
            secret = config_dir / "slack_webhook"
            secret.write_text(slack.url + SLACK_WEBHOOK_PATH + "\n")
            secret.chmod(0o600)
            _Story(out, worker, slack, config_dir, root / "state").run()
    except (MissingComponent, ServiceStartError) as exc:
        print(f"clusterwatch watch demo: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    return EXIT_OK


class _Story:
    """The live part, step by step, printing what each poll decided and Slack received."""

    def __init__(self, out: IO[str], worker: LiveGpuWorker, slack: HttpRecorder,
                 config_dir: Path, state_dir: Path) -> None:
        self.out, self.worker, self.slack = out, worker, slack
        self.config_dir, self.state_dir = config_dir, state_dir
        self.target = f"gpu:{worker.instance}"
        self.slack_seen = 0

    def run(self) -> None:
        worker, out = self.worker, self.out
        out.write(f"  node_exporter {worker.node.url}, Prometheus {worker.prometheus.url}, "
                  f"GPU worker instance {worker.instance}\n")
        worker.wait_until_scraped(worker.write_gpu_file())
        out.write("  the writer wrote gpu_vram.prom and Prometheus scraped it:\n")
        for line in worker.gpu_file.read_text().splitlines():
            if not line.startswith("#"):
                out.write(f"    {line}\n")
        self.poll("file just written")

        worker.wait_until_scraped(worker.age_gpu_file(20 * 60))
        out.write("  the writer stops: the file's mtime is now 20 minutes old\n")
        self.poll("file 20 minutes old")
        self.show_slack()

        out.write(f"  the writer resumes (this demo's recovery window is {RECOVER_S:g} s, "
                  "not 10 minutes)\n")
        deadline = time.monotonic() + 60
        while self.poll_after_write() and time.monotonic() < deadline:
            time.sleep(1.1)  # mtimes have whole seconds: let the next write advance it
        self.show_slack()
        out.write("\n  clusterwatch watch status:\n")
        buffer = io.StringIO()
        print_status(state.load(self.state_dir), buffer)
        for line in buffer.getvalue().splitlines():
            out.write(f"    {line}\n")

    def poll_after_write(self) -> bool:
        """Write, wait for the scrape, poll; True while the incident is still open."""
        self.worker.wait_until_scraped(self.worker.write_gpu_file())
        return self.poll("fresh write")

    def poll(self, label: str) -> bool:
        config = load_config(self.config_dir, self.state_dir, self.worker.prometheus.url)
        result = run_poll(config, build_channels(config))
        record = state.load(self.state_dir).records.get(self.target)  # none once recovered
        is_open = record is not None and record.incident is not None
        verdicts = ", ".join(f"{d.action.value.upper()} ({d.status.value})"
                             for d in result.decisions)
        self.out.write(f"  poll ({label}): {verdicts or 'no transition'}"
                       f"{'; incident open' if is_open else ''}\n")
        return is_open

    def show_slack(self) -> None:
        requests = self.slack.requests
        for request in requests[self.slack_seen:]:
            for line in request.json()["text"].splitlines():
                self.out.write(f"  Slack received: {line}\n")
        self.slack_seen = len(requests)
