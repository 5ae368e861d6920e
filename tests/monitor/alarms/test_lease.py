"""Concurrent and killed `evaluate_alarms` runs: real processes over one SQLite database."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from clusterwatch.loopback.http_recorder import HttpRecorder, SlackResponses, fake_slack
from tests.monitor.alarms.support import ssl_failing

ROOT = Path(__file__).parents[3]
# Stores the record given as its argument in a migrated database.
SEED = textwrap.dedent("""
    import json, sys, django
    django.setup()
    from clusterwatch.monitor.ingest.store import store_record
    record = json.loads(sys.argv[1])
    store_record(record["host"], record, len(sys.argv[1]))
""")


def environment(data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CLUSTERWATCH_", "DJANGO_"))}
    env.update(CLUSTERWATCH_DATA_DIR=str(data_dir),
               CLUSTERWATCH_ALARMS_CONFIG=str(data_dir / "alarms.toml"),
               DJANGO_SETTINGS_MODULE="clusterwatch.monitor.site.settings",
               PYTHONPATH=str(ROOT / "src"))
    return env


@pytest.fixture
def monitor(migrated_sqlite: Path, tmp_path: Path) -> Iterator[tuple[Path, HttpRecorder]]:
    for name in ("monitor.sqlite3", "secret_key"):  # the migrated one, made once a run
        shutil.copy(migrated_sqlite / name, tmp_path / name)
    record = ssl_failing(collected_at=time.time() - 30)
    subprocess.run([sys.executable, "-c", SEED, json.dumps(record)],
                   env=environment(tmp_path), check=True, timeout=120)
    with fake_slack() as slack:
        secret = tmp_path / "slack_webhook"
        secret.write_text(f"{slack.url}/services/T0/B0/secret\n")
        secret.chmod(0o600)
        (tmp_path / "alarms.toml").write_text(
            '[[channels]]\ntype = "slack"\nwebhook_file = "slack_webhook"\ntimeout_s = 120\n')
        yield tmp_path, slack


def evaluate(data_dir: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "clusterwatch", "monitor", "evaluate_alarms"],
        env=environment(data_dir), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_it_lets_one_of_two_concurrent_runs_deliver(monitor: tuple[Path, HttpRecorder]) -> None:
    data_dir, slack = monitor
    # The first run's delivery is held in flight, lease taken, until the second run has
    # met the lease and exited, however long its Python and Django take to start; then it
    # is answered, well inside the channel's timeout_s (120: a deadline, not a premise).
    slack.enqueue(SlackResponses.held())
    first = evaluate(data_dir)
    slack.wait_held(timeout=60)
    second = evaluate(data_dir)
    out, err = second.communicate(timeout=60)
    assert slack.release() == 1
    assert second.returncode == 0, err
    assert "another alarm run holds the lease" in err and "this run skips" in err
    assert out == ""
    out, err = first.communicate(timeout=60)
    assert first.returncode == 0, err
    assert "1 raised" in out and "slack delivered" in out
    assert len(slack.requests) == 1


def test_it_sends_again_after_the_run_was_killed(monitor: tuple[Path, HttpRecorder]) -> None:
    data_dir, slack = monitor
    slack.enqueue(SlackResponses.held())  # never answered to this run: released at teardown
    killed = evaluate(data_dir)
    slack.wait_held(timeout=60)  # committed, and now waiting for Slack's answer
    killed.send_signal(signal.SIGKILL)
    killed.communicate(timeout=30)
    rerun = evaluate(data_dir)
    out, err = rerun.communicate(timeout=60)
    assert rerun.returncode == 0, err
    assert "took over the alarm lease from host" in err and "no longer runs" in err
    assert "0 raised" in out and "slack delivered" in out  # the queued alert, not a new one
    first, second = (request.json()["text"] for request in slack.requests)
    assert first == second and "ALERT panda_unreachable pandaharvester01" in first
