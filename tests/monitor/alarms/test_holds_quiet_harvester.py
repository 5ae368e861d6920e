"""A `queue:` silence over a harvester whose service is stopped for the maintenance: its
next records have no fetch attempt (no queue in `fetching` or `submission`), yet the PanDA
alarm the silence holds stays held until the silence ends, since the harvester's database
still names the queues it serves (`harvester_db.launch_limits`)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clusterwatch import http_client
from clusterwatch.loopback.http_recorder import HttpRecorder, fake_slack
from clusterwatch.monitor.alarms.config import load_config
from clusterwatch.monitor.alarms.holds import alarm_facts
from clusterwatch.monitor.alarms.operations import add_silence, expire_silence
from clusterwatch.monitor.alarms.rules import KeyFacts
from clusterwatch.monitor.alarms.run import run_alarms
from clusterwatch.monitor.core.models import Alarm
from clusterwatch.monitor.record.host_record import parse_record
from clusterwatch.notify.channel_config import build_channels
from tests.monitor.alarms.support import make_record, put, ssl_failing

pytestmark = pytest.mark.django_db
KEY = "pandaharvester01"
PANDA = f"panda_unreachable:{KEY}"
NOW = time.time()
LIMITS = {"siteName": "BNL", "jobFetchTime": None, "submitTime": None,
          "nQueueLimitWorker": 10, "maxWorkers": 100, "nQueueLimitJob": None,
          "nNewWorkers": None, "by_type": {}}


def with_db_queues(record: dict[str, Any]) -> dict[str, Any]:
    record["harvester_db"] = {"launch_limits": {"BNL_PanDA_1": dict(LIMITS),
                                                "UM_GREX_PanDA_1": dict(LIMITS)}}
    return record


def stopped(collected_at: float) -> dict[str, Any]:
    """The harvester's service stopped: nothing fetched or submitted in the interval."""
    return with_db_queues(make_record(KEY, collected_at, queues={}))


@pytest.fixture
def slack() -> Iterator[HttpRecorder]:
    with fake_slack() as server:
        yield server


def test_the_queues_of_a_stopped_harvester_are_its_databases() -> None:
    facts = alarm_facts(PANDA, KeyFacts(KEY, parse_record(stopped(NOW))))
    assert facts["queue"] == ["BNL_PanDA_1", "UM_GREX_PanDA_1"]


def test_a_queue_silence_keeps_holding_while_the_harvester_is_stopped(
    tmp_path: Path, slack: HttpRecorder
) -> None:
    secret = tmp_path / "slack_webhook"
    secret.write_text(f"{slack.url}/services/T0/B0/secret\n")
    secret.chmod(0o600)
    path = tmp_path / "alarms.toml"
    path.write_text('[[channels]]\ntype = "slack"\nwebhook_file = "slack_webhook"\n'
                    "timeout_s = 2\n")
    config = load_config(path, 300.0)
    channels = build_channels(config.channels, http_client.post, "ClusterwatchAlarm")
    made = add_silence(["queue:BNL_*"], duration_s=3600, until=None, comment="upgrade",
                       author="alice", now=NOW)
    put(KEY, with_db_queues(ssl_failing(collected_at=NOW)))
    run_alarms(config, channels, clock=lambda: NOW + 10)
    assert Alarm.objects.get(target=PANDA).alert_held and slack.requests == []

    put(KEY, stopped(NOW + 300))  # no fetch at all: the alarm stays open, still silenced
    run_alarms(config, channels, clock=lambda: NOW + 310)
    assert Alarm.objects.get(target=PANDA, closed_at__isnull=True).alert_held
    assert slack.requests == []

    expire_silence(made.id, NOW + 320, by="alice")
    run_alarms(config, channels, clock=lambda: NOW + 330)
    assert len(slack.requests) == 1 and PANDA.replace(":", " ") in slack.requests[0].json()[
        "text"]
