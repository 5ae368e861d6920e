"""The IRI client against the loopback IRI API over HTTPS (test CA): a file read through a
view task, and every way the read fails, each with its kind and a one-line message."""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Optional

import pytest

from clusterwatch.http_client import HttpResponse, request
from clusterwatch.loopback.fake_iri import NO_USER, OUTAGE, FakeIri
from clusterwatch.monitor.panda.iri.client import VIEW_CAP_BYTES, view_file
from clusterwatch.monitor.panda.iri.errors import KINDS, IriError
from tests.monitor.panda.iri_support import CONFIG, CONFIG_PATH, RESOURCE, TOKEN

pytestmark = pytest.mark.usefixtures("trusting")
# Seconds a bounded wait may overrun on a loaded machine: a deadline, not the premise. What
# the bounds below tell apart is the client's own limit from the next one that would end the
# wait (max_wait_s 10, timeout_s 30, or never: the fake holds its answer until the test ends).
MARGIN = 3.0


def read(iri: FakeIri, path: str = CONFIG_PATH, token: str = TOKEN, **options: Any) -> bytes:
    settings: dict[str, Any] = {"timeout_s": 5.0, "poll_interval_s": 0.05, "max_wait_s": 10.0}
    settings.update(options)
    return view_file(iri.base_url, RESOURCE, path, token, **settings)


def failure(iri: FakeIri, **options: Any) -> IriError:
    with pytest.raises(IriError) as info:
        read(iri, **options)
    return info.value


class FakeClock:
    """Time that passes only when the client sleeps: polls counted without waiting."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def test_it_reads_the_file_through_a_view_task_and_its_polls(iri: FakeIri) -> None:
    assert read(iri) == CONFIG
    view, *polls = iri.requests
    assert view.route == f"/api/v1/filesystem/view/{RESOURCE}"
    assert view.query == {"path": [CONFIG_PATH], "size": [str(VIEW_CAP_BYTES)], "offset": ["0"]}
    assert [poll.route.rsplit("/", 1)[0] for poll in polls] == ["/api/v1/task"] * 2
    assert {r.headers["authorization"] for r in iri.requests} == {f"Bearer {TOKEN}"}


def test_it_polls_every_interval_until_the_task_completes(iri: FakeIri) -> None:
    iri.polls_before_done = 4
    clock = FakeClock()
    assert read(iri, poll_interval_s=2.0, max_wait_s=60.0, clock=clock,
                sleep=clock.sleep) == CONFIG
    assert clock.sleeps == [2.0] * 4
    assert len(iri.requests) == 1 + 5  # the view, four unfinished polls, the finished one


def test_it_gives_up_on_a_task_that_never_finishes_by_max_wait(iri: FakeIri) -> None:
    iri.polls_before_done = 10**9
    clock = FakeClock()
    error = failure(iri, poll_interval_s=2.0, max_wait_s=10.0, clock=clock, sleep=clock.sleep)
    assert error.kind == "timeout" and error.status is None
    assert str(error) == "IRI view task not finished within 10 s (still active)"
    assert sum(clock.sleeps) <= 10.0  # no sleep that could only end in a failure


def test_it_ends_by_max_wait_in_real_time_too(iri: FakeIri) -> None:
    iri.polls_before_done = 10**9
    started = time.monotonic()
    assert failure(iri, poll_interval_s=0.1, max_wait_s=0.8).kind == "timeout"
    assert time.monotonic() - started < 0.8 + MARGIN


def test_it_waits_for_answers_held_back_less_than_its_timeout(iri: FakeIri) -> None:
    iri.delay_s = 0.3
    assert read(iri, timeout_s=5.0) == CONFIG


def test_it_reports_an_answer_held_back_past_its_timeout(iri: FakeIri) -> None:
    iri.hold = True
    started = time.monotonic()
    error = failure(iri, timeout_s=0.5)
    assert (error.kind, str(error)) == (
        "timeout", "IRI API gave no answer to the view request within 0.5 s")
    assert time.monotonic() - started < 0.5 + MARGIN


def test_it_lets_no_request_outlast_max_wait(iri: FakeIri) -> None:
    iri.hold = True
    started = time.monotonic()
    assert failure(iri, timeout_s=30.0, max_wait_s=0.6).kind == "timeout"
    assert time.monotonic() - started < 0.6 + MARGIN


def test_it_reports_a_token_the_api_refuses_with_its_401(iri: FakeIri) -> None:
    error = failure(iri, token="expired-0c1d2e3f")
    assert (error.kind, error.status) == ("unauthorized", 401)
    assert str(error) == ("IRI API refused the token (HTTP 401 to the view request): "
                          "Invalid API key")


def test_it_reports_a_403_as_unauthorized(iri: FakeIri) -> None:
    iri.fail_all = NO_USER
    error = failure(iri)
    assert (error.kind, error.status) == ("unauthorized", 403)
    assert str(error).endswith("(HTTP 403 to the view request): " + NO_USER[1])


@pytest.mark.parametrize("status", [500, 502, 503, 504])
def test_it_reports_a_server_error_as_unavailable(iri: FakeIri, status: int) -> None:
    iri.fail_all = (status, OUTAGE[1])
    error = failure(iri)
    assert (error.kind, error.status) == ("unavailable", status)
    assert str(error) == (f"IRI API unavailable (HTTP {status} to the view request): "
                          "An unexpected error occurred")


def test_it_reports_the_outage_that_starts_while_it_polls(iri: FakeIri) -> None:
    iri.polls_before_done = 3
    calls = []

    def outage_after_two(method: str, url: str, body: Optional[bytes],
                         headers: Optional[Mapping[str, str]], timeout: float,
                         max_body: int) -> HttpResponse:
        calls.append(url)
        if len(calls) > 2:
            iri.fail_all = OUTAGE
        return request(method, url, body, headers, timeout, max_body)

    error = failure(iri, http=outage_after_two)
    assert (error.kind, error.status) == ("unavailable", 500)
    assert "HTTP 500 to the task poll" in str(error)
    assert len(calls) == 3  # not retried: the next timer run tries again


def test_it_reports_a_failed_task_with_the_apis_reason(iri: FakeIri) -> None:
    error = failure(iri, path="/global/cfs/cdirs/m1234/harvester/missing.json")
    assert error.kind == "failed"
    assert str(error) == ("IRI view task failed: Error: /global/cfs/cdirs/m1234/harvester/"
                          "missing.json: No such file or directory")


def test_it_reports_a_canceled_task(iri: FakeIri) -> None:
    iri.outcome = "canceled"
    error = failure(iri)
    assert (error.kind, str(error)) == ("canceled", "IRI view task was canceled")


def test_it_refuses_a_file_the_view_cuts_at_5_mib(iri: FakeIri) -> None:
    iri.files[RESOURCE]["/big.json"] = b"[" + b"0," * VIEW_CAP_BYTES + b"0]"
    error = failure(iri, path="/big.json")
    assert error.kind == "too_large"
    assert str(error) == ("the file is 5 MiB or more, what the IRI API's view returns at most: "
                          "not read")


def test_it_reads_a_file_just_under_the_cap(iri: FakeIri) -> None:
    iri.files[RESOURCE]["/large.json"] = content = b"\x01" * (VIEW_CAP_BYTES - 1)
    assert read(iri, path="/large.json") == content  # \u0001 six bytes each in the JSON


@pytest.mark.parametrize(("where", "message"), [
    ("view", "IRI API's answer to the view request is not a JSON object"),
    ("task", "IRI API's answer to the task poll is not a JSON object"),
])
def test_it_reports_an_answer_that_is_not_json_as_garbage(iri: FakeIri, where: str,
                                                         message: str) -> None:
    iri.garbage = where
    error = failure(iri)
    assert (error.kind, str(error)) == ("garbage", message)


@pytest.mark.parametrize("task_id", ["../account/projects", "a?path=/etc/passwd", "", "x" * 201])
def test_it_refuses_a_task_id_that_would_steer_its_next_request(iri: FakeIri,
                                                               task_id: str) -> None:
    iri.task_id = task_id
    error = failure(iri)
    assert error.kind == "garbage" and "task_id" in str(error)
    assert len(iri.requests) == 1  # the view alone: nothing was sent to the steered path


def test_it_reports_an_unknown_resource_as_refused(iri: FakeIri) -> None:
    with pytest.raises(IriError) as info:
        view_file(iri.base_url, "no-such-resource", CONFIG_PATH, TOKEN, timeout_s=5.0)
    assert (info.value.kind, info.value.status) == ("refused", 404)
    assert str(info.value) == ("IRI API refused the view request (HTTP 404): "
                               "Resource no-such-resource not found")


def test_it_documents_every_kind_of_failure() -> None:
    docs = (Path(__file__).parents[3] / "docs" / "monitor.md").read_text()
    section = docs.split("## NERSC IRI API client\n", 1)[1].split("\n## ", 1)[0]
    documented = [line.split("|")[1].strip(" `") for line in section.splitlines()
                  if line.startswith("| `")]
    assert documented == list(KINDS)
    assert f"size={VIEW_CAP_BYTES}" in section
