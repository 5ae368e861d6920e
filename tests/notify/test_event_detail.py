"""An event's optional detail: old state loads unchanged, every channel shows the detail."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from clusterwatch.errors import ConfigError
from clusterwatch.loopback.http_recorder import HttpRecorder, SlackResponses
from clusterwatch.notify.alertmanager import ALERTNAME, AlertmanagerChannel
from clusterwatch.notify.channel_config import build_channels, parse_channels
from clusterwatch.notify.event import Event
from clusterwatch.notify.incident import Action
from clusterwatch.notify.outbox import Outbox, deliver
from clusterwatch.notify.slack import SlackWebhook
from clusterwatch.notify.webhook import JsonWebhook
from tests.notify.support import CLIENT_TIMEOUT, SECRET_PATH, T0

DETAIL = "pandaharvester01 /data: 93.1 % used, 6.9 GiB left of 100.0 GiB (alarm at 90 %)"
EVENT = Event(1, T0, Action.ALERT, "host_disk_space:pandaharvester01:/data", "93.1 %", "inc-1",
              DETAIL)


def test_it_keeps_the_json_of_an_event_without_detail_as_before() -> None:
    plain = Event(3, T0, Action.RECOVER, "node:worker1.example.org", "present", "inc-3")
    assert plain.to_json() == {"seq": 3, "t": T0, "action": "recover",
                               "target": "node:worker1.example.org", "status": "present",
                               "incident": "inc-3"}
    assert Event.from_json(plain.to_json()) == plain
    assert plain.line() == ("2026-10-02 14:16:00Z RECOVER node:worker1.example.org (present) "
                            "incident inc-3")


def test_it_round_trips_the_detail_and_shows_it_in_the_line() -> None:
    assert Event.from_json(json.loads(json.dumps(EVENT.to_json()))) == EVENT
    assert EVENT.line() == ("2026-10-02 14:16:00Z ALERT host_disk_space pandaharvester01 /data: "
                            "93.1 % used, 6.9 GiB left of 100.0 GiB (alarm at 90 %) "
                            "(incident inc-1)")


def test_it_keeps_the_detail_through_new_channels_and_dead_letters() -> None:
    outbox = Outbox()
    outbox.attach(["a"])
    outbox.append(T0, Action.ALERT, EVENT.target, EVENT.status, EVENT.incident, DETAIL)
    outbox.attach(["a", "b"], firing=[EVENT])  # b learns the open alarm
    assert [e.detail for e in outbox.pending("b")] == [DETAIL]
    outbox.channels["a"].dead = outbox.pending("a")
    outbox.requeue_dead("a")
    restored = Outbox.from_json(json.loads(json.dumps(outbox.to_json())))
    assert [e.detail for e in restored.pending("a")][-1] == DETAIL


def test_it_posts_the_detail_line_to_slack_and_the_webhook(slack_server: HttpRecorder) -> None:
    assert SlackWebhook("s", slack_server.url + SECRET_PATH, CLIENT_TIMEOUT).send([EVENT], T0).ok
    assert JsonWebhook("w", slack_server.url + "/hook", CLIENT_TIMEOUT).send([EVENT], T0).ok
    slack, hook = (request.json() for request in slack_server.requests)
    assert slack == {"text": EVENT.line()}
    assert hook["events"][0]["detail"] == DETAIL
    assert hook["events"][0]["text"] == EVENT.line()


def test_it_gives_alertmanager_the_detail_as_description_and_a_chosen_alertname(
    recorder: HttpRecorder,
) -> None:
    default = AlertmanagerChannel("am", recorder.url, CLIENT_TIMEOUT)
    assert default.alert(EVENT, T0)["labels"]["alertname"] == ALERTNAME
    named = AlertmanagerChannel("am", recorder.url, CLIENT_TIMEOUT, alertname="ClusterwatchAlarm")
    alert = named.alert(EVENT, T0)
    assert alert["labels"]["alertname"] == "ClusterwatchAlarm"
    assert alert["annotations"]["description"] == DETAIL
    plain = Event(2, T0, Action.ALERT, "gpu:192.0.2.10:9100", "stale", "inc-2")
    assert "description" not in named.alert(plain, T0)["annotations"]


def test_it_names_the_callers_commands_for_dead_letters(
    slack_server: HttpRecorder, caplog: pytest.LogCaptureFixture
) -> None:
    slack_server.enqueue(SlackResponses.no_service())
    outbox = Outbox()
    outbox.attach(["s"])
    outbox.append(T0, Action.ALERT, EVENT.target, EVENT.status, EVENT.incident, DETAIL)
    channel = SlackWebhook("s", slack_server.url + SECRET_PATH, CLIENT_TIMEOUT)
    with caplog.at_level(logging.ERROR):
        deliver(outbox, [channel], T0, dead_letter_hint="run `monitor redeliver_alarms`")
    assert "dead letters, run `monitor redeliver_alarms`" in caplog.text


def test_it_parses_and_builds_channels_for_any_caller(tmp_path: Path) -> None:
    secret = tmp_path / "hook"
    secret.write_text("https://hooks.example.org/T0/secret\n")
    secret.chmod(0o600)
    specs = parse_channels([{"type": "webhook", "url_file": "hook"},
                            {"type": "alertmanager", "url": "http://127.0.0.1:9093"}], tmp_path)
    channels = build_channels(specs, alertname="ClusterwatchAlarm")
    assert [(c.kind, c.name) for c in channels] == [("webhook", "webhook"),
                                                   ("alertmanager", "alertmanager")]
    with pytest.raises(ConfigError, match=r"channels\[0\]: unknown key\(s\) secret"):
        parse_channels([{"type": "slack", "secret": "x"}], tmp_path)
