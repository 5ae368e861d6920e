"""One run of `clusterwatch monitor usage_watch` over 2,000 running jobs: its wall time and the
number of Prometheus queries (target: under 60 s, and one query per rule, not per job).

Everything the command talks to is real or on loopback, in the command's own process as the
timer runs it (`call_command`, Django set up once, its system checks skipped as in the
command): a stand-in `sacct` program printing the running jobs in sacct's parsable format
with the delimiter it is given (parsed by the real adapter), a loopback Prometheus
(`clusterwatch.loopback.running_prometheus`) answering the three per-rule queries over every
job as HTTP, a real SMTP server (aiosmtpd), and SQLite through Django for the outbox.

A tenth of the jobs hold two idle GPUs, a fifth keep one CPU of eight busy, one in twenty
holds 95 % of its memory limit (some jobs break two rules); the rest use what they hold.
The first run writes and emails every finding; the second (the steady state: every finding
known) writes and sends nothing. Exit 1 when a run asks more than one query per rule, sends
an email twice or leaves one out.

    python benchmarks/bench_usage_watch.py                 # 2,000 jobs
    python benchmarks/bench_usage_watch.py --jobs 40       # the smoke test's size
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from clusterwatch.loopback.running_prometheus import RunningPrometheus
from clusterwatch.loopback.smtp import SmtpServer

GiB = 1024**3
RULES = 3
FIELDS = ("JobID", "JobIDRaw", "User", "Account", "Partition", "State", "Start", "End",
          "Elapsed", "AllocCPUS", "ReqMem", "ReqTRES", "AllocTRES", "NNodes", "NodeList",
          "MaxRSS", "TotalCPU", "UserCPU", "SystemCPU", "Timelimit", "ExitCode", "JobName")
SEP = "\x1f"
SACCT = """\
import sys
from pathlib import Path
delimiter = next(a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--delimiter="))
sys.stdout.write(Path({lines!r}).read_text().replace({sep!r}, delimiter))
"""


def progress(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2000, help="running jobs (2000)")
    parser.add_argument("--workdir", type=Path, help="keep the data here (default: temporary)")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    return args


def kind_of(number: int) -> set[str]:
    """The rules job `number` breaks."""
    broken = set()
    if number % 10 == 0:
        broken.add("gpu_idle")
    if number % 5 == 1:
        broken.add("cpu_idle")
    if number % 20 in (0, 3):
        broken.add("memory_near_limit")
    return broken


def write_jobs(workdir: Path, prometheus: RunningPrometheus, count: int) -> int:
    """The stand-in sacct's lines and Prometheus' figures; returns the findings expected."""
    start = int((datetime.now(timezone.utc) - timedelta(hours=3)).timestamp())
    lines, expected = [], 0
    for number in range(count):
        jobid, broken = str(7_000_000 + number), kind_of(number)
        expected += len(broken)
        gpus = 2 if "gpu_idle" in broken or number % 4 == 0 else 0
        tres = "billing=8,cpu=8,mem=8G,node=1" + (f",gres/gpu={gpus}" if gpus else "")
        values = {"JobID": jobid, "JobIDRaw": jobid, "User": f"user{number % 300:03d}",
                  "Account": f"acct{number % 12}", "Partition": "gpu" if gpus else "cpu",
                  "State": "RUNNING", "Start": str(start), "End": "Unknown",
                  "Elapsed": "03:00:00", "AllocCPUS": "8", "ReqMem": "8G", "ReqTRES": tres,
                  "AllocTRES": tres, "NNodes": "1", "NodeList": f"node{number % 400:03d}",
                  "MaxRSS": "", "TotalCPU": "00:00:00", "UserCPU": "00:00:00",
                  "SystemCPU": "00:00:00", "Timelimit": "1-00:00:00", "ExitCode": "0:0",
                  "JobName": f"run-{number}"}
        lines.append(SEP.join(values[name] for name in FIELDS) + "\n")
        gpu_peaks = ({"GPU-a": 0.0, "GPU-b": 0.0} if "gpu_idle" in broken
                     else {"GPU-a": 0.8, "GPU-b": 0.9} if gpus else {})
        busy = 1.0 if "cpu_idle" in broken else 7.5
        used = 7.6 * GiB if "memory_near_limit" in broken else 3.0 * GiB
        prometheus.job(jobid, gpus=gpu_peaks, cores_busy=busy,
                       memory={f"node{number % 400:03d}": (used, 8.0 * GiB)},
                       node=f"node{number % 400:03d}")
    listing = workdir / "sacct-lines"
    listing.write_text("".join(lines))
    sacct = workdir / "sacct"
    sacct.write_text(f"#!{sys.executable}\n" + SACCT.format(lines=str(listing), sep=SEP))
    sacct.chmod(0o755)
    return expected


def prepare_django(workdir: Path, prometheus_url: str, smtp_port: int) -> None:
    for name in [n for n in os.environ if n.startswith("CLUSTERWATCH_")]:
        del os.environ[name]
    data = workdir / "data"
    shutil.rmtree(data, ignore_errors=True)
    data.mkdir(mode=0o700, parents=True)
    os.environ.update({
        "CLUSTERWATCH_DATA_DIR": str(data),
        "DJANGO_SETTINGS_MODULE": "clusterwatch.monitor.site.settings",
        "CLUSTERWATCH_PROMETHEUS_URL": prometheus_url,
        "CLUSTERWATCH_SACCT": str(workdir / "sacct"),
        "CLUSTERWATCH_EMAIL_HOST": "127.0.0.1", "CLUSTERWATCH_EMAIL_PORT": str(smtp_port),
        "CLUSTERWATCH_EMAIL_FROM": "clusterwatch@bench.test",
        "CLUSTERWATCH_EMAIL_BASE_URL": "https://monitor.bench.test",
        "CLUSTERWATCH_EMAIL_DOMAIN": "bench.test"})
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def one_run(prometheus: RunningPrometheus) -> tuple[float, int, str]:
    from django.core.management import call_command

    asked = len(prometheus.queries)
    out = io.StringIO()
    began = time.perf_counter()
    call_command("usage_watch", stdout=out, stderr=sys.stderr)
    wall = time.perf_counter() - began
    return wall, len(prometheus.queries) - asked, out.getvalue().splitlines()[-1]


def main(argv: Sequence[str]) -> int:
    args = parse_args(argv)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="cw-bench-watch-"))
    workdir.mkdir(parents=True, exist_ok=True)
    smtp = SmtpServer()
    with RunningPrometheus() as prometheus, smtp:
        expected = write_jobs(workdir, prometheus, args.jobs)
        prepare_django(workdir, prometheus.url, smtp.port)
        progress(f"{args.jobs} running jobs, {expected} findings expected")
        first = one_run(prometheus)
        emails_first = len(smtp.wait_for(expected, timeout=30))
        second = one_run(prometheus)
        emails = len(smtp.wait_for(expected + 1, timeout=0.5))
    from clusterwatch.monitor.usage.models import UsageAlert

    rows: Any = UsageAlert.objects.count()
    print(f"jobs {args.jobs}, findings {expected}, outbox rows {rows}")
    for name, (wall, queries, summary) in (("first", first), ("second", second)):
        print(f"run {name:6} {wall:7.2f} s  {queries} queries  {summary}")
    print(f"emails: {emails_first} after the first run, {emails} after the second "
          f"(expected {expected})")
    slowest = max(first[0], second[0])
    print(f"target: under 60 s and {RULES} queries a run: "
          f"{'met' if slowest < 60 and first[1] == second[1] == RULES else 'missed'}")
    if args.workdir is None:
        shutil.rmtree(workdir, ignore_errors=True)
    ok = first[1] == second[1] == RULES and emails == emails_first == expected == rows
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
