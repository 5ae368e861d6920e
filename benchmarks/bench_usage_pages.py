"""Time the usage reports' user page with 1,000 jobs: one accounting call (a fake `sacct`
program printing 1,000 jobs and their batch steps as Slurm 22.05 does), the kept summaries
of most of them read from the database, the table sorted, filtered and cut into a page.

    python benchmarks/bench_usage_pages.py [--jobs 1000] [--requests 30] [--quick] [--check]

The page is requested in-process through Django's test client (the view, the database, the
`sacct` subprocess and the template; no HTTP server). Prometheus is a closed loopback port:
the user page must not query it, and a query would fail the request. The table goes to
standard output, progress to standard error. Exit status 1 when a page answers anything
but 200 or does not list every job; with --check, also when the target is missed.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import random
import shutil
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable

TARGET_MS = 200.0
USER = "alice"
KEPT_FRACTION = 0.9  # ended jobs whose summary was kept (the email poller keeps every one)
STATES = (("COMPLETED", 80), ("FAILED", 8), ("CANCELLED by 1000", 5), ("TIMEOUT", 4),
          ("OUT_OF_MEMORY", 2), ("RUNNING", 1))
PAGES = (("newest first (the default)", "/usage/users/alice/"),
         ("least CPU-efficient first", "/usage/users/alice/?sort=cpu_efficiency&order=asc"),
         ("COMPLETED, by memory peak, page 5",
          "/usage/users/alice/?state=COMPLETED&sort=memory_peak&order=desc&page=5"))


def progress(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=1000, help="jobs of the user (1000)")
    parser.add_argument("--requests", type=int, default=30, help="requests per page (30)")
    parser.add_argument("--quick", action="store_true", help="a smoke size: 20 jobs, 3 requests")
    parser.add_argument("--check", action="store_true", help="exit 1 when the target is missed")
    parser.add_argument("--workdir", type=Path, help="keep the data here (default: temporary)")
    args = parser.parse_args(argv)
    if args.quick:
        args.jobs, args.requests = 20, 3
    if args.jobs < 1 or args.requests < 1:
        parser.error("--jobs and --requests must be at least 1")
    return args


# --- the data ---------------------------------------------------------------------------------


def sacct_output(jobs: int, now: datetime, rng: random.Random) -> str:
    """`sacct --parsable2 --noheader` lines of `jobs` jobs of USER over the last 30 days:
    each an allocation line and a batch step with its MaxRSS (SLURM_TIME_FORMAT=%s)."""
    from clusterwatch.monitor.usage.accounting.sacct_parse import FIELDS

    states = [state for state, weight in STATES for _ in range(weight)]
    lines = []
    for number in range(jobs):
        cpus = rng.choice((1, 2, 4, 8, 16, 32))
        elapsed = rng.randint(60, 2 * 86400)
        start = now - timedelta(seconds=rng.randint(elapsed, 30 * 86400))
        state = rng.choice(states)
        running = state == "RUNNING"
        end = "Unknown" if running else str(int(start.timestamp()) + elapsed)
        used = int(elapsed * cpus * rng.uniform(0.05, 1.0))
        memory_gib = rng.choice((2, 4, 8, 16, 64))
        values = {
            "JobID": str(100_000 + number), "JobIDRaw": str(100_000 + number), "User": USER,
            "Account": "physics", "Partition": rng.choice(("cpu", "long", "gpu")),
            "State": state, "Start": str(int(start.timestamp())), "End": end,
            "Elapsed": _clock(elapsed), "AllocCPUS": str(cpus), "ReqMem": f"{memory_gib}G",
            "ReqTRES": f"billing={cpus},cpu={cpus},mem={memory_gib}G,node=1",
            "AllocTRES": f"billing={cpus},cpu={cpus},mem={memory_gib}G,node=1",
            "NNodes": "1", "NodeList": f"node{number % 64:02d}", "MaxRSS": "",
            "TotalCPU": _clock(used), "UserCPU": _clock(int(used * 0.95)),
            "SystemCPU": _clock(int(used * 0.05)), "Timelimit": _clock(2 * 86400 + 3600),
            "ExitCode": "0:0", "JobName": f"run-{number}",
        }
        lines.append("|".join(values[name] for name in FIELDS))
        if not running:
            rss = int(memory_gib * 1024**2 * rng.uniform(0.02, 0.9))
            step = dict(values, JobID=f"{values['JobID']}.batch", User="", Account="",
                        Partition="", JobIDRaw=f"{values['JobID']}.batch", JobName="batch",
                        MaxRSS=f"{rss}K", ReqTRES="", AllocTRES="")
            lines.append("|".join(step[name] for name in FIELDS))
    return "\n".join(lines) + "\n"


def _clock(seconds: int) -> str:
    days, rest = divmod(seconds, 86400)
    text = f"{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"
    return f"{days}-{text}" if days else text


def keep_summaries(records: Sequence[Any], fraction: float, rng: random.Random) -> int:
    """Kept summaries of `fraction` of the ended jobs, as the poller leaves them: measured,
    and a third of them with the warnings a wasteful job gets."""
    from clusterwatch.monitor.usage.analysis.figures import analyse
    from clusterwatch.monitor.usage.analysis.summary_json import usage_document
    from clusterwatch.monitor.usage.analysis.thresholds import DEFAULTS
    from clusterwatch.monitor.usage.models import KeptSummary

    rows = []
    for record in records:
        if record.running or rng.random() >= fraction:
            continue
        document: dict[str, Any] = dict(usage_document(record, analyse(record, None), ()))
        document.update(measured=True, samples=max(record.elapsed_s // 30, 1), notes=[])
        if rng.random() < 1 / 3:
            document["warnings"] = [
                {"code": code, "message": "The job used 12% of the CPU time it was allocated.",
                 "advice": "Ask for as many CPUs as the program keeps busy.",
                 "figures": {"cpu_efficiency": 0.12, "threshold": DEFAULTS.cpu_efficiency_min}}
                for code in ("low_cpu_efficiency", "memory_over_request")]
        rows.append(KeptSummary(
            jobid=record.jobid, user=record.user, account=record.account, state=record.state,
            start=record.start, end=record.end, cpu_efficiency=document["cpu_efficiency"],
            memory_efficiency=document["memory_efficiency"],
            warning_codes=" ".join(w["code"] for w in document["warnings"]), document=document))
    KeptSummary.objects.bulk_create(rows, batch_size=500)
    return len(rows)


# --- the measurements -------------------------------------------------------------------------


@dataclass
class Timings:
    ms: list[float] = field(default_factory=list)
    statuses: set[int] = field(default_factory=set)
    size: int = 0
    listed_all: bool = True

    def at(self, fraction: float) -> float:
        ordered = sorted(self.ms)
        return ordered[min(len(ordered) - 1, max(0, round(fraction * len(ordered)) - 1))]


def measure_page(client: Any, path: str, requests: int, jobs: int) -> Timings:
    timings = Timings()
    client.get(path)  # warm-up: templates compiled, the database's pages cached
    for _ in range(requests):
        gc.collect()
        started = time.perf_counter()
        answer = client.get(path)
        timings.ms.append((time.perf_counter() - started) * 1000)
        timings.statuses.add(answer.status_code)
        timings.size = len(answer.content)
        timings.listed_all &= f"{jobs} job{'s' if jobs != 1 else ''} that ran" in \
            answer.content.decode()
    return timings


def median_ms(action: Callable[[], Any], rounds: int) -> float:
    spent = []
    for _ in range(rounds):
        started = time.perf_counter()
        action()
        spent.append((time.perf_counter() - started) * 1000)
    return statistics.median(spent)


def phases(sacct: str, rounds: int) -> list[tuple[str, float]]:
    """Where a request's time goes (median ms, each phase timed on its own)."""
    from django.template.loader import render_to_string
    from django.utils import timezone as django_time

    from clusterwatch.monitor.usage.accounting.sacct import SacctAccounting
    from clusterwatch.monitor.usage.models import KeptSummary
    from clusterwatch.monitor.usage.web.job_rows import PAGE_SIZE
    from clusterwatch.monitor.usage.web.list_params import user_query
    from clusterwatch.monitor.usage.web.row_markup import user_rows
    from clusterwatch.monitor.usage.web.user_jobs import user_jobs
    from clusterwatch.monitor.usage.web.user_page import user_view

    query = user_query({}, django_time.now())
    documents = user_jobs(USER, query.since)
    view = user_view(USER, documents, query, PAGE_SIZE)
    kept = KeptSummary.objects.filter(user=USER, end__gte=query.since).only("jobid", "document")
    return [
        ("sacct: run and parse", median_ms(
            lambda: SacctAccounting(sacct).jobs_of_user(USER, query.since), rounds)),
        ("kept summaries: read and decode", median_ms(
            lambda: [row.document for row in kept.all()], rounds)),
        ("user_jobs: both, and the other jobs' documents", median_ms(
            lambda: user_jobs(USER, query.since), rounds)),
        ("user_view: filter, sort, one page of rows", median_ms(
            lambda: user_view(USER, documents, query, PAGE_SIZE), rounds)),
        ("rows' markup and the template", median_ms(
            lambda: render_to_string("usage/user.html", {"view": view,
                                                         "rows": user_rows(view.rows)}),
            rounds)),
    ]


# --- the run ----------------------------------------------------------------------------------


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])  # closed again when the block ends


def prepare(workdir: Path, jobs: int) -> tuple[str, int, int]:
    """The environment, Django and the data; (sacct program, kept rows, records)."""
    rng = random.Random(11)
    workdir.mkdir(mode=0o700, parents=True, exist_ok=True)
    output = workdir / "sacct-output.txt"
    sacct = workdir / "sacct"
    now = datetime.now(timezone.utc).replace(microsecond=0)
    output.write_text(sacct_output(jobs, now, rng), encoding="utf-8")
    # The lines are written with `|` (no name here holds one): the fake puts the random
    # --delimiter the monitor asks for (sacct_records) in its place.
    sacct.write_text("#!/bin/sh\n"
                     'd="|"; for a; do case "$a" in --delimiter=*) d="${a#--delimiter=}";; '
                     f'esac; done\nexec sed "s#|#$d#g" \'{output}\'\n', encoding="utf-8")
    sacct.chmod(0o700)
    for name in [n for n in os.environ if n.startswith("CLUSTERWATCH_")]:
        del os.environ[name]
    data = workdir / "data"
    if data.exists():
        shutil.rmtree(data)
    data.mkdir(mode=0o700)
    os.environ.update({
        "CLUSTERWATCH_DATA_DIR": str(data),
        "DJANGO_SETTINGS_MODULE": "clusterwatch.monitor.site.settings",
        "CLUSTERWATCH_PROMETHEUS_URL": f"http://127.0.0.1:{closed_port()}",
        "CLUSTERWATCH_SACCT": str(sacct)})
    import django

    django.setup()
    from django.core.management import call_command
    from django.test.utils import setup_test_environment

    from clusterwatch.monitor.usage.accounting.sacct_parse import parse_sacct

    setup_test_environment()  # the test client's host name is allowed
    call_command("migrate", verbosity=0)
    records = parse_sacct(output.read_text(encoding="utf-8"))
    return str(sacct), keep_summaries(records, KEPT_FRACTION, rng), len(records)


def main(argv: Sequence[str]) -> int:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="cw-bench-usage-") as scratch:
        workdir = args.workdir or Path(scratch)
        progress(f"building {args.jobs} jobs of {USER} in {workdir}")
        sacct, kept, records = prepare(workdir, args.jobs)
        from django.contrib.auth import get_user_model
        from django.test import Client

        client = Client()
        client.force_login(get_user_model().objects.create_user(USER))
        load_start = os.getloadavg()
        rows = []
        for label, path in PAGES:
            progress(f"{args.requests} x {path}")
            rows.append((label, path, measure_page(client, path, args.requests, records)))
        progress("phases")
        breakdown = phases(sacct, max(3, args.requests // 3))
        load_end = os.getloadavg()
    ok = all(t.statuses == {200} and t.listed_all for _, _, t in rows)
    met = all(t.at(0.9) < TARGET_MS for _, _, t in rows)
    print_report(args, records, kept, rows, breakdown, (load_start[0], load_end[0]))
    return 0 if ok and (met or not args.check) else 1


def print_report(args: argparse.Namespace, records: int, kept: int,
                 rows: Sequence[tuple[str, str, Timings]],
                 breakdown: Sequence[tuple[str, float]], load: tuple[float, float]) -> None:
    import django

    quick = " (--quick: a smoke size, not what the target is about)" if args.quick else ""
    print(f"clusterwatch usage reports: the user page{quick}")
    print(f"  Python {platform.python_version()}, Django {django.get_version()}, SQLite; "
          f"{os.cpu_count()} CPUs (shared); load average {load[0]:.2f} -> {load[1]:.2f}")
    print(f"data: {records} jobs of one user over 30 days from a fake sacct (allocation line "
          f"and batch step each), {kept} of them with a kept summary (30 % of those with two "
          "warnings); in-process through Django's test client, no HTTP")
    print(f"\n{'page':<36} {'p50 ms':>8} {'p90 ms':>8} {'max ms':>8} {'KB':>7}  "
          f"target p90 < {TARGET_MS:.0f} ms")
    for label, _path, timings in rows:
        status = "" if timings.statuses == {200} else f" statuses {sorted(timings.statuses)}"
        listed = "" if timings.listed_all else " NOT EVERY JOB LISTED"
        p90 = timings.at(0.9)
        verdict = f"{'pass' if p90 < TARGET_MS else 'MISS'} ({p90 / TARGET_MS:.2f} of target)"
        print(f"{label:<36} {statistics.median(timings.ms):8.1f} {p90:8.1f} "
              f"{max(timings.ms):8.1f} {timings.size / 1024:7.1f}  {verdict}{status}{listed}")
    print("\nwhere the time goes (median ms, each phase on its own):")
    for label, ms in breakdown:
        print(f"  {label:<46} {ms:8.1f}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
