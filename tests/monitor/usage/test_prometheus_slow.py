"""A slow Prometheus holds a report no longer than CLUSTERWATCH_PROMETHEUS_TIMEOUT_S: one
report asks 19 queries, and a server that answers each one just within a per-query deadline
would hold a page 19 times as long, past gunicorn's worker timeout (60 s: the worker is
killed and the proxy answers 502), where the issue asks for a 503 with a plain message. The
queries of one report share one deadline; a server dripping its answer, or down, is a 503
within it too."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator

import pytest
from django.test import Client

from clusterwatch.loopback.dripping_server import DrippingServer
from clusterwatch.loopback.http_recorder import RecordedRequest, ScriptedResponse
from clusterwatch.monitor.usage.config import get_config
from tests.monitor.usage.page_support import client_of
from tests.monitor.usage.prometheus_range import RangePrometheus
from tests.monitor.usage.site import UsageSite

pytestmark = pytest.mark.django_db

DEADLINE_S = 2.0
# The accounting call, Django, a loaded machine: one-sided slack, still short of what a
# per-query deadline would let 19 slow answers (7.6 s) or the dripping one (over 20 s) take.
SLACK_S = 3.0


class SlowPrometheus(RangePrometheus):
    """Every answer right, each one `delay` s late."""

    delay = 0.4

    def respond(self, request: RecordedRequest) -> ScriptedResponse:
        return dataclasses.replace(super().respond(request), delay=self.delay)


@pytest.fixture
def deadline(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("CLUSTERWATCH_PROMETHEUS_TIMEOUT_S", str(DEADLINE_S))
    get_config.cache_clear()
    yield
    get_config.cache_clear()


@pytest.fixture
def alice() -> Client:
    client = client_of("alice")
    client.raise_request_exception = False
    client.get("/usage/users/nobody/")  # the first request loads the URLconf (matplotlib)
    return client


def timed_get(client: Client, path: str) -> tuple[int, bytes, float]:
    began = time.monotonic()
    answer = client.get(path)
    return answer.status_code, answer.content, time.monotonic() - began


def test_a_prometheus_slow_on_every_query_is_a_503_within_the_deadline(
        usage_site: UsageSite, deadline: None, monkeypatch: pytest.MonkeyPatch,
        alice: Client) -> None:
    with SlowPrometheus() as slow:
        start, _end = usage_site.job("4242")
        slow.add("jobs_info", {"jobid": "4242", "instance": "node01"},
                 [(start.timestamp() + 30 * i, 1.0) for i in range(121)])
        monkeypatch.setenv("CLUSTERWATCH_PROMETHEUS_URL", slow.url)
        get_config.cache_clear()
        status, body, took = timed_get(alice, "/api/v1/jobs/4242/usage")
        assert status == 503 and b"Prometheus is unavailable (timeout)" in body, body
        assert took < DEADLINE_S + SLACK_S, f"held {took:.1f} s"
        assert len(slow.queries) < 19  # it stopped asking once the deadline had passed
        status, body, took = timed_get(alice, "/usage/jobs/4242/")
        assert status == 503 and b"Prometheus is unavailable (timeout)" in body
        assert took < DEADLINE_S + SLACK_S, f"held {took:.1f} s"


def test_a_prometheus_that_answers_in_time_gives_the_whole_report(
        usage_site: UsageSite, deadline: None, monkeypatch: pytest.MonkeyPatch,
        alice: Client) -> None:
    with SlowPrometheus() as slow:
        slow.delay = 0.01
        start, end = usage_site.job("4242")
        usage_site.prometheus = slow
        usage_site.measured("4242", start, end, busy_cpus=1.0, memory_bytes=1024**3)
        monkeypatch.setenv("CLUSTERWATCH_PROMETHEUS_URL", slow.url)
        get_config.cache_clear()
        status, body, _took = timed_get(alice, "/api/v1/jobs/4242/usage")
        assert status == 200 and b'"measured": true' in body, body


def test_a_dripping_prometheus_is_a_503_within_the_deadline(
        usage_site: UsageSite, deadline: None, monkeypatch: pytest.MonkeyPatch,
        alice: Client) -> None:
    usage_site.job("4242")
    body = b'{"status": "success", "data": {"resultType": "matrix", "result": []}}'
    with DrippingServer(body, headers={"Content-Type": "application/json"},
                        interval=0.2) as dripping:
        monkeypatch.setenv("CLUSTERWATCH_PROMETHEUS_URL", dripping.url)
        get_config.cache_clear()
        status, answer, took = timed_get(alice, "/api/v1/jobs/4242/usage")
    assert status == 503 and b"Prometheus is unavailable (timeout)" in answer, answer
    assert took < DEADLINE_S + SLACK_S, f"held {took:.1f} s"
