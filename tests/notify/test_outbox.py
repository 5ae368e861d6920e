"""The outbox through `deliver()`: batches, per-channel queues, back-off, dead letters."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Optional

import pytest

from clusterwatch.http_client import HttpResponse
from clusterwatch.loopback.http_recorder import HttpRecorder, ScriptedResponse, SlackResponses
from clusterwatch.notify import channel as ch
from clusterwatch.notify.event import Event
from clusterwatch.notify.incident import Action
from clusterwatch.notify.outbox import HISTORY_LIMIT, Attempt, ChannelState, Outbox, deliver
from clusterwatch.notify.slack import SlackWebhook
from tests.notify.support import CLIENT_TIMEOUT, SECRET_PATH, T0, CannedPost

MINUTE = 60.0


def slack_for(server: HttpRecorder, name: str) -> SlackWebhook:
    return SlackWebhook(name, server.url + SECRET_PATH, timeout=CLIENT_TIMEOUT)


def new_outbox(*names: str) -> Outbox:
    outbox = Outbox()
    outbox.attach(names)
    return outbox


def queue(outbox: Outbox, count: int, t: float = T0, first: int = 0) -> list[Event]:
    """`count` alerts for distinct workers, detected one second apart from `t`."""
    return [
        outbox.append(t + i, Action.ALERT, f"node:worker{first + i:03d}.example.org", "missing",
                      f"inc-{first + i:03d}")
        for i in range(count)
    ]


def lines_of(server: HttpRecorder) -> list[list[str]]:
    """The message lines of every request the server received, request by request."""
    return [request.json()["text"].split("\n") for request in server.requests]


def reload(outbox: Outbox) -> Outbox:
    """What the next run sees: the outbox saved as JSON text and read back."""
    return Outbox.from_json(json.loads(json.dumps(outbox.to_json())))


def test_it_sends_at_most_10_events_per_poll_to_slack(slack_server: HttpRecorder) -> None:
    outbox = new_outbox("slack")
    events = queue(outbox, 25)
    channel = slack_for(slack_server, "slack")

    for poll in range(4):
        deliver(outbox, [channel], T0 + poll * MINUTE)

    assert lines_of(slack_server) == [
        [event.line() for event in events[:10]],
        [event.line() for event in events[10:20]],
        [event.line() for event in events[20:]],
    ]  # the fourth poll had nothing to send
    assert outbox.pending("slack") == []


def test_it_removes_events_only_after_slack_said_ok(slack_server: HttpRecorder) -> None:
    outbox = new_outbox("slack")
    events = queue(outbox, 12)
    channel = slack_for(slack_server, "slack")
    slack_server.enqueue(
        SlackResponses.server_error(503), ScriptedResponse(200, b""), SlackResponses.timeout()
    )

    for poll in range(3):
        result = deliver(outbox, [channel], T0 + poll * MINUTE)["slack"]
        assert result.outcome == ch.RETRY
        assert outbox.pending("slack") == events
        assert outbox.events == events

    deliver(outbox, [channel], T0 + 3 * MINUTE)

    first_ten = [event.line() for event in events[:10]]
    assert lines_of(slack_server) == [first_ten] * 4  # the same batch each time
    assert outbox.pending("slack") == events[10:]
    assert outbox.channels["slack"].last_success_t == T0 + 3 * MINUTE


def test_it_sends_again_after_a_timeout_at_least_once(slack_server: HttpRecorder) -> None:
    # The fake accepts the post but answers too late: the event must go out again.
    outbox = new_outbox("slack")
    [event] = queue(outbox, 1)
    channel = slack_for(slack_server, "slack")
    slack_server.enqueue(SlackResponses.timeout())

    assert deliver(outbox, [channel], T0)["slack"].error == "timeout"
    assert outbox.channels["slack"].last_error == "timeout"
    assert deliver(outbox, [channel], T0 + MINUTE)["slack"].ok

    assert lines_of(slack_server) == [[event.line()], [event.line()]]
    assert outbox.events == []


@pytest.mark.parametrize(
    "failure",
    [SlackResponses.server_error(500), SlackResponses.timeout(), None],
    ids=["server_error", "timeout", "refused"],
)
def test_it_keeps_a_failing_channels_events_while_another_drains(
    slack_server: HttpRecorder,
    other_slack_server: HttpRecorder,
    refused_url: str,
    failure: Optional[ScriptedResponse],
) -> None:
    if failure is None:
        broken = SlackWebhook("broken", refused_url, timeout=CLIENT_TIMEOUT)
    else:
        other_slack_server.set_default(failure)
        broken = slack_for(other_slack_server, "broken")
    healthy = slack_for(slack_server, "healthy")
    outbox = new_outbox("broken", "healthy")
    events: list[Event] = []

    for poll in range(3):  # the broken channel comes first and fails every poll
        events += queue(outbox, 4, T0 + poll * MINUTE, first=len(events))
        results = deliver(outbox, [broken, healthy], T0 + poll * MINUTE)
        assert results["broken"].outcome == ch.RETRY
        assert results["healthy"].ok

    assert [line for batch in lines_of(slack_server) for line in batch] == [
        event.line() for event in events
    ]
    assert outbox.pending("healthy") == []
    assert outbox.pending("broken") == events
    assert outbox.events == events  # still needed by the broken channel


def test_it_defers_a_rate_limited_channel_across_runs(
    slack_server: HttpRecorder, other_slack_server: HttpRecorder
) -> None:
    slack_server.enqueue(SlackResponses.rate_limited("90"))
    limited = slack_for(slack_server, "limited")
    other = slack_for(other_slack_server, "other")
    outbox = new_outbox("limited", "other")
    events = queue(outbox, 1)

    result = deliver(outbox, [limited, other], T0)["limited"]
    assert result.outcome == ch.DEFER
    assert outbox.channels["limited"].not_before == T0 + 90
    assert outbox.channels["limited"].last_error == "rate_limited"

    for now in (T0 + 60, T0 + 89.9):  # polling goes on, and new transitions queue up
        outbox = reload(outbox)
        assert outbox.channels["limited"].not_before == T0 + 90
        events += queue(outbox, 1, now, first=len(events))
        results = deliver(outbox, [limited, other], now)
        assert "limited" not in results
        assert len(slack_server.requests) == 1  # not contacted while deferred
        assert outbox.pending("limited") == events

    outbox = reload(outbox)
    assert deliver(outbox, [limited, other], T0 + 90)["limited"].ok

    assert lines_of(slack_server)[1] == [event.line() for event in events]
    assert [line for batch in lines_of(other_slack_server) for line in batch] == [
        event.line() for event in events
    ]
    assert outbox.pending("limited") == []


@pytest.mark.parametrize(
    ("retry_after", "wait"),
    [(None, 60.0), ("soon", 60.0), ("30", 30.0), ("0", 0.0), ("1000000000", 3600.0)],
)
def test_it_sets_not_before_from_retry_after(
    slack_server: HttpRecorder, retry_after: Optional[str], wait: float
) -> None:
    slack_server.enqueue(SlackResponses.rate_limited(retry_after))
    outbox = new_outbox("slack")
    queue(outbox, 1)

    deliver(outbox, [slack_for(slack_server, "slack")], T0)

    assert outbox.channels["slack"].not_before == T0 + wait


def test_it_dead_letters_a_rejected_batch_and_goes_on(
    slack_server: HttpRecorder, caplog: pytest.LogCaptureFixture
) -> None:
    slack_server.enqueue(SlackResponses.no_service())
    channel = slack_for(slack_server, "slack")
    outbox = new_outbox("slack")
    rejected = queue(outbox, 2)

    with caplog.at_level(logging.ERROR, logger="clusterwatch.notify"):
        result = deliver(outbox, [channel], T0)["slack"]

    assert result.outcome == ch.REJECTED
    state = outbox.channels["slack"]
    assert state.dead == rejected
    assert state.last_error == "http_404_no_service"
    assert outbox.pending("slack") == []
    assert outbox.events == []  # set aside as dead letters, not kept in the queue
    assert [r.levelno for r in caplog.records if "dead letter" in r.getMessage()] == [
        logging.ERROR
    ]

    [later] = queue(outbox, 1, T0 + MINUTE, first=2)
    assert deliver(outbox, [channel], T0 + MINUTE)["slack"].ok
    assert lines_of(slack_server)[1] == [later.line()]
    assert outbox.channels["slack"].dead == rejected  # still there for the operator


def test_it_requeues_dead_letters_for_that_channel_only(
    slack_server: HttpRecorder, other_slack_server: HttpRecorder
) -> None:
    slack_server.enqueue(SlackResponses.channel_is_archived())
    fixed = slack_for(slack_server, "fixed")
    other = slack_for(other_slack_server, "other")
    outbox = new_outbox("fixed", "other")
    originals = queue(outbox, 3)
    deliver(outbox, [fixed, other], T0)
    assert outbox.channels["fixed"].dead == originals

    assert outbox.requeue_dead("other") == 0
    assert outbox.requeue_dead("fixed") == 3
    outbox = reload(outbox)

    requeued = outbox.pending("fixed")
    assert [(e.t, e.action, e.target, e.status, e.incident) for e in requeued] == [
        (e.t, e.action, e.target, e.status, e.incident) for e in originals
    ]
    assert min(e.seq for e in requeued) > max(e.seq for e in originals)
    assert outbox.channels["fixed"].dead == []
    assert outbox.pending("other") == []

    deliver(outbox, [fixed, other], T0 + MINUTE)
    deliver(outbox, [fixed, other], T0 + 2 * MINUTE)

    assert lines_of(slack_server)[1:] == [[event.line() for event in originals]]
    assert len(other_slack_server.requests) == 1  # no duplicates for the other channel
    assert outbox.events == []


def test_it_requeues_every_channels_dead_letters_without_a_name() -> None:
    outbox = new_outbox("a", "b")
    first, second = queue(outbox, 2)
    outbox.channels["a"].dead = [first]
    outbox.channels["b"].dead = [second]
    outbox.channels["a"].cursor = outbox.channels["b"].cursor = second.seq

    assert outbox.requeue_dead() == 2

    assert [e.incident for e in outbox.pending("a")] == [first.incident]
    assert [e.incident for e in outbox.pending("b")] == [second.incident]


def test_it_delivers_alert_and_recovery_queued_during_an_outage_in_order(
    slack_server: HttpRecorder,
) -> None:
    slack_server.set_default(SlackResponses.server_error(503))
    channel = slack_for(slack_server, "slack")
    outbox = new_outbox("slack")
    alert = outbox.append(T0, Action.ALERT, "node:worker.example.org", "missing", "inc-7")
    deliver(outbox, [channel], T0)
    recovery = outbox.append(T0 + 20 * MINUTE, Action.RECOVER, "node:worker.example.org",
                             "present", "inc-7")
    deliver(outbox, [channel], T0 + 20 * MINUTE)
    outbox = reload(outbox)

    slack_server.set_default(SlackResponses.ok())
    assert deliver(outbox, [channel], T0 + 21 * MINUTE)["slack"].ok

    assert lines_of(slack_server)[-1] == [alert.line(), recovery.line()]
    assert outbox.events == []


def test_it_compacts_only_what_every_channel_is_done_with() -> None:
    outbox = new_outbox("a", "b")
    events = queue(outbox, 4)
    outbox.channels["a"].cursor = 4
    outbox.channels["b"].cursor = 2
    requeued = outbox.append(T0, Action.ALERT, "node:x", "missing", "inc-x")
    outbox.only_for[requeued.seq] = "b"

    outbox.compact()
    assert outbox.events == [*events[2:], requeued]  # a is done with it, b is not

    outbox.channels["b"].cursor = 4
    outbox.compact()
    assert outbox.events == [requeued]
    assert outbox.only_for == {requeued.seq: "b"}

    outbox.channels["b"].cursor = requeued.seq
    outbox.compact()
    assert outbox.events == []
    assert outbox.only_for == {}


class Exploding(ch.Channel):
    """A channel with a bug: both its send and its refresh raise."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.calls = 0

    def send(self, events: Sequence[Event], now: float) -> ch.SendResult:
        self.calls += 1
        raise RuntimeError("boom")

    def refresh(self, firing: Sequence[Event], now: float) -> Optional[ch.SendResult]:
        self.calls += 1
        raise RuntimeError("boom")


def test_it_keeps_going_when_a_channel_raises(
    slack_server: HttpRecorder, caplog: pytest.LogCaptureFixture
) -> None:
    broken = Exploding("broken")
    slack = slack_for(slack_server, "slack")
    outbox = new_outbox("broken", "slack")
    [event] = queue(outbox, 1)

    with caplog.at_level(logging.ERROR, logger="clusterwatch.notify"):
        results = deliver(outbox, [broken, slack], T0)

    assert results["broken"] == ch.SendResult(ch.RETRY, "internal_error")
    assert results["slack"].ok
    assert outbox.pending("broken") == [event]
    assert outbox.channels["broken"].last_error == "internal_error"
    assert any(r.exc_info for r in caplog.records)


def test_it_keeps_going_when_a_channel_raises_while_restating_alerts(
    slack_server: HttpRecorder,
) -> None:
    broken = Exploding("broken")
    slack = slack_for(slack_server, "slack")
    outbox = new_outbox("broken", "slack")  # nothing queued: `broken` is asked to refresh
    [event] = queue(outbox, 1)
    outbox.channels["broken"].cursor = event.seq
    firing = [event]

    results = deliver(outbox, [broken, slack], T0, firing=firing)

    assert broken.calls == 1
    assert results["slack"].ok
    assert len(slack_server.requests) == 1
    assert outbox.channels["broken"].last_error == "internal_error"
    assert outbox.events == []  # compaction still ran


def test_it_does_not_replay_old_events_to_a_newly_attached_channel(
    slack_server: HttpRecorder, other_slack_server: HttpRecorder
) -> None:
    old = slack_for(slack_server, "old")
    outbox = new_outbox("old")
    slack_server.set_default(SlackResponses.server_error(500))
    queue(outbox, 3)
    deliver(outbox, [old], T0)

    outbox.attach(["old", "new"])
    new = slack_for(other_slack_server, "new")
    assert outbox.pending("new") == []
    [fresh] = queue(outbox, 1, T0 + MINUTE, first=3)
    deliver(outbox, [old, new], T0 + MINUTE)

    assert lines_of(other_slack_server) == [[fresh.line()]]
    assert len(outbox.pending("old")) == 4


def test_it_forgets_a_detached_channel_and_says_what_it_dropped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    outbox = new_outbox("a", "b")
    queue(outbox, 2)
    outbox.channels["a"].cursor = 2
    outbox.channels["b"].dead.append(make_dead())

    with caplog.at_level(logging.WARNING):
        outbox.attach(["a"])
    outbox.compact()

    assert list(outbox.channels) == ["a"]
    assert outbox.events == []
    assert "channel b is no longer configured: dropping its 2 queued and 1 dead" in caplog.text


def make_dead() -> Event:
    return Event(99, T0, Action.ALERT, "node:x", "missing", "inc-x")


def test_it_ignores_a_saved_back_off_that_lies_beyond_the_longest_wait(
    slack_server: HttpRecorder,
) -> None:
    """A wait saved before the clock stepped back must not mute the channel for days."""
    outbox = new_outbox("slack")
    queue(outbox, 1)
    outbox.channels["slack"].not_before = T0 + 2 * 86400

    assert deliver(outbox, [slack_for(slack_server, "slack")], T0)["slack"].ok
    assert outbox.channels["slack"].not_before == 0.0


def test_it_bounds_the_history() -> None:
    seam = CannedPost([HttpResponse(500, b"rollup_error")])
    channel = SlackWebhook("slack", "https://hooks.example" + SECRET_PATH, 1.0, seam)
    outbox = new_outbox("slack")
    queue(outbox, 1)
    attempts = HISTORY_LIMIT + 30

    for poll in range(attempts):
        deliver(outbox, [channel], T0 + poll * MINUTE)

    assert len(seam.calls) == attempts
    assert len(outbox.history) == HISTORY_LIMIT
    assert outbox.history[0].t == T0 + 30 * MINUTE
    assert outbox.history[-1] == Attempt(
        T0 + (attempts - 1) * MINUTE, "slack", ch.RETRY, [1], "http_500_rollup_error"
    )


def test_it_round_trips_the_whole_outbox_through_json() -> None:
    outbox = Outbox()
    outbox.attach(["slack", "am"])
    events = queue(outbox, 3)
    outbox.channels["slack"] = ChannelState(
        cursor=2, not_before=T0 + 90.5, dead=[events[0]], last_error="rate_limited",
        last_error_t=T0, last_success_t=T0 - 60,
    )
    outbox.channels["am"].cursor = 3
    requeued = outbox.append(events[0].t, Action.ALERT, events[0].target, "missing",
                             events[0].incident)
    outbox.only_for[requeued.seq] = "slack"
    outbox.history = [
        Attempt(T0, "slack", ch.DEFER, [1, 2], "rate_limited"),
        Attempt(T0 + 1.25, "am", ch.DELIVERED, [1, 2, 3]),
    ]

    text = json.dumps(outbox.to_json())
    restored = Outbox.from_json(json.loads(text))

    assert restored == outbox
    assert restored.to_json() == outbox.to_json()
    assert restored.next_seq == 5
    assert restored.pending("slack") == [events[2], requeued]
    assert restored.pending("am") == []
    assert restored.append(T0, Action.ALERT, "node:y", "missing", "inc-y").seq == 5


def test_it_tells_a_newly_attached_channel_about_open_incidents_only(
    slack_server: HttpRecorder,
) -> None:
    outbox = new_outbox("old")
    old_events = queue(outbox, 2)
    open_alert = Event(0, T0 - 600, Action.ALERT, "gpu:192.0.2.10:9100", "stale", "inc-open")

    outbox.attach(["old", "new"], firing=[open_alert])

    [caught_up] = outbox.pending("new")
    assert (caught_up.t, caught_up.target, caught_up.incident) == (T0 - 600,
                                                                    open_alert.target,
                                                                    "inc-open")
    assert outbox.pending("old") == old_events  # the old channel gets no duplicate
    outbox = reload(outbox)
    assert deliver(outbox, [slack_for(slack_server, "new")], T0)["new"].ok
    assert lines_of(slack_server) == [[caught_up.line()]]
    outbox.attach(["old", "new"], firing=[open_alert])  # already known: nothing again
    assert outbox.pending("new") == []
