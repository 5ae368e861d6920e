"""The channel sections that `watch status` and `alarms_status` both end with."""

from __future__ import annotations

import io

from clusterwatch.notify.incident import Action
from clusterwatch.notify.outbox import Attempt, Outbox
from clusterwatch.notify.outbox_status import ChannelWording, outbox_sections, write_channels
from tests.notify.support import T0

PLAIN = ChannelWording(no_channels="channels: none")
FULL = ChannelWording(no_channels="channels: none", when=lambda t: f"<{t - T0:.0f}>",
                      last_delivered=True, dead_letter_advice="run redeliver")


def outbox() -> Outbox:
    box = Outbox()
    box.attach(["slack", "am"])
    box.append(T0, Action.ALERT, "gpu:192.0.2.10:9100", "stale", "464531a4")
    box.append(T0 + 60, Action.RECOVER, "panda_unreachable:h1", "ok", "20573a43c3ef",
               "h1: fetches succeed again")
    slack = box.channels["slack"]
    slack.cursor, slack.dead = 1, [box.events[0]]
    slack.last_error, slack.last_error_t, slack.last_success_t = "http_404_no_service", T0 + 5, T0
    box.channels["am"].not_before = T0 + 600
    return box


def text(box: Outbox, wording: ChannelWording) -> str:
    out = io.StringIO()
    write_channels(outbox_sections(box, T0 + 120)["channels"], out, wording)
    return out.getvalue()


def test_it_says_the_engines_own_line_when_no_channel_is_configured() -> None:
    assert text(Outbox(), FULL) == "channels: none\n"


def test_it_writes_each_channel_then_its_queue_and_dead_letters() -> None:
    assert text(outbox(), PLAIN).splitlines() == [
        "channel am: 2 pending, 0 dead letters, rate-limited until 2026-10-02 14:26:00Z",
        "  pending: 2026-10-02 14:16:00Z ALERT gpu:192.0.2.10:9100 (stale) incident 464531a4",
        "  pending: 2026-10-02 14:17:00Z RECOVER panda_unreachable h1: fetches succeed again "
        "(incident 20573a43c3ef)",
        "channel slack: 1 pending, 1 dead letters, last error http_404_no_service at "
        "2026-10-02 14:16:05Z",
        "  pending: 2026-10-02 14:17:00Z RECOVER panda_unreachable h1: fetches succeed again "
        "(incident 20573a43c3ef)",
        "  DEAD: 2026-10-02 14:16:00Z ALERT gpu:192.0.2.10:9100 (stale) incident 464531a4",
    ]


def test_it_says_times_last_deliveries_and_advice_in_the_engines_words() -> None:
    lines = text(outbox(), FULL).splitlines()
    assert lines[3] == ("channel slack: 1 pending, 1 dead letters, last error "
                        "http_404_no_service at <5>, last delivered <0>")
    assert lines[-1] == "run redeliver"


def test_it_gives_no_advice_without_dead_letters() -> None:
    box = outbox()
    box.channels["slack"].dead = []
    assert "run redeliver" not in text(box, FULL)


def test_it_lists_the_recent_attempts_and_nothing_rate_limited_in_the_past() -> None:
    box = outbox()
    box.channels["am"].not_before = T0
    box.history = [Attempt(T0, "slack", "rejected", [1], "http_404_no_service"),
                   Attempt(T0 + 5, "am", "defer", [1, 2], "rate_limited")]
    sections = outbox_sections(box, T0 + 120, recent=1)
    assert sections["channels"]["am"]["rate_limited_until"] is None
    assert list(sections) == ["channels", "recent_attempts"]
    assert sections["recent_attempts"] == [box.history[-1].to_json()]
