"""Silences, maintenance windows and acknowledgements in the alarm run, with loopback
Slack and Alertmanager: what is sent, when, and what the database says."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Optional

import pytest

from clusterwatch import http_client
from clusterwatch.errors import ConfigError
from clusterwatch.loopback.http_recorder import HttpRecorder, SlackResponses, fake_slack
from clusterwatch.monitor.alarms.config import AlarmsConfig, load_config
from clusterwatch.monitor.alarms.run import RunResult, run_alarms
from clusterwatch.monitor.core.models import Alarm, AlarmSilence
from clusterwatch.notify.channel_config import build_channels
from clusterwatch.notify.silences import KEEP_ENDED_S
from tests.monitor.alarms.support import make_record, put, ssl_failing, volume

pytestmark = pytest.mark.django_db

KEY = "pandaharvester01"
PANDA = f"panda_unreachable:{KEY}"
NOW = time.time()  # the records' clock; each run names its own time after it


@pytest.fixture
def slack() -> Iterator[HttpRecorder]:
    with fake_slack() as server:
        yield server


def toml(tmp_path: Path, slack: HttpRecorder, extra: str = "") -> AlarmsConfig:
    secret = tmp_path / "slack_webhook"
    secret.write_text(f"{slack.url}/services/T0/B0/secret\n")
    secret.chmod(0o600)
    path = tmp_path / "alarms.toml"
    path.write_text(f'{extra}[[channels]]\ntype = "slack"\nwebhook_file = "slack_webhook"\n'
                    "timeout_s = 2\n")
    return load_config(path, 300.0)


def run(config: AlarmsConfig, at: float) -> RunResult:
    channels = build_channels(config.channels, http_client.post, "ClusterwatchAlarm")
    return run_alarms(config, channels, clock=lambda: at)


def texts(server: HttpRecorder) -> list[str]:
    """Every event line sent (a message holds a batch, a line each), less the time each
    starts with ("2026-12-04 18:41:33Z ALERT ...")."""
    return [line.split("Z ", 1)[1] for request in server.requests
            for line in request.json()["text"].splitlines()]


def utc(t: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(t, tz=dt.timezone.utc)


def silence(ident: str, matchers: list[str], start: float, end: float,
            expired: Optional[float] = None) -> AlarmSilence:
    row: AlarmSilence = AlarmSilence.objects.create(
        id=ident, matchers=matchers, starts_at=utc(start), ends_at=utc(end), author="alice",
        comment="certificate renewal", created_at=utc(start),
        expired_at=None if expired is None else utc(expired))
    return row


def alarm() -> Alarm:
    found: Alarm = Alarm.objects.get(target=PANDA, closed_at__isnull=True)
    return found


def test_it_holds_a_silenced_alert_then_sends_it_once_when_the_silence_ends(
        tmp_path: Path, slack: HttpRecorder) -> None:
    config = toml(tmp_path, slack)
    silence("0000000000a1", [f"key:{KEY}"], NOW - 60, NOW + 90)
    put(KEY, ssl_failing(collected_at=NOW))
    first = run(config, NOW + 10)
    assert (first.summary()["raised"], first.held, first.events) == (1, 1, [])
    assert slack.requests == [] and alarm().alert_held
    assert run(config, NOW + 60).events == [] and slack.requests == []  # still held
    incident = alarm().incident

    released = run(config, NOW + 120)  # the first run after its end
    assert released.released == 1
    (alert,) = texts(slack)
    assert alert.startswith(f"ALERT {PANDA.replace(':', ' ')}") and incident in alert
    assert not alarm().alert_held and alarm().incident == incident  # the same incident
    run(config, NOW + 180)
    assert len(slack.requests) == 1  # exactly once

    put(KEY, make_record(collected_at=NOW + 200))
    run(config, NOW + 240)
    assert texts(slack)[1].startswith(f"RECOVER {PANDA.replace(':', ' ')}")


def test_it_closes_a_held_alarm_without_a_word(tmp_path: Path, slack: HttpRecorder) -> None:
    config = toml(tmp_path, slack)
    silence("0000000000a2", ["queue:UM_GREX_*"], NOW - 60, NOW + 90)
    put(KEY, ssl_failing(collected_at=NOW))
    run(config, NOW + 10)
    put(KEY, make_record(collected_at=NOW + 30))
    closing = run(config, NOW + 60)
    assert closing.silent_closes == 1 and closing.events == []
    assert Alarm.objects.get(target=PANDA).closed_at is not None
    run(config, NOW + 120)  # the silence is over: nothing is open, nothing to say
    assert slack.requests == []


def test_it_delivers_the_recovery_of_an_alert_that_went_out_before_the_silence(
        tmp_path: Path, slack: HttpRecorder) -> None:
    config = toml(tmp_path, slack)
    put(KEY, ssl_failing(collected_at=NOW))
    run(config, NOW + 10)
    assert len(slack.requests) == 1
    silence("0000000000a3", [f"key:{KEY}"], NOW + 20, NOW + 3600)
    put(KEY, make_record(collected_at=NOW + 30))
    run(config, NOW + 60)
    assert texts(slack)[1].startswith("RECOVER ")  # recoveries are never held


def test_it_holds_only_what_the_matchers_name(tmp_path: Path, slack: HttpRecorder) -> None:
    config = toml(tmp_path, slack)
    silence("0000000000a4", [f"key:{KEY}", "filesystem:/data"], NOW - 60, NOW + 3600)
    put(KEY, ssl_failing(collected_at=NOW) | {"health": {"volumes": {
        "/data": volume(95.0), "/scratch": volume(97.0, device="254:1")}}})
    run(config, NOW + 10)
    sent = sorted(text.split(":")[0] for text in texts(slack))
    assert sent == [f"ALERT host_disk_space {KEY} /scratch", f"ALERT panda_unreachable {KEY}"]
    held = Alarm.objects.get(alert_held=True)
    assert held.target == f"host_disk_space:{KEY}:/data"


def test_it_ignores_silences_not_yet_started_expired_or_unreadable(
        tmp_path: Path, slack: HttpRecorder) -> None:
    config = toml(tmp_path, slack)
    silence("0000000000b1", [f"key:{KEY}"], NOW + 600, NOW + 3600)  # later
    silence("0000000000b2", [f"key:{KEY}"], NOW - 600, NOW + 3600, expired=NOW - 5)
    silence("0000000000b3", [f"node:{KEY}"], NOW - 600, NOW + 3600)  # not a monitor kind
    silence("0000000000b4", [], NOW - 600, NOW + 3600)
    put(KEY, ssl_failing(collected_at=NOW))
    run(config, NOW + 10)
    assert len(slack.requests) == 1 and not alarm().alert_held


def test_it_deletes_silences_a_week_after_they_ended(tmp_path: Path,
                                                     slack: HttpRecorder) -> None:
    config = toml(tmp_path, slack)
    at = NOW + 10
    silence("0000000000c1", ["key:x"], at - KEEP_ENDED_S - 7200, at - KEEP_ENDED_S - 1)
    silence("0000000000c2", ["key:x"], at - KEEP_ENDED_S - 7200, at - KEEP_ENDED_S + 60)
    silence("0000000000c3", ["key:x"], at - KEEP_ENDED_S - 7200, at + 3600,
            expired=at - KEEP_ENDED_S - 1)  # expired by hand over a week ago
    silence("0000000000c4", ["key:x"], at - 60, at + 3600)
    run(config, at)
    assert sorted(AlarmSilence.objects.values_list("id", flat=True)) == [
        "0000000000c2", "0000000000c4"]


def window(start: float, end: float) -> str:
    return ("[[maintenance]]\ncomment = \"harvester upgrade\"\n"
            f"matchers = [\"host:{KEY}.sdcc.*\"]\n"
            f"start = \"{utc(start).isoformat()}\"\nend = \"{utc(end).isoformat()}\"\n")


def test_it_holds_alerts_in_an_open_window_and_releases_them_when_it_closes(
        tmp_path: Path, slack: HttpRecorder) -> None:
    config = toml(tmp_path, slack, window(NOW - 60, NOW + 90))
    put(KEY, ssl_failing(collected_at=NOW))
    run(config, NOW + 10)
    assert slack.requests == [] and alarm().alert_held
    run(config, NOW + 120)
    (alert,) = texts(slack)
    assert alert.startswith("ALERT ") and not alarm().alert_held


def test_it_holds_alerts_in_a_weekly_window_and_releases_them_after_it(
        tmp_path: Path, slack: HttpRecorder) -> None:
    # This week's occurrence opened 32 minutes ago (UTC) and closed two minutes ago; the
    # first run is inside it, the second after it. (Records are not put in the future.)
    began = time.gmtime(NOW - 1920)
    weekly = ("[[maintenance]]\ncomment = \"weekly reboots\"\nmatchers = [\"queue:BNL_*\"]\n"
              f"day = \"{('mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun')[began.tm_wday]}\"\n"
              f"time = \"{began.tm_hour:02d}:{began.tm_min:02d}\"\nduration = \"30m\"\n")
    config = toml(tmp_path, slack, weekly)
    put(KEY, ssl_failing(collected_at=NOW - 1800))
    run(config, NOW - 1790)
    assert slack.requests == [] and alarm().alert_held
    put(KEY, ssl_failing(collected_at=NOW))
    run(config, NOW + 10)
    (alert,) = texts(slack)
    assert alert.startswith(f"ALERT panda_unreachable {KEY}")


def test_it_alerts_at_once_outside_a_window(tmp_path: Path, slack: HttpRecorder) -> None:
    config = toml(tmp_path, slack, window(NOW - 7200, NOW - 3600)
                  + window(NOW + 3600, NOW + 7200).replace("harvester upgrade", "next"))
    put(KEY, ssl_failing(collected_at=NOW))
    run(config, NOW + 10)
    assert len(slack.requests) == 1


@pytest.mark.parametrize("extra, message", [
    ("[[maintenance]]\nmatchers = [\"key:x\"]\nday = \"tue\"\ntime = \"06:00\"\n"
     "duration = \"2h\"\n", r"maintenance\[0\] needs a comment"),
    ("[[maintenance]]\ncomment = \"c\"\nmatchers = [\"node:x\"]\nday = \"tue\"\n"
     "time = \"06:00\"\nduration = \"2h\"\n", "unknown kind 'node'"),
    ("[[maintenance]]\ncomment = \"c\"\nmatchers = [\"key:x\"]\nday = \"tue\"\n"
     "time = \"06:00\"\nduration = \"2h\"\nzone = \"Mars/Olympus\"\n", "not a known time zone"),
    ("maintenance = 3\n", "maintenance must be an array of tables"),
])
def test_it_refuses_a_bad_window_naming_the_file(tmp_path: Path, slack: HttpRecorder,
                                                 extra: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        toml(tmp_path, slack, extra)
    assert str(caught.value).startswith(str(tmp_path / "alarms.toml"))


def test_it_keeps_held_alarms_out_of_alertmanagers_re_statement(
        tmp_path: Path, settings: Any) -> None:
    with HttpRecorder(default=SlackResponses.ok()) as alertmanager:
        path = tmp_path / "alarms.toml"
        path.write_text(f'[[channels]]\ntype = "alertmanager"\nurl = "{alertmanager.url}"\n')
        config = load_config(path, 300.0)
        silence("0000000000d1", ["key:osgsub01"], NOW - 60, NOW + 3600)
        put(KEY, ssl_failing(collected_at=NOW))
        put("osgsub01", ssl_failing("osgsub01", collected_at=NOW))
        for offset in (10, 70, 130):
            run(config, NOW + offset)
        posted = [alert["labels"]["target"] for request in alertmanager.requests
                  for alert in request.json()]
    assert len(alertmanager.requests) >= 2  # the alert, then re-statements
    assert set(posted) == {KEY}  # never the held osgsub01


def test_it_delivers_an_acknowledged_alarms_recovery_and_opens_the_next_unacknowledged(
        tmp_path: Path, slack: HttpRecorder) -> None:
    config = toml(tmp_path, slack)
    put(KEY, ssl_failing(collected_at=NOW))
    run(config, NOW + 10)
    Alarm.objects.filter(target=PANDA).update(
        acknowledged_by="alice", acknowledged_at=utc(NOW + 20), ack_comment="on it")
    run(config, NOW + 40)  # an acknowledged alarm goes on as before
    assert alarm().acknowledged_by == "alice" and len(slack.requests) == 1
    put(KEY, make_record(collected_at=NOW + 50))
    run(config, NOW + 60)
    assert texts(slack)[1].startswith("RECOVER ")
    put(KEY, ssl_failing(collected_at=NOW + 100))
    run(config, NOW + 120)
    assert texts(slack)[2].startswith("ALERT ")
    again = alarm()
    assert (again.acknowledged_by, again.acknowledged_at, again.ack_comment) == ("", None, "")
    closed = Alarm.objects.get(target=PANDA, closed_at__isnull=False)
    assert closed.acknowledged_by == "alice"  # it stays with its incident
