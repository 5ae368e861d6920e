"""`alarm_silence`, `alarm_ack` and `alarms_status` through the console script as installed,
on a private database (SQLite, or PostgreSQL in its pass), with a loopback Slack for the
run: exit statuses, one-line usage errors that store nothing, and a held alert that goes out
exactly once after its silence is expired."""

from __future__ import annotations

import datetime as dt
import io
import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from clusterwatch.loopback.http_recorder import HttpRecorder, fake_slack
from clusterwatch.loopback.monitor_server import private_database
from tests.support.monitor_console import CLUSTERWATCH, console_environ

KEY = "pandaharvester01"
TARGET = f"panda_unreachable:{KEY}"
SECRET = "cwSILENCEsecret5521"

OPEN_ALARMS = ((TARGET, "0123abcd4567"), ("host_disk_space:osgsub01:/", "89abcdef0123"),
               ("reporter_stale:osgsub01", "456789abcdef"))
# Open alarms whose alert a silence held (what a run leaves behind), made in the monitor's
# own process: the key has no record, so no rule touches it.
OPEN_HELD_ALARM = f"""
import datetime as dt
from clusterwatch.monitor.core.models import Alarm
now = dt.datetime.now(dt.timezone.utc)
for target, incident in {OPEN_ALARMS!r}:
    check, key = target.split(":")[:2]
    Alarm.objects.create(target=target, kind=check, key=key, incident=incident,
                         status="SSLError", detail=key + ": down", opened_at=now,
                         alert_held=True)
"""


class Monitor:
    def __init__(self, env: dict[str, str]) -> None:
        self.env = env

    def __call__(self, *arguments: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([CLUSTERWATCH, "monitor", *arguments], env=self.env,
                              capture_output=True, text=True, timeout=120, check=False)
        assert "Traceback" not in done.stderr, done.stderr
        assert SECRET not in done.stdout + done.stderr
        return done

    def usage_error(self, *arguments: str) -> str:
        """The one line of a usage error (exit 2)."""
        done = self(*arguments)
        assert done.returncode == 2, (arguments, done.stdout, done.stderr)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1, (arguments, done.stderr)
        return lines[0]

    def silences(self) -> list[dict[str, object]]:
        done = self("alarm_silence", "list", "--json")
        assert done.returncode == 0, done.stderr
        found: list[dict[str, object]] = json.loads(done.stdout)
        return found


@pytest.fixture
def slack() -> Iterator[HttpRecorder]:
    with fake_slack() as server:
        yield server


@pytest.fixture
def monitor(tmp_path: Path, migrated_database: dict[str, str],
            slack: HttpRecorder) -> Iterator[Monitor]:
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    secret = data / "slack_webhook"
    secret.write_text(f"{slack.url}/services/T0/B0/{SECRET}\n")
    secret.chmod(0o600)
    (data / "alarms.toml").write_text(
        '[[channels]]\ntype = "slack"\nwebhook_file = "slack_webhook"\ntimeout_s = 5\n')
    with private_database(data, template=migrated_database) as database:
        yield Monitor(console_environ(data, {**database, "CLUSTERWATCH_SECRET_KEY": "k" * 50}))


@pytest.mark.integration
def test_it_adds_lists_and_expires_silences_and_refuses_bad_ones(monitor: Monitor) -> None:
    added = monitor("alarm_silence", "add", f"key:{KEY}", "queue:BNL_*", "--for", "2h",
                    "--comment", "certificate renewal", "--author", "alice")
    assert added.returncode == 0, added.stderr
    ident = added.stdout.splitlines()[-1]
    assert re.fullmatch(r"[0-9a-f]{12}", ident)
    assert f"key:{KEY} queue:BNL_*" in added.stdout
    assert "by alice: certificate renewal" in added.stdout
    (listed,) = monitor.silences()
    assert (listed["id"], listed["state"], listed["matchers"], listed["author"]) == (
        ident, "active", [f"key:{KEY}", "queue:BNL_*"], "alice")
    text = monitor("alarm_silence", "list")
    assert text.stdout.startswith(f"{ident} active key:{KEY} queue:BNL_* from ")

    # The exit status and the one line as a script sees them; every other refusal is
    # checked in process below (each console run starts Django: seconds apiece).
    base = ("alarm_silence", "add")
    assert "unknown kind 'node'" in monitor.usage_error(*base, "node:wn1*", "--for", "2h",
                                                         "--comment", "c")
    assert "--comment" in monitor.usage_error(*base, "key:x", "--for", "2h")  # argparse's
    assert monitor.usage_error("alarm_silence")  # no verb
    assert [silence["id"] for silence in monitor.silences()] == [ident]  # nothing stored

    expired = monitor("alarm_silence", "expire", ident)
    assert (expired.returncode, expired.stdout) == (
        0, f"expired silence {ident} (key:{KEY} queue:BNL_*: certificate renewal)\n")
    assert monitor.silences()[0]["state"] == "expired"  # kept for the record
    again = monitor("alarm_silence", "expire", ident)
    assert again.returncode == 1 and "has already ended" in again.stderr
    missing = monitor("alarm_silence", "expire", "../etc/passwd")
    assert missing.returncode == 1 and len(missing.stderr.strip().splitlines()) == 1


@pytest.mark.integration
def test_it_holds_an_alert_until_its_silence_is_expired_then_sends_it_once(
        monitor: Monitor, slack: HttpRecorder) -> None:
    made = monitor("shell", "-c", OPEN_HELD_ALARM)
    assert made.returncode == 0, made.stderr
    ident = monitor("alarm_silence", "add", f"key:{KEY}", "--for", "1d", "--comment",
                    "certificate renewal", "--author", "alice").stdout.splitlines()[-1]
    monitor("alarm_silence", "add", "key:osgsub01", "filesystem:/", "--for", "1d",
            "--comment", "disk swap", "--author", "carol")
    assert monitor("evaluate_alarms").returncode == 0
    # osgsub01's stale alarm: no silence names it, so its held alert goes out
    assert [request.json()["text"].count("ALERT") for request in slack.requests] == [1]
    assert "reporter_stale osgsub01" in slack.requests[0].json()["text"]

    status = monitor("alarms_status")
    assert status.returncode == 0
    assert ("    silenced by alice until " in status.stdout
            and f"(silence {ident}: certificate renewal)" in status.stdout)
    data = json.loads(monitor("alarms_status", "--json").stdout)
    by_target = {item["target"]: item for item in data["open_alarms"]}
    assert by_target[TARGET]["held_by"]["by"] == f"silence {ident}"
    assert by_target[TARGET]["alert_held"] is True
    assert by_target["reporter_stale:osgsub01"]["held_by"] is None  # filesystem: not its kind
    assert by_target["host_disk_space:osgsub01:/"]["held_by"]["author"] == "carol"

    assert monitor("alarm_silence", "expire", ident).returncode == 0
    released_run = monitor("evaluate_alarms")
    assert released_run.returncode == 0
    assert ", 1 released, 3 open; " in released_run.stdout.splitlines()[-1]
    assert len(slack.requests) == 2
    released = slack.requests[1].json()["text"]
    assert f"ALERT panda_unreachable {KEY}" in released and "(incident 0123abcd4567)" in released
    monitor("evaluate_alarms")
    assert len(slack.requests) == 2  # exactly once
    after = json.loads(monitor("alarms_status", "--json").stdout)
    assert {item["target"]: item["alert_held"] for item in after["open_alarms"]} == {
        TARGET: False, "reporter_stale:osgsub01": False, "host_disk_space:osgsub01:/": True}


@pytest.mark.integration
def test_it_acknowledges_an_open_alarm_and_takes_it_back(monitor: Monitor) -> None:
    assert monitor("shell", "-c", OPEN_HELD_ALARM).returncode == 0
    done = monitor("alarm_ack", KEY, "--comment", "renewing the certificate", "--author", "bob")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"{TARGET} (incident 0123abcd4567): acknowledged by bob at ")
    status = monitor("alarms_status").stdout
    assert "    acknowledged by bob since " in status and ": renewing the certificate" in status
    data = json.loads(monitor("alarms_status", "--json").stdout)
    acked = {item["target"]: item["acknowledged"] for item in data["open_alarms"]}
    assert acked[TARGET] is not None and acked[TARGET]["by"] == "bob"
    assert acked["reporter_stale:osgsub01"] is None

    twice = monitor("alarm_ack", "0123abcd4567", "--comment", "me too")
    assert twice.returncode == 1 and "already acknowledged by bob" in twice.stderr
    assert "needs a comment" in monitor.usage_error("alarm_ack", TARGET)  # the rest: below
    nobody = monitor("alarm_ack", "nobody", "--comment", "x")
    assert nobody.returncode == 1 and "no open alarm or incident 'nobody'" in nobody.stderr

    undone = monitor("alarm_ack", TARGET, "--undo")
    assert (undone.returncode, undone.stdout) == (
        0, f"{TARGET} (incident 0123abcd4567): no longer acknowledged\n")
    assert monitor("alarm_ack", TARGET, "--undo").returncode == 1  # not acknowledged now
    assert "acknowledged by" not in monitor("alarms_status").stdout


REFUSED = {
    "no kind": (["pandaharvester01", "--for", "2h", "--comment", "c"], "not KIND:PATTERN"),
    "0m": (["key:x", "--for", "0m", "--comment", "c"], "not positive"),
    "2 fortnights": (["key:x", "--for", "2 fortnights", "--comment", "c"], ""),
    "blank comment": (["key:x", "--for", "2h", "--comment", "  "], "comment"),
    "no span": (["key:x", "--comment", "c"], ""),
    "both": (["key:x", "--for", "2h", "--until", "2030-01-01T00:00:00Z", "--comment", "c"], ""),
    "no zone": (["key:x", "--until", "2030-01-01T00:00:00", "--comment", "c"], "no zone"),
    "past": (["key:x", "--until", "2020-01-01T00:00:00Z", "--comment", "c"],
             "not in the future"),
    "no matcher": (["--for", "2h", "--comment", "c"], ""),
}


@pytest.mark.django_db
@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_refused_silence_is_one_line_exit_2_and_stores_nothing(case: str) -> None:
    from django.core.management import CommandError, call_command

    from clusterwatch.monitor.core.models import AlarmSilence

    arguments, words = REFUSED[case]
    with pytest.raises(CommandError) as refused:
        call_command("alarm_silence", "add", *arguments, stdout=io.StringIO(),
                     stderr=io.StringIO())
    assert refused.value.returncode == 2
    assert len(str(refused.value).splitlines()) == 1 and words in str(refused.value)
    assert not AlarmSilence.objects.exists()


ACK_REFUSED = {
    "several open alarms": ["osgsub01", "--comment", "x"],
    "needs a comment": [TARGET, "--comment", " "],
    "--undo takes no --comment": [TARGET, "--undo", "--comment", "x"],
    "": [],  # no ALARM: argparse's error, in one line too
}


@pytest.mark.django_db
@pytest.mark.parametrize("words", sorted(ACK_REFUSED))
def test_a_refused_acknowledgement_is_one_line_exit_2_and_changes_nothing(words: str) -> None:
    from django.core.management import CommandError, call_command

    from clusterwatch.monitor.core.models import Alarm

    now = dt.datetime.now(dt.timezone.utc)
    for target, incident in OPEN_ALARMS:  # the same three open alarms as the console tests
        check, key = target.split(":")[:2]
        Alarm.objects.create(target=target, kind=check, key=key, incident=incident,
                             status="SSLError", detail=key + ": down", opened_at=now,
                             alert_held=True)
    with pytest.raises(CommandError) as refused:
        call_command("alarm_ack", *ACK_REFUSED[words], stdout=io.StringIO(),
                     stderr=io.StringIO())
    assert refused.value.returncode == 2
    assert len(str(refused.value).splitlines()) == 1 and words in str(refused.value)
    assert not Alarm.objects.exclude(acknowledged_by="").exists()
