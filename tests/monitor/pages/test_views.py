"""The pages through Django's test client: login, contents, 404s, escaping."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from clusterwatch.monitor.core.operators import set_operator
from clusterwatch.monitor.ingest import tokens
from tests.monitor.records import (
    QUEUE,
    SSL_MESSAGE,
    all_fetches_failing,
    as_key,
    example,
    fresh,
    no_jobs,
    recent,
    store,
    with_database,
)
from tests.support.page_text import text_of

pytestmark = pytest.mark.django_db
PAGES = ["/hosts/", "/queues/", f"/queues/{QUEUE}/", "/jobs/", "/jobs/6723451/"]


@pytest.mark.parametrize("url", PAGES)
def test_it_sends_anonymous_visitors_to_the_login_page(client: Client, url: str) -> None:
    response = client.get(url)
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/?next=")


def test_it_redirects_the_root_to_the_hosts_page(operator: Client) -> None:
    response = operator.get("/")
    assert response.status_code == 302 and response["Location"] == "/hosts/"


def test_it_logs_an_operator_in_and_out(client: Client, django_user_model: Any) -> None:
    set_operator(django_user_model.objects.create_user("operator",
                                                       password="a long pass phrase"), True)
    page = client.get("/accounts/login/")
    assert page.status_code == 200 and b'name="password"' in page.content
    wrong = client.post("/accounts/login/", {"username": "operator", "password": "nope"})
    assert wrong.status_code == 200 and b"errorlist" in wrong.content
    done = client.post("/accounts/login/", {"username": "operator",
                                            "password": "a long pass phrase"})
    assert done.status_code == 302 and done["Location"] == "/"
    assert client.get("/")["Location"] == "/hosts/"  # the usage reports are off here
    hosts = client.get("/hosts/")
    assert re.search(rb'<form method="post" action="/accounts/logout/">', hosts.content)
    out = client.post("/accounts/logout/")
    assert out.status_code == 302
    assert client.get("/hosts/").status_code == 302


def test_it_refuses_other_methods_than_get(operator: Client) -> None:
    assert operator.post("/hosts/").status_code == 405


def test_it_shows_each_host_with_age_stale_mark_failures_and_queues(operator: Client) -> None:
    store(fresh(example(), 2))
    store(as_key(fresh(example(), 40), "osgsub01-harvester"))
    tokens.create(["pandaharvester01", "never01"])
    response = operator.get("/hosts/")
    assert response.status_code == 200
    text = text_of(response)
    assert re.search(r"pandaharvester01 .*\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ, 2 min ago", text)
    assert "STALE silent for 40 min" in text
    assert text.count("STALE silent") == 1
    assert "harvester_db: launch_limits, service_metrics" in text
    assert "cannot read /nonexist" in text
    assert "communicator: 4" in text and "backlog 1" in text
    assert "/: 25.8 % used" in text
    assert f'href="/queues/{QUEUE}/"' in response.content.decode()
    assert "never01 NEVER REPORTED" in text
    assert "pandaharvester01 NEVER REPORTED" not in text


def test_it_says_when_nobody_reported_yet(operator: Client) -> None:
    assert "No reporter has posted a record yet." in text_of(operator.get("/hosts/"))


def test_it_names_the_error_class_and_the_last_error_line_on_the_queue_page(
    operator: Client,
) -> None:
    report = store(fresh(all_fetches_failing(example())))
    response = operator.get(f"/queues/{QUEUE}/")
    assert response.status_code == 200
    text = text_of(response)
    assert "every fetch in the last interval failed with SSLError (6 of 6)" in text
    assert "Error class: SSLError" in text
    assert "CERTIFICATE_VERIFY_FAILED" in text
    html = response.content.decode()
    assert SSL_MESSAGE.replace("'", "&#x27;").replace("<", "&lt;").replace(">", "&gt;") in html
    assert f"Record #{report.pk} of pandaharvester01" in text
    assert re.search(r"collected \d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ, 1 min ago", text)
    assert "STALE" not in text


def test_it_marks_a_stale_queue_page(operator: Client) -> None:
    store(fresh(all_fetches_failing(example()), 25))
    text = text_of(operator.get(f"/queues/{QUEUE}/"))
    assert "harvester silent for 25 min: data is stale" in text and "STALE" in text


def test_it_colours_the_queue_line_by_its_level_word(operator: Client) -> None:
    store(fresh(all_fetches_failing(example()), 25))
    html = operator.get(f"/queues/{QUEUE}/").content.decode()
    assert '<div class="summary bad">' in html


def test_it_shows_every_harvester_serving_the_queue(operator: Client) -> None:
    store(fresh(no_jobs(example())))
    store(as_key(fresh(all_fetches_failing(example())), "pandaharvester02"))
    text = text_of(operator.get(f"/queues/{QUEUE}/"))
    assert "Harvester pandaharvester01" in text and "Harvester pandaharvester02" in text
    assert "pandaharvester01: PanDA has no jobs for this queue" in text
    assert "pandaharvester02: every fetch in the last interval failed with SSLError" in text


def _reasons(record: dict[str, Any], n: int) -> dict[str, Any]:
    record = with_database(record)
    entry = record["harvester_db"]["workers_not_finished"][QUEUE]
    template = next(iter(entry["reasons"].values()))
    entry["reasons"] = {f"held: reason number {i:02d}": dict(template, count=100 - i)
                        for i in range(n)}
    entry["workers"] = sum(group["count"] for group in entry["reasons"].values())
    return record


def test_it_shows_the_largest_reasons_and_links_to_every_reason(operator: Client) -> None:
    store(fresh(_reasons(example(), 8)))
    store(as_key(fresh(_reasons(example(), 2)), "pandaharvester02"))
    text = text_of(operator.get(f"/queues/{QUEUE}/"))
    shown = [i for i in range(8) if f"held: reason number {i:02d}" in text]
    assert shown == [0, 1, 2, 3, 4]  # most workers first
    assert "and 3 more reasons (282 workers)" in text  # 95 + 94 + 93
    assert text.count("show every reason of this harvester") == 1  # not on the short panel
    assert "worker 8812001, batch 1234.0, node042.example.org, gridgk01.example.org" in text
    every = text_of(operator.get(f"/queues/{QUEUE}/", {"reasons": "pandaharvester01"}))
    assert all(f"held: reason number {i:02d}" in every for i in range(8))
    assert "more reasons" not in every and "Harvester pandaharvester02" in every
    odd = operator.get(f"/queues/{QUEUE}/", {"reasons": "nobody"})
    assert odd.status_code == 200 and "and 3 more reasons" in text_of(odd)


def test_it_answers_404_for_a_queue_no_harvester_reported(operator: Client) -> None:
    store(fresh(example()))
    response = operator.get("/queues/NO_SUCH_QUEUE/")
    assert response.status_code == 404
    assert "No harvester reported the queue “NO_SUCH_QUEUE”" in text_of(response)


def test_it_escapes_hostile_strings_from_records(operator: Client) -> None:
    hostile = "<script>alert(1)</script>"
    record = fresh(all_fetches_failing(example(), line=f"failed {hostile} SSLError"))
    record["fetching"]["queues"][hostile] = record["fetching"]["queues"][QUEUE]
    record["hostname"] = hostile
    record["harvester_db"]["launch_limits"] = {"error": hostile}
    store(record)
    for url in ("/hosts/", "/queues/", f"/queues/{QUEUE}/",
                "/queues/%3Cscript%3Ealert(1)%3C/script%3E/"):
        response = operator.get(url)
        assert response.status_code == 200, url
        assert b"<script>" not in response.content, url
    page = operator.get(f"/queues/{QUEUE}/").content.decode()
    assert "failed &lt;script&gt;alert(1)&lt;/script&gt; SSLError" in page
    hosts = operator.get("/hosts/").content.decode()
    assert 'href="/queues/%3Cscript%3Ealert(1)%3C/script%3E/"' in hosts


def test_it_finds_a_queue_from_the_navigation_form(operator: Client) -> None:
    response = operator.get("/queues/", {"queue": f" {QUEUE} "})
    assert response.status_code == 302 and response["Location"] == f"/queues/{QUEUE}/"
    store(fresh(example()))
    listing = text_of(operator.get("/queues/"))
    assert f"{QUEUE} pandaharvester01" in listing and "MWT2_UCORE" in listing


def test_it_shows_the_worker_and_last_fetch_for_a_pushed_job(operator: Client) -> None:
    store(fresh(all_fetches_failing(example())))
    pandaid = example()["submission"]["recent_pushes"][0]["pandaid"]
    response = operator.get(f"/jobs/{pandaid}/")
    assert response.status_code == 200
    text = text_of(response)
    assert f"PanDA job {pandaid}" in text
    assert re.search(r"8812345 pandaharvester01 BNL_PanDA_1 \S+ \S+, \d+ min ago", text)
    assert "(from the harvester's push of this job)" in text
    assert "Last fetch" in text and "Error class SSLError" in text
    assert "every fetch in the last interval failed with SSLError" in text
    assert 'name="queue"' not in response.content.decode().split("<main>")[1]


def test_it_asks_for_the_queue_of_a_job_nobody_pushed(operator: Client) -> None:
    store(fresh(no_jobs(example())))
    asking = operator.get("/jobs/42/")
    assert asking.status_code == 200
    assert "Which PanDA queue is this job activated for?" in text_of(asking)
    answered = operator.get("/jobs/42/", {"queue": QUEUE})
    assert answered.status_code == 200
    assert "PanDA has no jobs for this queue" in text_of(answered)
    unknown = operator.get("/jobs/42/", {"queue": "NOWHERE"})
    assert unknown.status_code == 404
    assert "No harvester reported the queue “NOWHERE”" in text_of(unknown)


def test_it_never_fails_on_odd_job_requests(operator: Client) -> None:
    assert operator.get("/jobs/99999999999999999999999/").status_code == 200
    assert operator.get("/jobs/", {"pandaid": "abc"}).status_code == 400
    assert operator.get("/jobs/", {"pandaid": "99999999999999999999999"}).status_code == 400
    go = operator.get("/jobs/", {"pandaid": "5", "queue": "A B"})
    assert go.status_code == 302 and go["Location"] == "/jobs/5/?queue=A+B"
    assert operator.get("/jobs/5/", {"queue": "x" * 500}).status_code == 200


def test_it_reads_only_the_latest_records_of_the_queue(
    operator: Client, django_assert_max_num_queries: Any,
) -> None:
    now = timezone.now()
    for key in ("h1", "h2", "h3", "h4", "h5"):
        for minutes in (60, 30, 15, 5, 1):  # older records of each key stay in the table
            store(as_key(recent(all_fetches_failing(example()),
                                now - dt.timedelta(minutes=minutes)), key))
    # session, user, the operators-group check, the queue's latest records (one join): the
    # same for 1 or 50 harvesters
    with django_assert_max_num_queries(4):
        response = operator.get(f"/queues/{QUEUE}/")
    assert response.status_code == 200
    assert text_of(response).count("1 min ago") >= 5
    with django_assert_max_num_queries(6):
        assert operator.get("/hosts/").status_code == 200
    with django_assert_max_num_queries(6):
        assert operator.get("/jobs/6723451/").status_code == 200


@pytest.mark.parametrize("target", ["/hosts/", "/queues/", "/jobs/", "/alarms/"])
def test_it_links_every_page_from_the_navigation_bar(operator: Client, target: str) -> None:
    html = operator.get("/hosts/").content.decode()
    nav = html[html.index("<nav"):html.index("</nav>")]
    assert f'href="{target}"' in nav


def test_it_says_when_the_not_finished_counts_are_short(operator: Client) -> None:
    """Past the reporter's limit (the newest 2,000 of 24 hours, issue 19 item 4) every count
    is short: the page says so, and never calls a queue without reasons clean."""
    record = fresh(with_database(example()))
    record["harvester_db"]["workers_not_finished_read"] = {
        "window_s": 86400, "workers": 2000, "limit": 2000, "limit_reached": True}
    store(record)
    text = text_of(operator.get(f"/queues/{QUEUE}/"))
    assert ("More workers of this harvester did not finish in the last 24 h than the 2,000 "
            "(the newest, all queues together) its reporter reads: every count here is short"
            in text)
    assert "2 workers." in text  # the counts still shown
    record["harvester_db"]["workers_not_finished"] = {}
    store(as_key(record, "pandaharvester02"))
    other = text_of(operator.get(f"/queues/{QUEUE}/"))
    assert other.count("every count here is short") == 2
    assert "finished cleanly" not in other
    record["harvester_db"]["workers_not_finished_read"]["limit_reached"] = False
    store(as_key(record, "pandaharvester03"))
    assert "finished cleanly" in text_of(operator.get(f"/queues/{QUEUE}/"))
