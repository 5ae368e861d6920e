"""Records dated ahead of the monitor's clock (a reporter host whose clock runs ahead, or a
forged time) never become a key's latest record: ingest refuses them with 400 and the
reason; one stored before that refusal existed loses "latest" to the next real record, and
the upgrade's `migrate` takes it off at once, so the stale-reporter alarm fires again."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Optional

import pytest

from clusterwatch.loopback.monitor_server import MonitorServer, monitor_environ, private_database
from clusterwatch.monitor.record.index import queues_in
from tests.monitor.records import utc
from tests.monitor.served_support import (
    SHARED_CLOCK_SKEW_S,
    latest,
    now,
    post,
    record_body,
    token_for,
)

pytestmark = pytest.mark.integration

SKEW_S = SHARED_CLOCK_SKEW_S  # CLUSTERWATCH_MAX_CLOCK_SKEW_S of the served monitor (not 600)
# What the console script's migrations are before and after the repair of stored records.
BEFORE_REPAIR = "0004_report_digest"
CLUSTERWATCH = Path(sys.executable).with_name("clusterwatch")  # the installed console script

# Puts a key in the state the monitor left it in before ingest refused future records: an
# older record (unless FREEZE_OLD is empty), then one dated 2999, which the conditional
# update made the latest, with the queue index pointing at it.
_FREEZE = """
import datetime as dt, json, os
from clusterwatch.monitor.ingest.store import store_record
from clusterwatch.monitor.core.models import HostReport, LatestQueue, LatestReport
key = os.environ["FREEZE_KEY"]
if os.environ["FREEZE_OLD"]:
    store_record(key, json.loads(os.environ["FREEZE_OLD"]), 1)
moment = dt.datetime(2999, 1, 1, tzinfo=dt.timezone.utc)
row = HostReport.objects.create(key=key, collected_at=moment, size_bytes=1,
                                record=json.loads(os.environ["FREEZE_FUTURE"]))
LatestReport.objects.update_or_create(key=key, defaults={"report": row, "collected_at": moment})
LatestQueue.objects.filter(key=key).delete()
LatestQueue.objects.create(key=key, queue="ONLY_IN_THE_FUTURE", report=row)
print(row.pk)
"""
# What the pages and alarms read of a key: its latest record's time and its queue index.
_INDEXES = """
import json, os
from clusterwatch.monitor.core.models import LatestQueue, LatestReport
key = os.environ["FREEZE_KEY"]
row = LatestReport.objects.filter(key=key).first()
print(json.dumps([row and row.collected_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
                  sorted(LatestQueue.objects.filter(key=key).values_list("queue", flat=True))]))
"""


@pytest.fixture
def server(served_monitor: MonitorServer) -> MonitorServer:
    return served_monitor  # the session's (tests/monitor/ingest/conftest.py), with SKEW_S


Runner = Callable[..., subprocess.CompletedProcess[str]]  # a management command, extra_environ


def _freeze(run: Runner, key: str, old_at: Optional[dt.datetime]) -> int:
    future = record_body(key, dt.datetime(2999, 1, 1, tzinfo=dt.timezone.utc)).decode()
    old = record_body(key, old_at).decode() if old_at is not None else ""
    done = run("shell", "-c", _FREEZE, extra_environ={
        "FREEZE_KEY": key, "FREEZE_OLD": old, "FREEZE_FUTURE": future})
    return int(done.stdout.strip().splitlines()[-1])


def _indexes(run: Runner, key: str) -> Any:
    done = run("shell", "-c", _INDEXES, extra_environ={"FREEZE_KEY": key})
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_it_refuses_a_record_dated_past_the_allowed_skew(server: MonitorServer) -> None:
    key = "ahead01"
    token = token_for(server, key)
    good = post(server, key, token, record_body(key, now() - dt.timedelta(minutes=5)))
    assert good.status == 201 and good.json()["latest"] is True
    for moment in (dt.datetime(2999, 1, 1, tzinfo=dt.timezone.utc),
                   now() + dt.timedelta(seconds=SKEW_S + 60)):
        refused = post(server, key, token, record_body(key, moment))
        assert refused.status == 400, refused.body
        assert refused.json()["error"] == "future"
        detail = refused.json()["detail"]
        assert "ahead of the monitor's clock" in detail
        assert "CLUSTERWATCH_MAX_CLOCK_SKEW_S" in detail
    shown = latest(server, key, token).json()
    assert shown["id"] == good.json()["id"] and shown["age_s"] >= 0


def test_it_accepts_a_clock_a_little_ahead(server: MonitorServer) -> None:
    key = "ahead02"
    token = token_for(server, key)
    answer = post(server, key, token, record_body(key, now() + dt.timedelta(seconds=SKEW_S // 2)))
    assert answer.status == 201 and answer.json()["latest"] is True


def test_a_real_record_takes_latest_back_from_a_stored_future_one(server: MonitorServer
                                                                  ) -> None:
    key = "ahead03"
    token = token_for(server, key)
    frozen = _freeze(server.manage, key, now() - dt.timedelta(hours=2))
    assert latest(server, key, token).json()["id"] == frozen  # the state left behind
    fresh = post(server, key, token, record_body(key, now() - dt.timedelta(minutes=1)))
    assert fresh.status == 201 and fresh.json()["latest"] is True
    shown = latest(server, key, token).json()
    assert shown["id"] == fresh.json()["id"] and shown["age_s"] >= 0


def _console(environ: Mapping[str, str], *arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(CLUSTERWATCH), "monitor", *arguments], env=dict(environ),
                          capture_output=True, text=True, timeout=300, check=False,
                          stdin=subprocess.DEVNULL)


def test_the_upgrade_unfreezes_a_key_so_its_stale_alarm_fires(tmp_path: Path) -> None:
    with private_database(tmp_path) as database:
        environ = monitor_environ(tmp_path, database)

        def run(*arguments: str, extra_environ: Optional[Mapping[str, str]] = None
                ) -> subprocess.CompletedProcess[str]:
            done = _console({**environ, **(extra_environ or {})}, *arguments)
            assert done.returncode == 0, (done.stdout + done.stderr)[-2000:]
            return done

        run("migrate", "--noinput", "-v", "0")
        run("migrate", "monitor", BEFORE_REPAIR, "--noinput", "-v", "0")  # the old schema
        run("create_host_token", "frozen01", "onlyfuture01")
        silent_since = now() - dt.timedelta(hours=2)
        _freeze(run, "frozen01", silent_since)
        _freeze(run, "onlyfuture01", None)
        run("migrate", "--noinput", "-v", "0")  # the upgrade
        frozen, only_future = _indexes(run, "frozen01"), _indexes(run, "onlyfuture01")
        events = json.loads(run("evaluate_alarms", "--json").stdout)["events"]
    queues = sorted(queues_in(json.loads(record_body("frozen01", silent_since))))
    assert frozen == [utc(silent_since), queues]
    assert only_future == [None, []]  # as if it never reported: nothing to show
    stale = [event for event in events if event["target"] == "reporter_stale:frozen01"]
    assert [event["action"] for event in stale] == ["alert"], events
    assert silent_since.strftime("%Y-%m-%d %H:%M") in stale[0]["detail"], stale


@pytest.mark.parametrize("value", ["soon", "0", "-5", "1.5"])
def test_a_malformed_skew_setting_is_a_configuration_error(tmp_path: Path, value: str) -> None:
    environ = monitor_environ(tmp_path, extra={"CLUSTERWATCH_MAX_CLOCK_SKEW_S": value})
    done = _console(environ, "check")
    assert done.returncode == 78, (done.stdout + done.stderr)[-2000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].count("CLUSTERWATCH_MAX_CLOCK_SKEW_S") == 1, lines
    assert "Traceback" not in done.stderr
