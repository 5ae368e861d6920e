"""The usage reports end to end on real components: Slurm with slurmdbd and MariaDB, the job
exporter on the machine's cgroups, Prometheus scraping it, the monitor under gunicorn, and an
SMTP server (end_to_end_stack.py).

Three jobs (end_to_end_jobs.py): one keeps one of its two CPUs busy, one asks for 8 GiB and
holds 200 MiB, one uses what it asked for. After they end, the API and the pages must report
what each job measured of itself (CPU within 2 percentage points, memory within the few MiB
of the interpreter that the exporter's anonymous memory leaves out) and warn each for what it
did: its plan's warnings, none for the well-behaved one. CPU efficiency is judged by what the
job was given, not by what it was meant to get: Slurm's elapsed time also counts its own start
and end, which a loaded machine can stretch, so a busy job whose own figure fell below the
rule's threshold must be warned too (expected_warnings). The pages must show exactly the API's
warnings, and the email poller must mail each warned job, once, with the PDF attached.

The same jobs' series are also in VictoriaMetrics (remote-written by the Prometheus): the
reports computed from it (`clusterwatch monitor job_usage`) must equal the API's, computed
from Prometheus, and so must every series the plots draw.
"""

from __future__ import annotations

import html
import json
import math
import re
import subprocess
from collections.abc import Iterator
from datetime import datetime
from email.message import EmailMessage
from pathlib import Path
from typing import Any, Callable

import pytest

from clusterwatch.loopback.monitor_client import Session, get
from clusterwatch.loopback.services import Service
from clusterwatch.monitor.usage.analysis.rules import CODES
from clusterwatch.monitor.usage.analysis.thresholds import DEFAULTS
from clusterwatch.monitor.usage.metrics.prometheus_api import query_instant
from clusterwatch.monitor.usage.metrics.running_figures import read_running_figures
from clusterwatch.monitor.usage.metrics.series import JobSeries, fetch_job_series, selector
from clusterwatch.monitor.usage.rendering.summary_rows import percent
from tests.components import need_binary
from tests.jobs.exporter_process import console_script
from tests.monitor.usage.end_to_end_jobs import MiB, RanJob
from tests.monitor.usage.end_to_end_stack import (
    MAIL_DOMAIN,
    SCRAPE_INTERVAL_S,
    USER,
    Stack,
    require_components,
    running_stack,
)

pytestmark = pytest.mark.integration

CPU_TOLERANCE = 0.02  # of the allocated CPU time: the exporter reads the same cgroup counter
# getrusage's peak RSS also counts the interpreter's mapped files, which the exporter's
# anonymous memory (what the job needs) leaves out: about 6 MiB for python3.
MEMORY_TOLERANCE = 16 * MiB
# Both stores hold the same samples (remote write) and are read on the same grid, so the
# reports from VictoriaMetrics must equal Prometheus': every number to one part in 10^9
# (what a store may lose writing a double as a decimal), everything else exactly.
STORE_TOLERANCE = 1e-9
# What a document reads from the monitor's database, not from the series: the reports on
# VictoriaMetrics have a database of their own, without the other jobs' kept summaries.
FROM_THE_DATABASE = frozenset({"peer_ranks"})
RATE_WINDOW_S = 15  # usage_watch's window, shrunk to fit a 25 s busy loop

IMAGE = re.compile(r'<img src="([^"]+)"')

Documents = dict[str, dict[str, Any]]


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory,
          migrated_database: dict[str, str]) -> Iterator[Stack]:
    require_components()
    with running_stack(tmp_path_factory.mktemp("end-to-end"), migrated_database) as running:
        yield running


@pytest.fixture(scope="module")
def documents(stack: Stack) -> Documents:
    """Each job's document from /api/v1/jobs/<id>/usage, asked with the user's API token."""
    found: Documents = {}
    for job in stack.jobs:
        status, body = get(f"{stack.server.url}/api/v1/jobs/{job.jobid}/usage",
                           headers={"Authorization": f"Bearer {stack.token}"}, timeout=30)
        assert status == 200, (status, body[:300], stack.server.log_tail())
        found[job.plan.name] = json.loads(body)
    return found


def test_it_reports_each_jobs_cpu_efficiency_as_the_job_measured_it(
        stack: Stack, documents: Documents) -> None:
    for job in stack.jobs:
        document = documents[job.plan.name]
        assert (document["state"], document["measured"], document["cpu_source"]) == (
            "COMPLETED", True, "exporter"), document
        assert document["cpus_allocated"] == job.plan.cpus
        assert isinstance(document["elapsed_s"], int) and isinstance(document["samples"], int)
        assert 10 <= document["samples"] <= document["elapsed_s"] + 2
        did = given(job, document)
        assert document["cpu_efficiency"] == pytest.approx(did, abs=CPU_TOLERANCE), job
        if job.plan.pin:  # pinned to one of its CPUs: never more than half of what it was given
            assert 0 < did <= 0.5, (f"job {job.jobid} used {job.did.cpu_s:.1f} CPU seconds "
                                    f"in {document['elapsed_s']} s")


def test_it_reports_each_jobs_memory_peak_as_the_job_held_it(
        stack: Stack, documents: Documents) -> None:
    for job in stack.jobs:
        document = documents[job.plan.name]
        assert document["memory_source"] == "exporter"
        assert document["memory_requested_bytes"] == job.plan.requested_bytes
        peak = document["memory_peak_bytes"]
        assert isinstance(peak, int) and peak >= job.plan.hold_bytes, document
        assert peak == pytest.approx(job.did.maxrss_bytes, abs=MEMORY_TOLERANCE), job
        assert document["memory_efficiency"] == pytest.approx(
            job.did.maxrss_bytes / job.plan.requested_bytes,
            abs=MEMORY_TOLERANCE / job.plan.requested_bytes)


def test_it_warns_each_job_for_what_it_did_and_the_well_behaved_one_not_at_all(
        stack: Stack, documents: Documents) -> None:
    for job in stack.jobs:
        document = documents[job.plan.name]
        warnings = document["warnings"]
        assert isinstance(warnings, list)
        must, may = expected_warnings(job, document)
        found = {w["code"] for w in warnings}
        assert must <= found <= must | may, (job, given(job, document), warnings)
        for warning in warnings:
            assert warning["message"] and warning["advice"] and warning["figures"]
    [over] = [w for w in documents["big_request"]["warnings"]
              if w["code"] == "memory_over_request"]
    assert over["figures"]["suggested_bytes"] == 1024**3  # 200 MiB + 20 %, in whole GiB


def test_each_job_page_shows_what_the_api_reports(stack: Stack, documents: Documents) -> None:
    session = logged_in(stack)
    pages: dict[str, str] = {}
    for job in stack.jobs:
        document = documents[job.plan.name]
        status, body = session.get(f"/usage/jobs/{job.jobid}/")
        page = body.decode("utf-8")
        assert status == 200, text_of(page)
        assert f"Job {job.jobid}" in page
        for key in ("cpu_efficiency", "memory_efficiency"):
            shown = percent(document[key])
            assert shown in page, (key, shown, text_of(page))
        assert {code for code in CODES if code in page} == codes(document), text_of(page)
        pages[job.plan.name] = page
    # The well-behaved job's plots and pie, drawn from its real series.
    images = IMAGE.findall(pages["well_behaved"])
    assert len(images) >= 4, text_of(pages["well_behaved"])  # CPU, memory, ..., the pie
    for source in images:
        status, body = session.get(html.unescape(source), timeout=60)
        assert (status, body[:8]) == (200, b"\x89PNG\r\n\x1a\n"), (source, body[:200])


def test_the_user_page_and_list_show_every_job_with_its_warnings(
        stack: Stack, documents: Documents) -> None:
    session = logged_in(stack)
    status, body = session.get(f"/usage/users/{USER}/")
    page = body.decode("utf-8")
    assert status == 200, text_of(page)
    for job in stack.jobs:
        rows = [r for r in page.split("<tr>") if f'href="/usage/jobs/{job.jobid}/"' in r]
        assert len(rows) == 1, (job.jobid, text_of(page))
        row = rows[0]
        shown = {code for code in CODES if f'title="{code}"' in row}
        assert shown == codes(documents[job.plan.name]), row
    status, body = session.get(f"/api/v1/users/{USER}")
    listed = {d["jobid"]: d for d in json.loads(body)["jobs"]}
    assert status == 200 and set(listed) == {job.jobid for job in stack.jobs}
    for job in stack.jobs:  # each from its kept summary, the same as the job's own answer
        # but for the peer ranks, which the job's answer computes when asked, never keeps
        assert listed[job.jobid] == from_the_series(documents[job.plan.name])


def test_the_poller_mails_each_warned_job_once_with_its_pdf(
        stack: Stack, documents: Documents, tmp_path: Path) -> None:
    done = stack.console("usage_mail")
    assert done.returncode == 0, done.stderr
    warned = {job.jobid: job for job in stack.jobs if codes(documents[job.plan.name])}
    assert len(warned) >= 2, documents  # big_request and one_of_two at least
    messages = stack.smtp.wait_for(len(warned), timeout=30)
    assert len(messages) == len(warned), done.stderr
    for message in messages:
        job = next(j for j in warned.values() if j.jobid in str(message["Subject"]))
        assert str(message["To"]) == f"{USER}@{MAIL_DOMAIN}"
        text = part(message, "text/plain").get_content()
        for warning in documents[job.plan.name]["warnings"]:
            assert warning["message"] in " ".join(text.split())
        assert part(message, "text/html").get_content().lstrip().startswith("<")
        pdf = attachment(message)
        assert pdf.get_filename() == f"job-{job.jobid}-usage.pdf"
        content = pdf.get_content()
        assert isinstance(content, bytes) and content.startswith(b"%PDF")
        assert job.jobid in pdf_text(content, tmp_path / f"{job.jobid}.pdf")
        del warned[job.jobid]
    again = stack.console("usage_mail")  # sends before it exits: nothing more will come
    assert again.returncode == 0, again.stderr
    assert len(stack.smtp.messages) == len(messages), "a job was mailed twice"


@pytest.fixture(scope="module")
def victoria_documents(stack: Stack) -> Documents:
    """Each job's document from `clusterwatch monitor job_usage JOBID` (the console script)
    with CLUSTERWATCH_PROMETHEUS_URL pointed at VictoriaMetrics."""
    need_binary("victoria-metrics")
    found: Documents = {}
    runs = stack.consoles_on_victoria(*(("job_usage", job.jobid) for job in stack.jobs))
    for job, done in zip(stack.jobs, runs):
        assert done.returncode == 0, done.stderr
        found[job.plan.name] = json.loads(done.stdout)
    return found


def test_victoria_metrics_gives_each_job_the_figures_and_warnings_prometheus_gives(
        stack: Stack, documents: Documents, victoria_documents: Documents,
        record_property: Callable[[str, object], None]) -> None:
    for job in stack.jobs:
        on_prometheus = documents[job.plan.name]
        on_victoria = victoria_documents[job.plan.name]
        assert on_victoria["measured"] and on_victoria["cpu_source"] == "exporter"
        try:
            assert codes(on_victoria) == codes(on_prometheus)
            assert_same(from_the_series(on_victoria), from_the_series(on_prometheus))
        except AssertionError as unequal:
            raise AssertionError(f"{job.plan.name}: {unequal}; CPU counters read now: "
                                 f"{cpu_counters(stack, on_prometheus)}; documents: "
                                 f"{json.dumps([on_victoria, on_prometheus])}") from None
        record_property(f"{job.plan.name} on prometheus and victoria-metrics", json.dumps({
            key: [on_prometheus[key], on_victoria[key]]
            for key in ("cpu_efficiency", "memory_peak_bytes", "samples", "elapsed_s")}))


def test_victoria_metrics_gives_the_plots_the_series_prometheus_gives(
        stack: Stack, documents: Documents, record_property: Callable[[str, object], None],
        ) -> None:
    need_binary("victoria-metrics")
    assert stack.victoria is not None
    for job in stack.jobs:
        document = documents[job.plan.name]
        on_prometheus, on_victoria = (job_series(store, document)
                                      for store in (stack.prometheus, stack.victoria))
        assert (on_victoria.start, on_victoria.end, on_victoria.step, on_victoria.samples) == (
            on_prometheus.start, on_prometheus.end, on_prometheus.step, on_prometheus.samples)
        assert on_prometheus.get("cpu_seconds") and on_prometheus.get("memory_rss_bytes")
        for key in set(on_prometheus.series) | set(on_victoria.series):
            theirs, ours = on_prometheus.series.get(key, ()), on_victoria.series.get(key, ())
            assert [s.labels for s in ours] == [s.labels for s in theirs], key
            for mine, reference in zip(ours, theirs):
                assert_same([list(p) for p in mine.points],
                            [list(p) for p in reference.points], key)
        # How each store's increase() reads the job's CPU time over its life (the monitor
        # reads the raw counter instead): docs/usage.md shows what was measured here.
        increases = [lifetime_increase(store, document, on_prometheus)
                     for store in (stack.prometheus, stack.victoria)]
        total = sum(s.points[-1][1] for s in on_prometheus.get("cpu_seconds") or ())
        record_property(f"{job.plan.name} cpu seconds: counter, increase() on prometheus and "
                        "victoria-metrics", json.dumps([total, *increases]))
        assert increases[1] == pytest.approx(total, rel=1e-6)  # no extrapolation, from 0


def terminal(stack: Stack, store_url: str, home: Path,
             *arguments: str) -> subprocess.CompletedProcess[str]:
    """`clusterwatch usage ARGUMENTS` (the console script) as on a login node: the cluster's
    sacct and the store at `store_url`, no monitor, no system file."""
    (home / "usage.toml").write_text("[usage]\n")
    environ = {**stack.server.environ, "HOME": str(home), "USER": USER,
               "CLUSTERWATCH_USAGE_CONFIG": str(home / "usage.toml"),
               "CLUSTERWATCH_PROMETHEUS_URL": store_url}
    return subprocess.run([console_script(need_binary), "usage", "--color", "never",
                           *arguments], env=environ, capture_output=True, text=True,
                          timeout=120, check=False, stdin=subprocess.DEVNULL)


def test_the_terminal_command_reports_what_the_api_reports_on_both_stores(
        stack: Stack, documents: Documents, tmp_path: Path) -> None:
    # A login node computes each report itself from sacct and the store: the lazy, the
    # memory-hogging and the good job get the API's documents, but for the peer ranks,
    # which only the monitor's kept summaries give.
    stores = [("prometheus", stack.prometheus)]
    if stack.victoria is not None:
        stores.append(("victoria-metrics", stack.victoria))
    jobids = [job.jobid for job in stack.jobs]
    for name, store in stores:
        done = terminal(stack, store.url, tmp_path, "--json", *jobids)
        assert (done.returncode, done.stderr) == (0, ""), name
        for job, document in zip(stack.jobs, json.loads(done.stdout)):
            try:
                assert_same(document, from_the_series(documents[job.plan.name]),
                            f"{name}:{job.plan.name}")
            except AssertionError as unequal:
                raise AssertionError(f"{unequal}; CPU counters read now: "
                                     f"{cpu_counters(stack, documents[job.plan.name])}"
                                     ) from None
    text = terminal(stack, stack.prometheus.url, tmp_path, *jobids)
    assert text.returncode == 0, text.stderr
    reports = text.stdout.split("\n\nJob ")
    for job, report in zip(stack.jobs, reports):
        for warning in documents[job.plan.name]["warnings"]:
            assert warning["message"].split(".")[0] in " ".join(report.split()), (job, report)
    table = terminal(stack, stack.prometheus.url, tmp_path, "--parsable", "--days", "1")
    listed = [line.split("|")[0] for line in table.stdout.splitlines()[1:]]
    assert table.returncode == 0 and set(jobids) <= set(listed), table.stdout


def from_the_series(document: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in document.items() if key not in FROM_THE_DATABASE}


def test_victoria_metrics_gives_usage_watch_the_running_figures_prometheus_gives(
        stack: Stack, documents: Documents, record_property: Callable[[str, object], None],
        ) -> None:
    # usage_watch's three queries over every job at once, asked while the last job was busy.
    need_binary("victoria-metrics")
    assert stack.victoria is not None
    last = max(stack.jobs, key=lambda job: documents[job.plan.name]["end"])
    at = moment(documents[last.plan.name]["end"]).timestamp() - 5  # its busy loop ran then
    on_prometheus, on_victoria = (read_running_figures(store.url, RATE_WINDOW_S, at, 10.0)
                                  for store in (stack.prometheus, stack.victoria))
    # Only this stack's jobs: the exporter reads the machine's cgroups, where another test's
    # Slurm jobs may be running too.
    ran = {job.jobid for job in stack.jobs}
    assert {j for j in on_victoria if j in ran} == {j for j in on_prometheus if j in ran} == {
        last.jobid}
    theirs, ours = on_prometheus[last.jobid], on_victoria[last.jobid]
    assert ours.memory == theirs.memory and ours.gpu_peak_utilization == theirs.gpu_peak_utilization
    assert theirs.cores_busy is not None and ours.cores_busy is not None
    record_property(f"{last.plan.name} cores busy over {RATE_WINDOW_S} s, rate() on prometheus "
                    "and victoria-metrics", json.dumps([theirs.cores_busy, ours.cores_busy]))
    # The same samples; Prometheus extrapolates the window's first and last scrapes toward its
    # edges, VictoriaMetrics starts from the scrape before it: one scrape's worth apart at most.
    assert ours.cores_busy == pytest.approx(theirs.cores_busy,
                                            abs=2 * SCRAPE_INTERVAL_S / RATE_WINDOW_S)


def cpu_counters(stack: Stack, document: dict[str, Any]) -> dict[str, object]:
    """What each store answers now for the job's CPU counter, to tell a failure's cause."""
    found: dict[str, object] = {}
    for name, store in (("prometheus", stack.prometheus), ("victoria-metrics", stack.victoria)):
        if store is not None:
            series = job_series(store, document).series.get("cpu_seconds", ())
            found[name] = [(dict(s.labels), s.points) for s in series]
    return found


def moment(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def job_series(store: Service, document: dict[str, Any]) -> JobSeries:
    return fetch_job_series(store.url, document["jobid_raw"], moment(document["start"]),
                            moment(document["end"]), scrape_interval_s=SCRAPE_INTERVAL_S)


def lifetime_increase(store: Service, document: dict[str, Any], series: JobSeries) -> float:
    life = math.ceil(series.end - series.start + 1)
    promql = f"increase({selector('jobs_cpu_seconds_total', document['jobid_raw'])}[{life}s])"
    return sum(s.points[-1][1] for s in query_instant(store.url, promql, series.end, 10.0))


def assert_same(ours: object, theirs: object, where: str = "") -> None:
    """Equal JSON values, numbers to STORE_TOLERANCE (relative)."""
    if isinstance(theirs, dict):
        assert isinstance(ours, dict) and set(ours) == set(theirs), (where, ours, theirs)
        for key in theirs:
            assert_same(ours[key], theirs[key], f"{where}.{key}")
    elif isinstance(theirs, list):
        assert isinstance(ours, list) and len(ours) == len(theirs), (where, ours, theirs)
        for index, (mine, reference) in enumerate(zip(ours, theirs)):
            assert_same(mine, reference, f"{where}[{index}]")
    elif isinstance(theirs, (int, float)) and not isinstance(theirs, bool):
        assert ours == pytest.approx(theirs, rel=STORE_TOLERANCE, abs=STORE_TOLERANCE), where
    else:
        assert ours == theirs, where


def given(job: RanJob, document: dict[str, Any]) -> float:
    """The job's CPU efficiency by its own measure: its CPU seconds over Slurm's elapsed time
    for its CPUs (what the machine gave it, start and end included)."""
    return float(job.did.cpu_s / (document["elapsed_s"] * job.plan.cpus))


def expected_warnings(job: RanJob, document: dict[str, Any]) -> tuple[set[str], set[str]]:
    """(must, may) for the job: its plan's warnings, with low CPU efficiency exactly when the
    reported figure (tied to the job's own by the first test) is below the rule's threshold.
    A job given so little has idle stretches (start, release, tail) that weigh on its mean
    cores too, so bursty_cpu may then come with it; never otherwise."""
    cpu_rules = {"low_cpu_efficiency", "bursty_cpu"}
    must, may = set(job.plan.warnings) - cpu_rules, set()
    if document["cpu_efficiency"] < DEFAULTS.cpu_efficiency_min:
        must.add("low_cpu_efficiency")
        may.add("bursty_cpu")
    return must, may - must


def codes(document: dict[str, Any]) -> set[str]:
    return {w["code"] for w in document["warnings"]}


def logged_in(stack: Stack) -> Session:
    session = Session(stack.server.url)
    session.login(USER, stack.password)
    return session


def text_of(page: str) -> str:
    """The words of a page, for a failure's message."""
    return " ".join(re.sub(r"<[^>]*>", " ", page).split())[:2000]


def part(message: EmailMessage, content_type: str) -> EmailMessage:
    found = message.get_body(preferencelist=(content_type.split("/")[1],))
    assert found is not None and found.get_content_type() == content_type, message
    return found  # type: ignore[return-value]


def attachment(message: EmailMessage) -> EmailMessage:
    [found] = [p for p in message.iter_attachments() if p.get_content_type() == "application/pdf"]
    return found


def pdf_text(content: bytes, path: Path) -> str:
    path.write_bytes(content)
    return subprocess.run([need_binary("pdftotext"), str(path), "-"], capture_output=True,
                          text=True, timeout=60, check=True).stdout
