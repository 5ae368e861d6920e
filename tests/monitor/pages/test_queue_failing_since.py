"""The queue page's last-fetch rows say "Failing since" from a 1.9 record's streak (issue 21);
an older record's rows are what they were."""

from __future__ import annotations

import datetime as dt

from clusterwatch.monitor.pages.queue_logs import fetching
from clusterwatch.monitor.pages.queue_rows import fetch_last_rows
from clusterwatch.monitor.record.host_record import parse_record
from tests.monitor.alarms.support import T0, fetch_queue, make_record, utc

NOW = dt.datetime.fromtimestamp(T0 + 60, tz=dt.timezone.utc)
HOSTILE = "<script>alert(1)</script>"


def rows(queue: dict[str, object]) -> str:
    record = parse_record(make_record(queues={"BNL_PanDA_1": queue}))
    return str(fetch_last_rows(fetching(record, "BNL_PanDA_1", NOW)))


def test_it_says_since_when_the_queue_fails_and_with_what() -> None:
    queue = fetch_queue(2, {"SSLError": 2})
    queue.update(last_ok_at=utc(T0 - 400), failing_since=utc(T0 - 330),
                 failing_errors={"SSLError": 5, HOSTILE: 1})
    shown = rows(queue)
    assert ('<tr><th>Failing since</th><td><span class="bad-text"><time datetime='
            '"2026-10-02T18:21:35Z">2026-10-02 18:21:35Z</time>, <span class="age">6 min ago'
            "</span></span> (") in shown
    assert '(<span class="error-class">SSLError</span> 5, <span class="error-class">' \
           "&lt;script&gt;alert(1)&lt;/script&gt;</span> 1)</td></tr>" in shown
    assert "<script>" not in shown


def test_an_older_record_or_a_working_queue_has_no_such_row() -> None:
    older = fetch_queue(2, {"SSLError": 2})
    working = {**fetch_queue(3), "last_ok_at": utc(T0), "failing_since": None,
               "failing_errors": {}}
    assert "Failing since" not in rows(older)
    assert rows(working) == rows(fetch_queue(3))  # the rows of before, byte for byte
