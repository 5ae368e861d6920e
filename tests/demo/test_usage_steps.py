"""How the demo judges a usage page's answer, and how it reads one: a redirect to the login
form, a wrong type, a drawing that is not one, text that is missing: each said, never passed."""

from __future__ import annotations

import http.cookiejar
import socket

import pytest

from clusterwatch.demo.monitor_steps import DemoError
from clusterwatch.demo.usage_jobs import plans
from clusterwatch.demo.usage_steps import UsagePage, fetch, page_problem, pages
from clusterwatch.loopback.http_recorder import HttpRecorder, ScriptedResponse

JOB_PAGE = UsagePage("/usage/jobs/81203/", "a job", "text/html", ("81203", "align-reads"))
PLOT = UsagePage("/plot/81202/cpu", "a plot", "image/png", starts=b"\x89PNG")


def test_a_page_with_its_type_and_text_passes() -> None:
    assert page_problem(JOB_PAGE, 200, "text/html; charset=utf-8",
                        b"<h1>Job 81203: align-reads</h1>") is None
    assert page_problem(PLOT, 200, "image/png", b"\x89PNG\r\n\x1a\n...") is None


@pytest.mark.parametrize(("page", "status", "content_type", "body", "problem"), [
    (JOB_PAGE, 302, "text/html", b"", "answered 302, not 200"),
    (JOB_PAGE, 503, "text/html", b"Prometheus is unavailable", "answered 503, not 200: "
     "Prometheus is unavailable"),
    (JOB_PAGE, 200, "text/plain", b"81203 align-reads", "answered 'text/plain', not text/html"),
    (JOB_PAGE, 200, "text/html", b"<h1>Job 81203</h1>", "does not show 'align-reads'"),
    (PLOT, 200, "image/png", b"<html>not a drawing</html>", "does not start as image/png does"),
    (PLOT, 200, "", b"\x89PNG", "answered '', not image/png"),
])
def test_a_wrong_answer_is_said(page: UsagePage, status: int, content_type: str, body: bytes,
                                problem: str) -> None:
    assert page_problem(page, status, content_type, body) == problem


def test_every_job_page_must_show_its_warnings() -> None:
    listed = {page.path: page for page in pages(plans(1_800_000_000.0))}
    assert set(listed["/usage/jobs/81203/"].shows) == {"81203", "align-reads",
                                                      "low_cpu_efficiency", "unbalanced_cores"}
    assert set(listed["/usage/jobs/81201/"].shows) == {"81201", "lattice-sim"}
    assert [page.path for page in listed.values() if page.staff] == ["/usage/staff/"]


def test_it_reads_a_redirect_as_an_answer_with_the_sessions_cookie() -> None:
    cookies = http.cookiejar.CookieJar()
    cookies.set_cookie(http.cookiejar.Cookie(
        0, "sessionid", "abc", None, False, "127.0.0.1", False, False, "/", True, False, None,
        True, None, None, {}))
    with HttpRecorder([ScriptedResponse(302, b"", {"Location": "/accounts/login/"})]) as server:
        status, content_type, _ = fetch(server.url, "/usage/users/alice/", cookies)
        (request,) = server.requests
    assert status == 302 and content_type == ""
    assert request.headers["cookie"] == "sessionid=abc"


def test_a_server_that_is_gone_is_a_demo_error() -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    with pytest.raises(DemoError, match=f"127.0.0.1:{port}/usage/ gave no answer"):
        fetch(f"http://127.0.0.1:{port}", "/usage/", http.cookiejar.CookieJar())
