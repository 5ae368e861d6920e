"""One table of what each channel makes of each HTTP answer (the README's delivery table).

The three channels read answers through one set of rules; this pins every channel's verdict
as it was when each channel still classified answers on its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from clusterwatch.http_client import HttpPost, HttpResponse
from clusterwatch.notify import channel as ch
from clusterwatch.notify.alertmanager import AlertmanagerChannel
from clusterwatch.notify.answers import TRANSIENT_CLIENT_STATUSES
from clusterwatch.notify.channel import Channel
from clusterwatch.notify.slack import PERMANENT_STATUSES, SlackWebhook
from clusterwatch.notify.webhook import JsonWebhook
from tests.notify.support import T0, CannedPost, make_event

README = Path(__file__).resolve().parents[2] / "README.md"
OK, KEEP, WAIT, DEAD = ch.DELIVERED, ch.RETRY, ch.DEFER, ch.REJECTED
WAITS = {"retry-after": "17"}

# (status, body, headers): (webhook, alertmanager, slack), each (outcome, error).
VERDICTS: list[tuple[tuple[int, bytes, Mapping[str, str]], tuple[tuple[str, object], ...]]] = [
    ((200, b"ok", {}), ((OK, None), (OK, None), (OK, None))),
    ((200, b"", {}), ((OK, None), (OK, None), (KEEP, "http_200"))),
    ((200, b"invalid_token", {}), ((OK, None), (OK, None), (KEEP, "http_200_invalid_token"))),
    ((204, b"", {}), ((OK, None), (OK, None), (KEEP, "http_204"))),
    ((101, b"", {}), ((KEEP, "http_101"), (KEEP, "http_101"), (KEEP, "http_101"))),
    ((301, b"", {}), ((KEEP, "http_301"), (KEEP, "http_301"), (KEEP, "http_301"))),
    ((400, b"invalid_payload", {}),
     ((DEAD, "http_400"), (DEAD, "http_400"), (DEAD, "http_400_invalid_payload"))),
    ((401, b"", {}), ((DEAD, "http_401"), (DEAD, "http_401"), (DEAD, "http_401"))),
    ((404, b"no_service", {}),
     ((DEAD, "http_404"), (DEAD, "http_404"), (DEAD, "http_404_no_service"))),
    ((405, b"", {}), ((DEAD, "http_405"), (DEAD, "http_405"), (KEEP, "http_405"))),
    ((408, b"", {}), ((KEEP, "http_408"), (KEEP, "http_408"), (KEEP, "http_408"))),
    ((410, b"channel_is_archived", {}),
     ((DEAD, "http_410"), (DEAD, "http_410"), (DEAD, "http_410_channel_is_archived"))),
    ((413, b"", {}), ((DEAD, "http_413"), (DEAD, "http_413"), (DEAD, "http_413"))),
    ((422, b"", {}), ((DEAD, "http_422"), (DEAD, "http_422"), (KEEP, "http_422"))),
    ((425, b"", {}), ((KEEP, "http_425"), (KEEP, "http_425"), (KEEP, "http_425"))),
    ((429, b"", WAITS), ((WAIT, "http_429"), (WAIT, "rate_limited"), (WAIT, "rate_limited"))),
    ((500, b"<html>oops", {}),
     ((KEEP, "http_500"), (KEEP, "http_500"), (KEEP, "http_500_unexpected_body"))),
    ((503, b"", {}), ((KEEP, "http_503"), (KEEP, "http_503"), (KEEP, "http_503"))),
    ((503, b"", WAITS), ((WAIT, "http_503"), (KEEP, "http_503"), (KEEP, "http_503"))),
]


def channels(seam: HttpPost) -> list[Channel]:
    return [JsonWebhook("hook", "https://hooks.example/x", 5.0, seam),
            AlertmanagerChannel("am", "https://am.example", 5.0, None, seam),
            SlackWebhook("slack", "https://hooks.slack.example/x", 5.0, seam)]


@pytest.mark.parametrize(("answer", "verdicts"), VERDICTS,
                         ids=[f"{status}-{body.decode()}-{len(headers)}"
                              for (status, body, headers), _ in VERDICTS])
def test_each_channel_reads_each_answer_as_it_always_did(
    answer: tuple[int, bytes, Mapping[str, str]], verdicts: tuple[tuple[str, object], ...]
) -> None:
    seam = CannedPost([HttpResponse(*answer)])

    results = [channel.send([make_event()], T0) for channel in channels(seam)]

    assert [(result.outcome, result.error) for result in results] == list(verdicts)
    for result in results:
        assert result.retry_after == (17.0 if result.outcome == WAIT else None)


def delivery_table() -> dict[str, list[str]]:
    """The README's delivery table: channel -> (delivered, retried, deferred, set aside)."""
    text = README.read_text(encoding="utf-8")
    start = text.index("| Channel | Delivered when |")
    rows = text[start:].split("\n\n")[0].splitlines()[2:]
    cells = [[cell.strip() for cell in row.strip("|").split("|")] for row in rows]
    return {row[0].split(" (")[0]: row[1:] for row in cells}


def test_the_readme_delivery_table_says_what_the_rules_do() -> None:
    table = delivery_table()
    assert set(table) == {"Slack incoming webhook", "Alertmanager", "generic JSON webhook",
                          "email over SMTP"}
    # The email channel's rules are SMTP's (tests/notify/test_email.py holds them): a 4xx
    # keeps the batch, a 5xx sets it aside, nothing is deferred by a server's word.
    _, retried, deferred, dead = table["email over SMTP"]
    assert "any 4xx" in retried and dead.startswith("any 5xx") and deferred == ""
    slack_dead = table["Slack incoming webhook"][3]
    assert slack_dead == ", ".join(str(status) for status in sorted(PERMANENT_STATUSES))
    later = sorted(TRANSIENT_CLIENT_STATUSES - {429})
    for name in ("Alertmanager", "generic JSON webhook"):
        _, retried, deferred, dead = table[name]
        assert all(str(status) in retried for status in later), name
        assert deferred.startswith("429") and dead == "every other 4xx"
    assert "503 with `Retry-After`" in table["generic JSON webhook"][2]
