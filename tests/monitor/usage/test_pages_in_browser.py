"""The job page and the user page in a real browser: headless Chromium (Debian's) against the
monitor served by gunicorn (clusterwatch.loopback.monitor_server), over a fake sacct and a
loopback Prometheus. A researcher logs in through the login form, reads their job's report
with its plots, sorts and filters their jobs; screenshots are kept in `test-artifacts/`
at the repository root (usage-job.png, usage-user.png)."""

from __future__ import annotations

import html
import re
import secrets
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from clusterwatch.loopback.monitor_server import MonitorServer, monitor_server, private_database
from tests.components import need_binary
from tests.monitor.usage.chromium_pipe import Chromium
from tests.monitor.usage.prometheus_range import RangePrometheus
from tests.monitor.usage.render_support import png_size
from tests.monitor.usage.site import GiB, UsageSite, environment

pytestmark = pytest.mark.integration
ARTIFACTS = Path(__file__).resolve().parents[3] / "test-artifacts"
MIN_SCREENSHOT_BYTES = 20_000  # a page that rendered nothing is a few KB of white
CREATE_USERS = """
import os
from django.contrib.auth.models import User
password = os.environ["CW_TEST_PASSWORD"]
User.objects.create_user("alice", password=password)
User.objects.create_user("root", password=password, is_staff=True)
"""


@dataclass(frozen=True)
class Stage:
    server: MonitorServer
    browser: Chromium
    password: str = field(repr=False)  # never in a failing test's report


def visible_text(dom: str) -> str:
    body = dom.split("<body", 1)[-1]
    body = re.sub(r"<(style|script)\b.*?</\1>", " ", body, flags=re.S)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", body)).split())


def jobs_of_alice(site: UsageSite) -> None:
    """Job 4242 (1 of 2 CPUs busy, 200 MiB of 8 GiB), a well-behaved 4243, a running 4244,
    a failed one with a hostile name, 20 older ones; bob's 5000."""
    now = datetime.now(timezone.utc).replace(microsecond=0)
    start, end = site.job("4242", start=now - timedelta(hours=5), hours=2, name="md-run",
                          total_cpu="02:00:00")
    site.measured("4242", start, end, busy_cpus=1.0, memory_bytes=200 * 1024**2)
    start, end = site.job("4243", start=now - timedelta(hours=9), hours=3, req_mem="4G",
                          total_cpu="06:00:00", max_rss="3G", name="well-sized")
    site.measured("4243", start, end, busy_cpus=2.0, memory_bytes=3 * GiB)
    site.job("4244", start=now - timedelta(minutes=40), running=True, state="RUNNING",
             name="still going")
    site.job("4245", start=now - timedelta(days=2), state="FAILED",
             name="<script>alert(1)</script>", total_cpu="00:05:00")
    for number in range(20):
        site.job(str(4100 + number), start=now - timedelta(days=3 + number), cpus=4,
                 total_cpu=f"0{number % 4 + 1}:00:00", state=("COMPLETED", "TIMEOUT")[number % 2])
    site.job("5000", user="bob")


@pytest.fixture(scope="module")
def stage(tmp_path_factory: pytest.TempPathFactory,
          migrated_database: dict[str, str]) -> Iterator[Stage]:
    """One monitor and one browser for the module's tests (each starts in minutes)."""
    binary = need_binary("chromium")
    tmp_path = tmp_path_factory.mktemp("browser")
    password = secrets.token_urlsafe(16)
    with RangePrometheus() as prometheus:
        site = UsageSite(tmp_path, prometheus)
        jobs_of_alice(site)
        with private_database(tmp_path, template=migrated_database) as database, \
                monitor_server(tmp_path / "data", database=database, migrate=False,
                               extra_environ=environment(site), workers=2) as server:
            server.manage("shell", "-c", CREATE_USERS,
                          extra_environ={"CW_TEST_PASSWORD": password})
            browser = Chromium(binary, tmp_path)
            try:
                yield Stage(server, browser, password)
            finally:
                browser.close()


def screenshot(browser: Chromium, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    target = ARTIFACTS / name
    target.unlink(missing_ok=True)
    width, height = browser.screenshot(target)
    data = target.read_bytes()
    assert len(data) > MIN_SCREENSHOT_BYTES, "a screenshot this small shows (almost) nothing"
    assert png_size(data) == (width, height)
    return target


def test_it_shows_a_job_and_its_plots_to_its_owner_in_a_browser(stage: Stage) -> None:
    browser, base = stage.browser, stage.server.url
    browser.open(f"{base}/usage/jobs/4242/")
    assert browser.evaluate("location.pathname") == "/accounts/login/"
    browser.submit_login("alice", stage.password)
    assert browser.evaluate("location.pathname") == "/usage/jobs/4242/"
    dom = browser.dom()
    assert "<script" not in dom  # the pages need no JavaScript
    text = visible_text(dom)
    assert "Job 4242 “md-run”" in text and "2 things to change in the job script" in text
    assert "CPU 2 CPUs 1.00 CPUs on average (7,200 CPU-seconds) 50.0 %" in text
    assert "Low CPU efficiency" in text and "Memory over-requested" in text
    assert "Memory, explained" in text and "Slurm's MaxRSS (sacct) 200.0 MiB" in text
    shown_tables = browser.evaluate(
        "[...document.querySelectorAll('table')].filter(t => t.offsetHeight > 40).length")
    assert shown_tables >= 4  # the header, asked vs used, each warning's figures, memory
    images = browser.evaluate(
        "[...document.images].map(i => [i.getAttribute('src'), i.complete, i.naturalWidth,"
        " i.naturalHeight, i.getBoundingClientRect().width])")
    assert [src for src, *_ in images] == [
        "/plot/4242/cpu", "/plot/4242/cpu_time", "/plot/4242/memory", "/plot/4242/threads",
        "/plot/4242/open_files", "/pie/4242/"]
    for src, complete, width, height, shown in images:
        assert complete and (width, height) == ((600, 400) if "pie" in src else (800, 360)), src
        assert shown > 300, f"{src} is drawn {shown} px wide"
    screenshot(browser, "usage-job.png")


def test_it_lists_sorts_and_filters_a_users_jobs_in_a_browser(stage: Stage) -> None:
    browser, base = stage.browser, stage.server.url
    browser.open(f"{base}/accounts/login/?next=/usage/jobs/4243/")
    browser.submit_login("alice", stage.password)  # the ended jobs' pages keep their summaries
    browser.open(f"{base}/usage/jobs/4242/")
    browser.open(f"{base}/usage/users/alice/")
    text = visible_text(browser.dom())
    assert "Jobs of alice 24 jobs that ran in the last 30 days; 1 of 24 with warnings" in text
    assert re.search(r"4242 md-run COMPLETED \d{4}-\d\d-\d\d \d\d:\d\d 2 50\.0 % 8\.0 GiB "
                     r"200\.0 MiB 2\.4 % 0 2 h 2 h Low CPU efficiency Memory over-requested "
                     r"4243 well-sized", text)
    assert "&lt;script&gt;" in browser.dom() and "<script" not in browser.dom()
    rows = browser.evaluate("document.querySelectorAll('tbody tr').length")
    assert rows == 24
    assert browser.evaluate("document.querySelector('table.wide').offsetHeight") > 500
    screenshot(browser, "usage-user.png")

    # A click on a heading sorts by it: plain links, no script.
    browser.evaluate("[...document.querySelectorAll('th a')].find("
                     "a => a.textContent === 'CPU eff.').click(); true")
    browser.wait_for("Page.loadEventFired")
    assert "sort=cpu_efficiency&order=asc" in browser.evaluate("location.search")
    efficiencies = browser.evaluate(
        "[...document.querySelectorAll('tbody tr')].map(r => r.cells[5].textContent)")
    measured = [float(e.rstrip(" %")) for e in efficiencies if e.endswith("%")]
    assert measured == sorted(measured) and len(measured) >= 20
    assert efficiencies[-1] == "—"  # the running job, not measured, last

    # The filter form is a plain GET form.
    browser.evaluate("document.querySelector('select[name=state]').value = 'TIMEOUT';"
                     "document.querySelector('form.inline button').click(); true")
    browser.wait_for("Page.loadEventFired")
    states = browser.evaluate(
        "[...document.querySelectorAll('tbody tr')].map(r => r.cells[2].textContent)")
    assert states == ["TIMEOUT"] * 10
    assert "state=TIMEOUT" in browser.evaluate("location.search")


def test_it_shows_someone_elses_job_as_not_found_in_a_browser(stage: Stage) -> None:
    browser, base = stage.browser, stage.server.url
    browser.open(f"{base}/accounts/login/?next=/usage/jobs/5000/")
    browser.submit_login("alice", stage.password)
    text = visible_text(browser.dom())
    assert "Not found No job with this id that you may see." in text
    assert "bob" not in text
