"""A Prometheus answer longer than one query may bring (MAX_ANSWER_BYTES, 64 MiB: 70 MB were
seen) is refused unread; the reader is told that Prometheus answered and what was wrong
with the answer, not that Prometheus "cannot be reached". The limit is lowered here so a
small answer is over it."""

from __future__ import annotations

import pytest

from clusterwatch.monitor.usage.metrics import prometheus_api
from tests.monitor.usage.page_support import client_of, text_of
from tests.monitor.usage.site import UsageSite

pytestmark = pytest.mark.django_db
LIMIT = 100


@pytest.fixture
def measured(usage_site: UsageSite, monkeypatch: pytest.MonkeyPatch) -> UsageSite:
    start, end = usage_site.job("4242", running=True, state="RUNNING")
    usage_site.measured("4242", start, end, busy_cpus=1.0, memory_bytes=2**30)
    monkeypatch.setattr(prometheus_api, "MAX_ANSWER_BYTES", LIMIT)
    return usage_site


def test_an_answer_over_the_limit_says_prometheus_answered_too_much(measured: UsageSite) -> None:
    client = client_of("alice")
    answer = client.get("/api/v1/jobs/4242/usage")
    assert answer.status_code == 503
    error = answer.json()["error"]
    assert "Prometheus answered, but not usably (too_large)" in error, error
    assert "over 100 bytes, more than one query may bring" in error
    assert "cannot be reached" not in error and "unavailable" not in error
    page = client.get("/usage/jobs/4242/")
    assert page.status_code == 503
    assert "Prometheus answered, but not usably (too_large)" in text_of(page)
    assert measured.prometheus.url not in error + text_of(page)


def test_the_headline_says_whether_prometheus_answered() -> None:
    assert prometheus_api.PrometheusError("too_large", "x").headline == (
        "Prometheus answered, but not usably (too_large)"
    )
    assert prometheus_api.PrometheusError("down", "x").headline == (
        "Prometheus is unavailable (down)"
    )
