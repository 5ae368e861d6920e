from __future__ import annotations

import datetime as dt

from clusterwatch.monitor.pages.panda_job_page import (
    PushSeen,
    clean_queue_name,
    job_page,
    job_queue,
)
from clusterwatch.monitor.pages.stored import StoredRecord
from clusterwatch.monitor.pages.why import WhyKind
from tests.monitor.records import QUEUE, all_fetches_failing, example, parse, recent

NOW = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.timezone.utc)
EARLY = NOW - dt.timedelta(minutes=30)
LATE = NOW - dt.timedelta(minutes=10)


def test_it_takes_the_queue_from_the_newest_push_over_the_one_asked() -> None:
    pushes = [PushSeen("h1", 11, "OLD_QUEUE", EARLY), PushSeen("h2", 12, QUEUE, LATE)]
    chosen = job_queue(pushes, "SOMETHING_ELSE")
    assert (chosen.queue, chosen.source) == (QUEUE, "push")


def test_it_takes_the_queue_asked_when_no_harvester_pushed_the_job() -> None:
    assert job_queue([], QUEUE).source == "asked"
    assert job_queue([], None).queue is None


def test_it_cleans_the_queue_asked() -> None:
    assert clean_queue_name("  BNL_PanDA_1 ") == "BNL_PanDA_1"
    assert clean_queue_name("   ") is None and clean_queue_name(None) is None
    assert clean_queue_name("x" * 201) is None


def test_it_shows_the_last_fetch_of_the_jobs_queue_and_the_worker() -> None:
    record = recent(all_fetches_failing(example()), NOW - dt.timedelta(minutes=1))
    stored = [StoredRecord("pandaharvester01", 5, record, parse(record["collected_at"]))]
    pushes = [PushSeen("pandaharvester01", 8812345, QUEUE, LATE)]
    page = job_page(6723451, pushes, None, stored, NOW, 300)
    assert page.queue == QUEUE and page.queue_source == "push"
    assert not page.needs_queue and not page.queue_unknown
    assert page.pushes[0].workerid == 8812345 and str(page.pushes[0].at).endswith("10 min ago")
    assert page.queue_page is not None
    fetch = page.queue_page.panels[0].fetching
    assert fetch.last is not None and fetch.last.error_class == "SSLError"
    assert page.queue_page.why.kind is WhyKind.FETCH_FAILING


def test_it_asks_for_the_queue_when_it_is_unknown() -> None:
    page = job_page(1, [], None, [], NOW, 300)
    assert page.needs_queue and page.queue_page is None and not page.queue_unknown


def test_it_says_when_no_harvester_reported_the_queue_asked() -> None:
    page = job_page(1, [], "NOWHERE", [], NOW, 300)
    assert page.queue_unknown and page.asked_queue == "NOWHERE"
