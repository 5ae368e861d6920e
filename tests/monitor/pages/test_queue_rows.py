"""The queue page's table rows made in Python (`pages.queue_rows`, `pages.cells`):
escaped as the template escaped them, job links as `reverse` makes them."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse, set_script_prefix
from django.utils import timezone
from django.utils.html import conditional_escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext_lazy
from hypothesis import given
from hypothesis import strategies as st

from clusterwatch.monitor.core.operators import set_operator
from clusterwatch.monitor.core.stamps import stamp
from clusterwatch.monitor.pages.cells import esc, job_href
from clusterwatch.monitor.pages.failed_calls import FailedCalls
from clusterwatch.monitor.pages.queue_logs import Adjustment, Fetching, LastFetch, Push, Submission
from clusterwatch.monitor.pages.queue_rows import (
    adjust_rows,
    calls_failed,
    calls_rows,
    fetch_interval_rows,
    fetch_last_rows,
    limits_rows,
    not_finished_rows,
    submit_pushes,
    submit_rows,
    workers_rows,
)
from clusterwatch.monitor.pages.queue_workers import LaunchLimits, NotFinished, Reason, WorkerCounts
from tests.monitor.records import QUEUE, example, recent, store

HOSTILE = "<script>alert('x')</script> & \"q\""
ESCAPED = "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; &amp; &quot;q&quot;"
NOW = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.timezone.utc)
AT = stamp("2026-12-01T11:58:00Z", NOW)


@given(st.one_of(st.text(), st.integers(), st.booleans(), st.none(), st.floats()))
def test_it_escapes_as_the_templates_do(value: Any) -> None:
    assert esc(value) == str(conditional_escape(value))


def test_it_keeps_safe_markup_and_escapes_lazy_text() -> None:
    assert esc(mark_safe("<b>x</b>")) == "<b>x</b>"
    assert esc(gettext_lazy("a < b")) == "a &lt; b"


@pytest.mark.parametrize("pandaid", [1, 6723451, 2**63 + 5])
def test_it_links_a_job_as_reverse_does(pandaid: int) -> None:
    assert job_href(pandaid) == reverse("monitor-job", args=[pandaid])


def test_it_links_a_job_under_the_script_prefix_of_the_request() -> None:
    try:
        set_script_prefix("/monitor/")
        assert job_href(5) == "/monitor/jobs/5/" == reverse("monitor-job", args=[5])
    finally:
        set_script_prefix("/")
    assert job_href(5) == "/jobs/5/"


def test_it_escapes_every_record_string_in_the_fetch_rows() -> None:
    fetch = Fetching("s", None, True, 3, 3, [(HOSTILE, 3)], 9, None,
                     LastFetch(AT, HOSTILE, 9, None, HOSTILE, HOSTILE), None)
    last, interval = str(fetch_last_rows(fetch)), str(fetch_interval_rows(fetch))
    assert "<script>" not in last + interval
    assert f'<span class="bad-text">failed</span>: {ESCAPED}</td>' in last
    assert f'<span class="error-class">{ESCAPED}</span>' in last
    assert f'9 / — <span class="muted">(prodSourceLabel={ESCAPED})</span>' in last
    assert "<tr><th>Last time jobs arrived</th><td>—</td></tr>" in last
    assert '<td class="num"><span class="bad-text">3</span></td>' in interval
    assert f'with <span class="error-class">{ESCAPED}</span></th><td class="num">3</td>' in interval
    assert '<tr><th>Jobs got</th><td class="num">—</td></tr>' in interval


def test_it_says_a_fetch_found_no_jobs_or_worked() -> None:
    def outcome(text: str) -> str:
        fetch = Fetching("s", None, True, 1, 0, [], 1, 0,
                         LastFetch(None, None, None, None, text, None), None)
        return str(fetch_last_rows(fetch))

    assert '<td><span class="warn-text">no jobs in PanDA</span></td>' in outcome(
        "no jobs in PanDA")
    assert "<td><span>OK</span></td>" in outcome("OK")
    assert "Error class" not in outcome("OK") and "prodSourceLabel" not in outcome("OK")
    assert str(fetch_last_rows(Fetching("s", None, False, 0, 0, [], None, None, None, None))) == ""


def test_it_links_pushed_jobs_and_shows_odd_ids_unlinked() -> None:
    pushes = [Push(AT, 7, 6723451), Push(None, None, None), Push(AT, 8, 0), Push(AT, 9, -4)]
    html = str(submit_pushes(Submission("s", None, True, 1, 2, [(HOSTILE, None)], None, 3, AT,
                                        pushes)))
    rows = html.split("</tr>")[:-1]
    assert rows[0].endswith('<td>7</td>\n    <td><a href="/jobs/6723451/">6723451</a></td>')
    assert rows[1] == "<tr><td>—</td><td>—</td>\n    <td>—</td>"
    assert rows[2].endswith("<td>8</td>\n    <td>—</td>")
    assert rows[3].endswith("<td>9</td>\n    <td>-4</td>")


def test_it_escapes_the_submission_adjuster_and_call_rows() -> None:
    submit = str(submit_rows(Submission("s", None, True, None, 2, [(HOSTILE, None)], None, 3,
                                        AT, [])))
    assert f'<tr><th>{ESCAPED}</th><td class="num">—</td></tr>' in submit
    assert '<td class="num"><span class="bad-text">2</span></td>' in submit
    assert "<tr><th>Job chunks</th><td>3 at <time " in submit
    adjust = str(adjust_rows(Adjustment("s", None, True, None, None, HOSTILE,
                                        [(HOSTILE, HOSTILE), ("", "7")], HOSTILE)))
    assert f"<td>{ESCAPED} = <strong>—</strong></td>" in adjust
    assert f"<tr><th>Set against</th><td>{ESCAPED}={ESCAPED}, 7</td></tr>" in adjust
    assert f"<tr><th>Message</th><td>{ESCAPED}</td></tr>" in adjust
    bare = str(adjust_rows(Adjustment("s", None, True, None, 4, None, [], None)))
    assert "<td>limit = <strong>4</strong></td>" in bare and "Set against" not in bare
    calls = FailedCalls("communicator", "s", HOSTILE, None, [(HOSTILE, 2)], None, None)
    assert str(calls_failed(calls)) == (
        f'<span class="bad-text">log not readable: {ESCAPED}</span>')
    assert str(calls_rows(calls)) == f'<tr><td>{ESCAPED}</td><td class="num">2</td></tr>'
    quiet = FailedCalls("communicator", "s", None, None, [], None, None)
    assert str(calls_failed(quiet)) == "— failed in the interval"


def test_it_escapes_the_database_rows() -> None:
    limits = str(limits_rows(LaunchLimits("s", None, True, [(HOSTILE, None)],
                                          site_name=HOSTILE)))
    assert f'<tr><th>{ESCAPED}</th><td class="num">—</td></tr>' in limits
    assert f"<tr><th>Site</th><td>{ESCAPED}</td></tr>" in limits
    counts = str(workers_rows(WorkerCounts("s", None, True, [(HOSTILE, 4)])))
    assert counts == f'<tr><td>{ESCAPED}</td><td class="num">4</td></tr>'
    reasons = str(not_finished_rows(NotFinished("s", None, True, 4,
                                                [Reason(HOSTILE, 4, HOSTILE, [])])))
    assert reasons == (f'<tr><td>{ESCAPED}</td><td class="num">4</td><td>{ESCAPED}</td>\n'
                       '    <td><ul class="plain"></ul></td></tr>')
    assert isinstance(not_finished_rows(NotFinished("s")), SafeString)


@pytest.mark.django_db
def test_it_shows_a_queue_page_whose_record_pushed_an_odd_pandaid(
    client: Client, django_user_model: Any,
) -> None:
    user = django_user_model.objects.create_user("operator", password="p" * 20)
    set_operator(user, True)
    client.force_login(user)
    record = recent(example(), timezone.now() - dt.timedelta(minutes=1))
    record["submission"]["recent_pushes"][0].update(queue=QUEUE, pandaid=-4)
    store(record)
    response = client.get(f"/queues/{QUEUE}/")
    assert response.status_code == 200
    assert "<td>-4</td>" in response.content.decode()
