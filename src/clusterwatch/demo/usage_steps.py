"""The usage reports' steps of `clusterwatch monitor demo` (see monitor.py).

A real Prometheus holds the exporter's series of the researcher's four jobs (usage_jobs),
backfilled with promtool before it starts; accounting is a stand-in for `sacct`
(sacct_standin), since the demo runs no Slurm. The monitor under gunicorn reads both, as a
site's monitor reads Prometheus and sacct. The demo reads every usage page through that
gunicorn, as the researcher and as the operator (staff), and checks what each answers.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import time
import urllib.parse
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from http.cookiejar import CookieJar
from pathlib import Path
from typing import IO, Any, Optional

from clusterwatch.demo import usage_jobs
from clusterwatch.demo.monitor_steps import DemoError
from clusterwatch.demo.sacct_lines import job_lines
from clusterwatch.demo.sacct_standin import install
from clusterwatch.loopback.job_series import JobHistory, JobPlan, history
from clusterwatch.loopback.monitor_client import Session
from clusterwatch.loopback.monitor_server import MonitorServer
from clusterwatch.loopback.programs import ProgramFailed
from clusterwatch.loopback.prometheus_history import prometheus_with_history
from clusterwatch.loopback.services import MissingComponent, ServiceStartError, require_binary
from clusterwatch.monitor.core.humanize import size_text

PAGE_TIMEOUT_S = 120.0  # the first PDF of a job is drawn on request (cached afterwards)


@dataclass(frozen=True)
class UsageSources:
    environ: Mapping[str, str]  # the monitor's settings that turn the usage reports on
    jobs: Sequence[JobPlan]


@dataclass(frozen=True)
class UsagePage:
    path: str
    what: str
    content_type: str  # what its Content-Type must start with
    shows: tuple[str, ...] = ()  # text the answer must hold
    starts: bytes = b""  # the first bytes of a drawing or document
    staff: bool = False  # read as the operator (staff), else as the researcher


def check_prerequisites() -> None:
    """Before anything starts: Prometheus and promtool (the series' store) are installed."""
    try:
        require_binary("prometheus")
        require_binary("promtool")
    except MissingComponent as exc:
        raise DemoError(f"{exc} (the usage reports need it)") from None


@contextlib.contextmanager
def sources(data_dir: Path, out: IO[str]) -> Iterator[UsageSources]:
    """Prometheus serving the jobs' series, and the sacct stand-in listing the same jobs."""
    histories = [history(plan) for plan in usage_jobs.plans(time.time())]
    with contextlib.ExitStack() as stack:
        try:
            prometheus = stack.enter_context(prometheus_with_history(
                [one for job in histories for one in job.series], data_dir / "prometheus"))
        except (ProgramFailed, ServiceStartError, MissingComponent) as exc:
            raise DemoError(str(exc)) from None
        out.write(f"  Prometheus on {prometheus.url}: the job exporter's series of "
                  f"{len(histories)} jobs of {usage_jobs.RESEARCHER!r}, every 30 s, "
                  f"backfilled with promtool ({_samples(histories)} samples)\n")
        sacct = install(data_dir / "accounting", [job_lines(job) for job in histories])
        out.write(f"  accounting: {sacct} is a stand-in for Slurm's sacct (this demo runs no "
                  "Slurm): it prints the same jobs as Slurm 22.05's sacct would\n")
        yield UsageSources({"CLUSTERWATCH_PROMETHEUS_URL": prometheus.url,
                            "CLUSTERWATCH_SACCT": str(sacct)},
                           [job.plan for job in histories])


def _samples(histories: Sequence[JobHistory]) -> int:
    return sum(len(one.points) for job in histories for one in job.series)


def summaries(server: MonitorServer, jobs: Sequence[JobPlan], password: str,
              out: IO[str]) -> None:
    """Each job's document from the API as the researcher (which keeps its summary), one line
    each; DemoError when a job's warnings are not the ones its story needs."""
    session = login(server, usage_jobs.RESEARCHER, password)
    out.write(f"  usage reports, read as {usage_jobs.RESEARCHER!r} from "
              "/api/v1/jobs/<jobid>/usage:\n")
    for job in jobs:
        status, _, body = fetch(server.url, f"/api/v1/jobs/{job.jobid}/usage", session.cookies)
        if status != 200:
            raise DemoError(f"/api/v1/jobs/{job.jobid}/usage answered {status}: "
                            f"{body.decode('utf-8', 'replace')[:300]}")
        document = json.loads(body)
        out.write(f"    job {job.jobid} {job.name}: {summary_line(document)}\n")
        problem = story_problem(job.name, {w["code"] for w in document["warnings"]})
        if problem is not None:
            raise DemoError(f"job {job.jobid} ({job.name}) was reported with {problem}")


def story_problem(name: str, codes: set[str]) -> Optional[str]:
    """None when a job's warnings tell its story (its expected codes, more allowed; none
    at all for the well-behaved job), else what differs."""
    expected = usage_jobs.EXPECTED_WARNINGS[name]
    if expected <= codes and (expected or not codes):
        return None
    return f"warnings {sorted(codes) or 'none'}, not {sorted(expected) or 'none'}"


def summary_line(document: Mapping[str, Any]) -> str:
    """`CPU 50% of 2 CPUs; memory 1.4 GiB of 2.0 GiB (68%); warnings: ...`."""
    cpus, cpu = document.get("cpus_allocated"), document.get("cpu_efficiency")
    allocated = f"{cpus} CPU{'' if cpus == 1 else 's'}"
    parts = [f"CPU not measured ({allocated})" if cpu is None else f"CPU {cpu:.0%} of {allocated}"]
    used, asked = document.get("memory_peak_bytes"), document.get("memory_requested_bytes")
    memory = "memory not measured" if used is None else f"memory {size_text(used)}"
    if used is not None and asked:
        memory += f" of {size_text(asked)} ({document.get('memory_efficiency', 0):.0%})"
    parts.append(memory)
    codes = [warning["code"] for warning in document.get("warnings", [])]
    parts.append(f"warnings: {', '.join(codes)}" if codes else "no warning")
    return "; ".join(parts)


def pages(jobs: Sequence[JobPlan]) -> list[UsagePage]:
    by_name = {job.name: job for job in jobs}
    user = usage_jobs.RESEARCHER
    cpu, memory = by_name["align-reads"], by_name["make-figures"]
    bursty, good = by_name["fit-models"], by_name["lattice-sim"]
    ids = tuple(job.jobid for job in jobs)
    html, json_type = "text/html", "application/json"

    def job_page(job: JobPlan, what: str) -> UsagePage:
        codes = tuple(sorted(usage_jobs.EXPECTED_WARNINGS[job.name]))
        return UsagePage(f"/usage/jobs/{job.jobid}/", f"{job.name}: {what}", html,
                         (job.jobid, job.name, *codes))

    return [
        UsagePage("/", "the usage reports: every path, its purpose, a link to each", html,
                  (f"/usage/users/{user}/",)),
        UsagePage(f"/usage/users/{user}/", f"{user}'s jobs, allocated and used side by side",
                  html, ids),
        job_page(cpu, "2 CPUs asked for, one busy (low CPU efficiency)"),
        job_page(memory, "8 GiB asked for, 200 MB used (memory over request)"),
        job_page(bursty, "8 CPUs busy in bursts, idle between them (bursty CPU)"),
        job_page(good, "a well-behaved job: no warning"),
        UsagePage(f"/pdf/{cpu.jobid}", "the report as a PDF (summary, warnings, every plot)",
                  "application/pdf", (cpu.jobid,), starts=b"%PDF-"),
        UsagePage(f"/plot/{bursty.jobid}/cpu", "CPUs busy over the job's life (PNG)",
                  "image/png", starts=b"\x89PNG"),
        UsagePage(f"/pie/{cpu.jobid}/", "user vs system CPU time (PNG)", "image/png",
                  starts=b"\x89PNG"),
        UsagePage(f"/mail/{memory.jobid}", "the end-of-job email", html, (memory.jobid,)),
        UsagePage(f"/api/v1/jobs/{cpu.jobid}/usage", "the job's figures as JSON", json_type,
                  (cpu.jobid,)),
        UsagePage(f"/api/v1/users/{user}", f"{user}'s jobs as JSON", json_type, ids),
        UsagePage("/usage/staff/", "staff: the least efficient recent jobs", html,
                  (cpu.jobid, bursty.jobid), staff=True),
    ]


def check_pages(server: MonitorServer, urls: Sequence[UsagePage],
                logins: Mapping[bool, tuple[str, str]], out: IO[str]) -> None:
    """Reads each page through gunicorn as its reader (`logins[page.staff]`: name,
    password); DemoError unless it answers 200 with its content type and content."""
    sessions = {staff: login(server, *account) for staff, account in logins.items()}
    for page in urls:
        problem = page_problem(page, *fetch(server.url, page.path, sessions[page.staff].cookies))
        if problem is not None:
            raise DemoError(f"{server.url}{page.path} {problem}")
    out.write(f"  usage pages: {len(urls)} pages, plots, the PDF and the API answered through "
              "gunicorn with what each should show\n")


def page_problem(page: UsagePage, status: int, content_type: str, body: bytes) -> Optional[str]:
    """None when the answer is what `page` should answer, else what is wrong with it."""
    text = body.decode("utf-8", "replace")
    if status != 200:
        return f"answered {status}, not 200" + (f": {text[:300]}" if text.strip() else "")
    if not content_type.startswith(page.content_type):
        return f"answered {content_type!r}, not {page.content_type}"
    if not body.startswith(page.starts):
        return f"does not start as {page.content_type} does"
    missing = [shown for shown in page.shows if shown not in text]
    if missing:
        return f"does not show {', '.join(map(repr, missing))}"
    return None


def login(server: MonitorServer, username: str, password: str) -> Session:
    session = Session(server.url)
    try:
        session.login(username, password)
    except (AssertionError, OSError) as exc:
        raise DemoError(f"cannot log in as {username!r}: {exc}") from None
    return session


def fetch(base_url: str, path: str, cookies: CookieJar) -> tuple[int, str, bytes]:
    """(status, Content-Type, body) of a GET with the session's cookies; no redirect is
    followed, so a page that sends its reader to the login form is a 302, not a 200."""
    where = urllib.parse.urlsplit(base_url)
    connection = http.client.HTTPConnection(where.hostname or "127.0.0.1", where.port,
                                            timeout=PAGE_TIMEOUT_S)
    cookie = "; ".join(f"{c.name}={c.value}" for c in cookies)
    try:
        connection.request("GET", path, headers={"Cookie": cookie} if cookie else {})
        response = connection.getresponse()
        return response.status, response.getheader("Content-Type", ""), response.read()
    except OSError as exc:
        raise DemoError(f"{base_url}{path} gave no answer: {exc}") from None
    finally:
        connection.close()
