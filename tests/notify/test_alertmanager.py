"""Alertmanager channel: the v2 alerts it posts, re-stating open alerts, answer handling."""

from __future__ import annotations

import calendar
import time
from typing import Any

import pytest

from clusterwatch.http_client import HttpResponse, TransportError
from clusterwatch.loopback.http_recorder import HttpRecorder, ScriptedResponse
from clusterwatch.notify import channel as ch
from clusterwatch.notify.alertmanager import ALERTNAME, AlertmanagerChannel
from clusterwatch.notify.incident import Action
from clusterwatch.notify.outbox import Outbox, deliver
from tests.notify.support import CLIENT_TIMEOUT, T0, CannedPost, make_event

ALERT = make_event(1, T0, "alert", "gpu:192.0.2.10:9100", "stale", "inc-gpu")
RECOVERY = make_event(2, T0 + 1200.25, "recover", "gpu:192.0.2.10:9100", "fresh", "inc-gpu")


def epoch(rfc3339: str) -> float:
    """Seconds for an RFC 3339 UTC time with milliseconds, as the channel writes them."""
    whole, _, rest = rfc3339.partition(".")
    assert rest.endswith("Z") and len(rest) == 4, rfc3339
    return calendar.timegm(time.strptime(whole, "%Y-%m-%dT%H:%M:%S")) + int(rest[:3]) / 1000


def am_for(server: HttpRecorder, name: str = "am", **kwargs: Any) -> AlertmanagerChannel:
    return AlertmanagerChannel(name, server.url + "/", timeout=CLIENT_TIMEOUT, **kwargs)


def posted_alerts(server: HttpRecorder) -> list[list[dict[str, Any]]]:
    return [request.json() for request in server.requests]


def test_it_posts_a_firing_alert_to_the_v2_api(recorder: HttpRecorder) -> None:
    channel = am_for(recorder, extra_labels={"cluster": "pool-a"})
    now = T0 + 30

    assert channel.send([ALERT], now).ok

    [request] = recorder.requests
    assert request.method == "POST"
    assert request.path == "/api/v2/alerts"
    assert request.headers["content-type"] == "application/json"
    [alert] = request.json()
    assert alert["labels"] == {
        "alertname": ALERTNAME, "check": "gpu", "target": "192.0.2.10:9100", "cluster": "pool-a",
    }
    assert alert["annotations"]["summary"] == ALERT.line()
    assert alert["annotations"]["status"] == "stale"
    assert alert["annotations"]["incident"] == "inc-gpu"
    assert alert["startsAt"] == "2026-10-02T14:16:00.000Z"
    assert epoch(alert["endsAt"]) > now  # still firing when Alertmanager reads it


def test_it_ends_the_alert_at_the_recovery_time(recorder: HttpRecorder) -> None:
    channel = am_for(recorder)

    assert channel.send([ALERT, RECOVERY], RECOVERY.t + 5).ok

    [[fired, recovered]] = posted_alerts(recorder)
    assert recovered["labels"] == fired["labels"]  # the same alert for Alertmanager
    assert recovered["endsAt"] == "2026-10-02T14:36:00.250Z"
    assert epoch(recovered["endsAt"]) == RECOVERY.t
    assert recovered["annotations"]["status"] == "fresh"
    assert epoch(fired["endsAt"]) > RECOVERY.t + 5


def test_it_keeps_its_own_labels_over_extra_labels() -> None:
    channel = AlertmanagerChannel(
        "am", "http://am.example:9093",
        extra_labels={"alertname": "Other", "target": "x", "check": "y", "team": "ops"},
    )

    labels = channel.alert(make_event(target="node:worker.example.org"), T0)["labels"]

    assert labels == {
        "alertname": ALERTNAME, "check": "node", "target": "worker.example.org", "team": "ops",
    }


def test_it_moves_endsat_of_a_firing_alert_ahead_of_now() -> None:
    channel = AlertmanagerChannel("am", "http://am.example:9093")
    later = T0 + 3600

    alert = channel.alert(ALERT, later)

    assert alert["startsAt"] == "2026-10-02T14:16:00.000Z"  # the detection time, not now
    assert epoch(alert["endsAt"]) > later


def outbox_for(*names: str) -> Outbox:
    outbox = Outbox()
    outbox.attach(names)
    return outbox


def test_it_restates_open_alerts_when_its_queue_is_empty(recorder: HttpRecorder) -> None:
    channel = am_for(recorder)
    outbox = outbox_for("am")
    open_alerts = [ALERT, make_event(0, T0 - 600, "alert", "node:w1", "missing", "inc-w1")]

    results = deliver(outbox, [channel], T0 + 300, firing=open_alerts)

    assert results == {}  # nothing was queued, so no batch result
    [restated] = posted_alerts(recorder)
    assert [a["annotations"]["incident"] for a in restated] == ["inc-gpu", "inc-w1"]
    assert all(epoch(a["endsAt"]) > T0 + 300 for a in restated)
    assert outbox.events == []  # a re-statement is not queued


def test_it_does_not_restate_without_open_alerts(recorder: HttpRecorder) -> None:
    deliver(outbox_for("am"), [am_for(recorder)], T0, firing=[])

    assert recorder.requests == []


def test_it_never_restates_a_target_whose_events_are_queued(recorder: HttpRecorder) -> None:
    # A queued recovery must not be overtaken by a re-stated alert for the same target
    # (a later incident of it), and a failing channel re-states nothing.
    recorder.enqueue(ScriptedResponse(503, b""))
    channel = am_for(recorder)
    outbox = outbox_for("am")
    recovery = outbox.append(RECOVERY.t, Action.RECOVER, "gpu:192.0.2.10:9100", "fresh", "inc-gpu")
    reopened = make_event(0, RECOVERY.t, "alert", "gpu:192.0.2.10:9100", "stale", "inc-gpu2")
    other_open = make_event(0, T0, "alert", "node:w1", "missing", "inc-w1")

    deliver(outbox, [channel], RECOVERY.t, firing=[reopened, other_open])
    assert len(recorder.requests) == 1  # the failed send, and no re-statement
    assert outbox.pending("am") == [recovery]

    deliver(outbox, [channel], RECOVERY.t + 60, firing=[reopened, other_open])
    sent, restated = posted_alerts(recorder)[1:]
    assert [a["annotations"]["incident"] for a in sent] == ["inc-gpu"]
    # The target just sent is spoken for in this run; the other open alert is re-stated.
    assert [a["annotations"]["incident"] for a in restated] == ["inc-w1"]

    deliver(outbox, [channel], RECOVERY.t + 120, firing=[reopened, other_open])
    [restated] = posted_alerts(recorder)[3:]
    assert [a["annotations"]["incident"] for a in restated] == ["inc-gpu2", "inc-w1"]


def test_it_keeps_restating_open_alerts_while_a_backlog_drains(recorder: HttpRecorder) -> None:
    """A backlog longer than endsAt must not let already-sent open alerts expire."""
    channel = am_for(recorder)
    outbox = outbox_for("am")
    for i in range(2 * channel.max_batch + 1):
        outbox.append(T0 + i, Action.ALERT, f"node:w{i}", "missing", f"inc-{i}")

    for run in range(3):
        deliver(outbox, [channel], T0 + 100 + 60 * run, firing=[ALERT])
    sizes = [len(alerts) for alerts in posted_alerts(recorder)]
    assert sizes == [channel.max_batch, 1, channel.max_batch, 1, 1, 1]
    assert all(batch[0]["annotations"]["incident"] == "inc-gpu"
               for batch in posted_alerts(recorder)[1::2])
    assert outbox.pending("am") == []


def test_it_records_a_failed_restatement_without_queueing_it(recorder: HttpRecorder) -> None:
    recorder.enqueue(ScriptedResponse(429, b"", {"Retry-After": "120"}))
    outbox = outbox_for("am")

    deliver(outbox, [am_for(recorder)], T0, firing=[ALERT])

    state = outbox.channels["am"]
    assert state.last_error == "rate_limited"
    assert state.not_before == T0 + 120
    assert outbox.events == []
    deliver(outbox, [am_for(recorder)], T0 + 60, firing=[ALERT])
    assert len(recorder.requests) == 1  # still deferred


@pytest.mark.parametrize("status", [200, 202, 204])
def test_it_accepts_any_2xx(recorder: HttpRecorder, status: int) -> None:
    recorder.enqueue(ScriptedResponse(status, b""))

    assert am_for(recorder).send([ALERT], T0) == ch.SendResult(ch.DELIVERED)


def test_it_rejects_on_400(recorder: HttpRecorder) -> None:
    recorder.enqueue(ScriptedResponse(400, b'{"code":400,"message":"bad alert"}'))

    assert am_for(recorder).send([ALERT], T0) == ch.SendResult(ch.REJECTED, "http_400")


@pytest.mark.parametrize("status", [401, 403, 404, 405])
def test_it_rejects_other_client_errors_rather_than_growing_the_queue(
    recorder: HttpRecorder, status: int
) -> None:
    recorder.enqueue(ScriptedResponse(status, b"no"))

    assert am_for(recorder).send([ALERT], T0) == ch.SendResult(ch.REJECTED, f"http_{status}")


@pytest.mark.parametrize("status", [408, 429])
def test_it_keeps_the_batch_on_client_statuses_that_mean_later(
    recorder: HttpRecorder, status: int
) -> None:
    recorder.enqueue(ScriptedResponse(status, b"later"))

    assert am_for(recorder).send([ALERT], T0).outcome in (ch.RETRY, ch.DEFER)


@pytest.mark.parametrize("suffix", ["", "/", "/api/v2/alerts", "/api/v2/alerts/"])
def test_it_posts_to_the_v2_path_whether_or_not_the_url_names_it(
    recorder: HttpRecorder, suffix: str
) -> None:
    channel = AlertmanagerChannel("am", recorder.url + suffix, timeout=CLIENT_TIMEOUT)

    assert channel.send([ALERT], T0).ok
    assert recorder.requests[-1].path == "/api/v2/alerts"


@pytest.mark.parametrize("status", [500, 502, 503])
def test_it_retries_on_5xx(recorder: HttpRecorder, status: int) -> None:
    recorder.enqueue(ScriptedResponse(status, b"down"))

    assert am_for(recorder).send([ALERT], T0) == ch.SendResult(ch.RETRY, f"http_{status}")


def test_it_retries_on_a_timeout(recorder: HttpRecorder) -> None:
    recorder.enqueue(ScriptedResponse(200, b"", hold=True))  # never answered while it waits

    assert am_for(recorder).send([ALERT], T0) == ch.SendResult(ch.RETRY, "timeout")


def test_it_retries_when_the_connection_is_refused(refused_url: str) -> None:
    channel = AlertmanagerChannel("am", refused_url, timeout=CLIENT_TIMEOUT)

    assert channel.send([ALERT], T0) == ch.SendResult(ch.RETRY, "connection")


@pytest.mark.parametrize("kind", ["timeout", "connection", "tls", "too_large"])
def test_it_retries_on_any_transport_error(kind: str) -> None:
    seam = CannedPost([TransportError(kind, "detail")])
    channel = AlertmanagerChannel("am", "http://am.example:9093", http_post=seam)

    assert channel.refresh([ALERT], T0) == ch.SendResult(ch.RETRY, kind)
    assert seam.calls[0].url == "http://am.example:9093/api/v2/alerts"


def test_it_defers_on_429_with_retry_after() -> None:
    seam = CannedPost([HttpResponse(429, b"", {"retry-after": "45"})])
    channel = AlertmanagerChannel("am", "http://am.example:9093", http_post=seam)

    assert channel.send([ALERT], T0) == ch.SendResult(ch.DEFER, "rate_limited", 45.0)


def test_it_sends_an_alert_and_its_recovery_in_order_after_an_outage(
    recorder: HttpRecorder,
) -> None:
    recorder.set_default(ScriptedResponse(503, b""))
    channel = am_for(recorder)
    outbox = outbox_for("am")
    outbox.append(T0, Action.ALERT, "gpu:192.0.2.10:9100", "stale", "inc-gpu")
    deliver(outbox, [channel], T0, firing=[ALERT])
    outbox.append(RECOVERY.t, Action.RECOVER, "gpu:192.0.2.10:9100", "fresh", "inc-gpu")
    deliver(outbox, [channel], RECOVERY.t, firing=[])

    recorder.set_default(ScriptedResponse(200, b""))
    deliver(outbox, [channel], RECOVERY.t + 60, firing=[])

    last = posted_alerts(recorder)[-1]
    assert [("startsAt" in a, a["annotations"]["status"]) for a in last] == [
        (True, "stale"), (False, "fresh"),
    ]
    assert epoch(last[1]["endsAt"]) == RECOVERY.t
    assert outbox.pending("am") == []
