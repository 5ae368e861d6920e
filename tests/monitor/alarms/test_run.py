"""`evaluate_alarms`, `alarms_status` and `redeliver_alarms` end to end, with a loopback Slack."""

from __future__ import annotations

import datetime as dt
import io
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from clusterwatch import http_client
from clusterwatch.loopback.http_recorder import HttpRecorder, SlackResponses, fake_slack
from clusterwatch.monitor.alarms import outbox_store
from clusterwatch.monitor.alarms import run as alarm_run
from clusterwatch.monitor.core.models import Alarm, AlarmRunLease, HostToken, HostTokenKey
from clusterwatch.monitor.site.management.commands import evaluate_alarms as evaluate_alarms_command
from tests.monitor.alarms.support import make_record, put, ssl_failing

SECRET = "cwALARMsecretTOKEN9731"  # part of the webhook URL: must never be shown
ALERT_TEXT = (
    "ALERT panda_unreachable pandaharvester01: every fetch failed with SSLError (6 of 6) — "
    "last error: 2026-10-02 18:24:05,412 panda.log.communicator: ERROR get_jobs "
    "<siteName=BNL_PanDA_1> failed to POST with <class 'requests.exceptions.SSLError'>"
)


@pytest.fixture
def slack() -> Iterator[HttpRecorder]:
    with fake_slack() as server:
        yield server


@pytest.fixture
def alarms_toml(tmp_path: Path, settings: Any, slack: HttpRecorder) -> Path:
    secret = tmp_path / "slack_webhook"
    secret.write_text(f"{slack.url}/services/T0/B0/{SECRET}\n")
    secret.chmod(0o600)
    path = tmp_path / "alarms.toml"
    path.write_text('[[channels]]\ntype = "slack"\nwebhook_file = "slack_webhook"\n'
                    "timeout_s = 2\n")
    settings.ALARMS_CONFIG = path
    return path


def command(name: str, *args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command(name, *args, stdout=out, stderr=err)
    text = out.getvalue() + err.getvalue()
    assert SECRET not in text
    return out.getvalue(), err.getvalue()


def texts(slack: HttpRecorder) -> list[str]:
    return [request.json()["text"] for request in slack.requests]


def fresh(age: float = 30.0) -> float:
    return time.time() - age


pytestmark = pytest.mark.django_db


def test_it_alerts_once_and_recovers_on_fresh_data(alarms_toml: Path,
                                                   slack: HttpRecorder) -> None:
    put("pandaharvester01", ssl_failing(collected_at=fresh(60)))
    out, _ = command("evaluate_alarms")
    assert "1 raised, 0 recovered, 1 open; slack delivered" in out
    (alert,) = texts(slack)
    assert ALERT_TEXT in alert and "CERTIFICATE_VERIFY_FAILED" in alert
    command("evaluate_alarms")
    assert len(slack.requests) == 1  # delivered once, not again while it stays open

    put("pandaharvester01", make_record(collected_at=fresh(5)))
    out, _ = command("evaluate_alarms")
    assert "0 raised, 1 recovered, 0 open" in out
    recovery = texts(slack)[1]
    assert ("RECOVER panda_unreachable pandaharvester01: fetches succeed again (6 of 6 OK"
            in recovery)
    incident = Alarm.objects.get().incident
    assert f"(incident {incident})" in alert and f"(incident {incident})" in recovery
    assert Alarm.objects.get().closed_at is not None


# The first run, `alarms_status` and the second run come inside it on any machine (the test
# checks that they did, so a machine slower than that fails saying so); the window's end is
# reached by moving the last run's clock past it, not by sleeping it out.
RETRY_AFTER_S = 60


def test_it_waits_for_retry_after_and_then_delivers(alarms_toml: Path, slack: HttpRecorder,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    slack.enqueue(SlackResponses.rate_limited(str(RETRY_AFTER_S)))
    put("pandaharvester01", ssl_failing(collected_at=fresh()))
    before = time.time()
    command("evaluate_alarms")
    state = outbox_store.load().channels["slack"]
    # persisted for the next run
    assert before + RETRY_AFTER_S <= state.not_before <= time.time() + RETRY_AFTER_S
    status, _ = command("alarms_status")
    assert "channel slack: 1 pending, 0 dead letters, rate-limited until" in status
    command("evaluate_alarms")
    assert time.time() < state.not_before, f"the runs took over {RETRY_AFTER_S} s"
    assert len(slack.requests) == 1  # not tried again inside Retry-After
    after_window = state.not_before + 0.1 - time.time()  # the run's clock, that far ahead

    def run_after_the_window(config: Any, channels: Any) -> alarm_run.RunResult:
        return alarm_run.run_alarms(config, channels, clock=lambda: time.time() + after_window)

    monkeypatch.setattr(evaluate_alarms_command, "run_alarms", run_after_the_window)
    out, _ = command("evaluate_alarms")
    assert "slack delivered" in out
    assert [ALERT_TEXT in text for text in texts(slack)] == [True, True]
    assert outbox_store.load().pending("slack") == []


def test_it_keeps_a_batch_slack_failed_and_sends_it_next_run(alarms_toml: Path,
                                                              slack: HttpRecorder) -> None:
    slack.enqueue(SlackResponses.server_error(500))
    put("pandaharvester01", ssl_failing(collected_at=fresh()))
    out, _ = command("evaluate_alarms")
    assert "slack retry" in out
    status, _ = command("alarms_status")
    assert "channel slack: 1 pending, 0 dead letters, last error http_500_internal_error" in status
    command("evaluate_alarms")
    assert len(slack.requests) == 2 and texts(slack)[0] == texts(slack)[1]
    assert outbox_store.load().pending("slack") == []


def test_it_sets_aside_a_rejected_batch_shows_it_and_requeues_it(alarms_toml: Path,
                                                                  slack: HttpRecorder) -> None:
    slack.enqueue(SlackResponses.no_service())
    put("pandaharvester01", ssl_failing(collected_at=fresh()))
    command("evaluate_alarms")
    status, _ = command("alarms_status")
    assert "channel slack: 0 pending, 1 dead letters, last error http_404_no_service" in status
    assert "  DEAD: " in status and ALERT_TEXT in status
    assert "redeliver_alarms" in status
    data = json.loads(command("alarms_status", "--json")[0])
    assert data["channels"]["slack"]["dead_letters"][0]["target"] == (
        "panda_unreachable:pandaharvester01")
    command("evaluate_alarms")
    assert len(slack.requests) == 1  # a dead letter is not retried by itself

    out, _ = command("redeliver_alarms")
    assert out.strip() == ("1 message(s) queued again; the next evaluate_alarms run sends them")
    command("evaluate_alarms")
    assert len(slack.requests) == 2 and ALERT_TEXT in texts(slack)[1]
    status, _ = command("alarms_status")
    assert "channel slack: 0 pending, 0 dead letters" in status


def test_it_refuses_to_redeliver_to_an_unknown_channel(alarms_toml: Path) -> None:
    command("evaluate_alarms")
    with pytest.raises(CommandError, match=r"no channel named 'pager'.*channels: slack"):
        command("redeliver_alarms", "--channel", "pager")


class SimulatedCrash(BaseException):
    """Escapes every `except Exception`, as a kill would end the process."""


@pytest.mark.django_db(transaction=True)
def test_it_sends_again_after_a_crash_between_commit_and_delivery(
    alarms_toml: Path, slack: HttpRecorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    def crash(*args: object) -> http_client.HttpResponse:
        raise SimulatedCrash

    put("pandaharvester01", ssl_failing(collected_at=fresh()))
    monkeypatch.setattr(http_client, "post", crash)
    with pytest.raises(SimulatedCrash):
        command("evaluate_alarms")
    # Committed before the channel was tried: the alarm and its queued message.
    assert Alarm.objects.filter(closed_at__isnull=True).count() == 1
    assert [e.action.value for e in outbox_store.load().pending("slack")] == ["alert"]
    assert slack.requests == []
    monkeypatch.undo()
    command("evaluate_alarms")
    (alert,) = texts(slack)
    assert ALERT_TEXT in alert
    assert Alarm.objects.count() == 1  # the same incident, not a second one


def hold_lease(holder: str, seconds: float) -> None:
    now = dt.datetime.now(dt.timezone.utc)
    AlarmRunLease.objects.update_or_create(name="alarms", defaults={
        "holder": holder, "acquired_at": now, "expires_at": now + dt.timedelta(seconds=seconds)})


def test_it_skips_while_another_run_holds_the_lease(alarms_toml: Path,
                                                    slack: HttpRecorder) -> None:
    put("pandaharvester01", ssl_failing(collected_at=fresh()))
    hold_lease("monitor02.example.org/4242/abcd1234", 300)
    out, err = command("evaluate_alarms")
    assert "another alarm run holds the lease (host monitor02.example.org, pid 4242, run " \
           "abcd1234, since " in err
    assert err.rstrip().endswith("this run skips")
    assert out == "" and slack.requests == [] and Alarm.objects.count() == 0
    status, _ = command("alarms_status")
    assert "running now: host monitor02.example.org, pid 4242" in status
    hold_lease("monitor02.example.org/4242/abcd1234", -1)  # it expired: that run died
    command("evaluate_alarms")
    assert len(slack.requests) == 1


def test_it_records_alarms_without_channels_and_says_so(settings: Any, tmp_path: Path) -> None:
    settings.ALARMS_CONFIG = tmp_path / "absent.toml"
    put("pandaharvester01", ssl_failing(collected_at=fresh()))
    out, err = command("evaluate_alarms")
    assert f"no alarm channels: {tmp_path / 'absent.toml'} does not exist" in err
    assert ALERT_TEXT in out and "1 raised" in out
    status, _ = command("alarms_status")
    assert "open alarms: 1" in status and "channels: none" in status


def test_it_raises_and_clears_never_reported_from_tokens(alarms_toml: Path,
                                                         slack: HttpRecorder) -> None:
    token = HostToken.objects.create(prefix="abcd", digest="0" * 64,
                                     created_at=dt.datetime.now(dt.timezone.utc)
                                     - dt.timedelta(hours=1))
    HostTokenKey.objects.create(token=token, key="osgsub01")
    command("evaluate_alarms")
    (alert,) = texts(slack)
    assert "ALERT reporter_stale osgsub01: never reported since its token was created " in alert
    token.revoked_at = dt.datetime.now(dt.timezone.utc)
    token.save()
    command("evaluate_alarms")
    assert "RECOVER reporter_stale osgsub01: no longer expected to report (its token was " \
           "revoked " in texts(slack)[1]


def test_it_sends_the_message_to_alertmanager_as_a_description(
    tmp_path: Path, settings: Any
) -> None:
    with HttpRecorder(default=SlackResponses.ok()) as alertmanager:
        path = tmp_path / "alarms.toml"
        path.write_text(f'[[channels]]\ntype = "alertmanager"\nurl = "{alertmanager.url}"\n')
        settings.ALARMS_CONFIG = path
        put("pandaharvester01", ssl_failing(collected_at=fresh()))
        command("evaluate_alarms")
        (alert,) = alertmanager.requests[0].json()
    assert alert["labels"] == {"alertname": "ClusterwatchAlarm", "check": "panda_unreachable",
                               "target": "pandaharvester01"}
    assert alert["annotations"]["description"].startswith(
        "pandaharvester01: every fetch failed with SSLError (6 of 6) — last error: ")
    assert alert["annotations"]["status"] == "SSLError"
