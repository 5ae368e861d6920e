"""Time `clusterwatch usage` on a login node: the terminal report of a 7-day job, and the table
of a user's 1,000 jobs, each beside what its sources alone cost, in one run.

    python benchmarks/bench_usage_terminal.py            # a 7-day job, 1,000 jobs, 10 runs each
    python benchmarks/bench_usage_terminal.py --quick    # a 6-hour job, 200 jobs, 3 runs
    python benchmarks/bench_usage_terminal.py --check    # exit 1 when a target is missed

The 7-day job is `clusterwatch.loopback.job_series`' synthetic one (8 CPUs, one node, scraped
every 30 s: 20,160 scrapes of each series), backfilled into a real Prometheus on 127.0.0.1
(promtool blocks, the Debian `prometheus`). Accounting is a fake `sacct` program printing the
job, or 1,000 jobs of the user and their batch steps (bench_usage_pages' lines), as Slurm
does. Each row is timed three ways, side by side:

- `sources`: what any report must do, in-process: `sacct` asked once (and, for the job, its
  19 range and instant queries);
- `command`: `clusterwatch usage ...` in-process (clusterwatch.cli.main; output to
  /dev/null): the sources plus the analysis and the text;
- `console`: the installed console script, as a researcher runs it (interpreter start and
  imports included). The targets are on this one: under 1 s for the job, under 2 s for the
  table.

Output: median and minimum wall time of each (ms), and command/sources (the report's own
cost over its sources'). Progress goes to standard error.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from clusterwatch.loopback.job_series import JobHistory
from clusterwatch.loopback.prometheus_history import prometheus_with_history

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_usage_pages import sacct_output  # a sibling benchmark's data
from bench_usage_plot_queries import JOBID, synthetic_job  # and its week-long job

USER = "alice"  # bench_usage_pages' user
TARGETS_MS = {"job": 1000.0, "table": 2000.0}
_SACCT = """#!{python}
import sys
delimiter = next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--delimiter=")), "|")
with open({lines!r}, encoding="utf-8") as lines:
    sys.stdout.write(lines.read().replace("|", delimiter))
"""


def progress(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hours", type=float, default=168.0, help="the job's length (168)")
    parser.add_argument("--jobs", type=int, default=1000, help="jobs in the table (1000)")
    parser.add_argument("--runs", type=int, default=10, help="runs of each (10)")
    parser.add_argument("--quick", action="store_true", help="6 hours, 200 jobs, 3 runs")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--workdir", type=Path, help="where the files go (a temporary dir)")
    args = parser.parse_args(argv)
    if args.quick:
        args.hours, args.jobs, args.runs = 6.0, 200, 3
    if args.hours <= 0 or args.jobs < 1 or args.runs < 1:
        parser.error("--hours must be positive, --jobs and --runs at least 1")
    return args


def job_line(job: JobHistory) -> str:
    """sacct's allocation line and batch step of the synthetic job (`|` between fields)."""
    from clusterwatch.monitor.usage.accounting.sacct_parse import FIELDS

    plan, totals = job.plan, job.totals
    elapsed = round(plan.end - plan.start)
    values = {name: "" for name in FIELDS}
    values.update(JobID=JOBID, JobIDRaw=JOBID, User=USER, Account=plan.account,
                  Partition=plan.partition, State="COMPLETED", Start=str(round(plan.start)),
                  End=str(round(plan.end)), Elapsed=_clock(elapsed), AllocCPUS=str(plan.cpus),
                  ReqMem="32G", ReqTRES=f"cpu={plan.cpus},mem=32G,node=1",
                  AllocTRES=f"cpu={plan.cpus},mem=32G,node=1", NNodes="1", NodeList=plan.node,
                  TotalCPU=_clock(round(totals.cpu_s)), UserCPU=_clock(round(totals.user_s)),
                  SystemCPU=_clock(round(totals.system_s)), Timelimit=_clock(2 * elapsed),
                  ExitCode="0:0", JobName=plan.name)
    step = dict(values, JobID=f"{JOBID}.batch", JobIDRaw=f"{JOBID}.batch", User="",
                Account="", Partition="", JobName="batch", ReqTRES="", AllocTRES="",
                MaxRSS=f"{totals.max_rss_bytes // 1024}K")
    return "".join("|".join(row[name] for name in FIELDS) + "\n" for row in (values, step))


def _clock(seconds: int) -> str:
    days, rest = divmod(seconds, 86400)
    text = f"{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"
    return f"{days}-{text}" if days else text


def fake_sacct(path: Path, lines: str) -> Path:
    data = path.with_suffix(".lines")
    data.write_text(lines, encoding="utf-8")
    path.write_text(_SACCT.format(python=sys.executable, lines=str(data)))
    path.chmod(0o755)
    return path


def timed(runs: int, work: Callable[[], object]) -> list[float]:
    found = []
    for _ in range(runs):
        begun = time.perf_counter()
        work()
        found.append((time.perf_counter() - begun) * 1000)
    return found


def in_process(arguments: Sequence[str]) -> None:
    from clusterwatch.cli import main

    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
        status = main(["usage", "--color", "never", *arguments])
    if status != 0:
        raise SystemExit(f"clusterwatch usage {' '.join(arguments)} exited {status}")


def console(program: str, arguments: Sequence[str]) -> None:
    done = subprocess.run([program, "usage", "--color", "never", *arguments],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False,
                          stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise SystemExit(f"console script exited {done.returncode}: {done.stderr[-300:]!r}")


def main(argv: Sequence[str]) -> int:
    args = parse_args(argv)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="cw-bench-terminal-"))
    workdir.mkdir(parents=True, exist_ok=True)
    program = str(Path(sys.executable).with_name("clusterwatch"))
    if not Path(program).is_file():
        program = shutil.which("clusterwatch") or "clusterwatch"
    now = time.time()
    progress(f"the {args.hours:g}-hour job's series, backfilled into Prometheus")
    job = synthetic_job(args.hours, now)
    table = sacct_output(args.jobs, datetime.fromtimestamp(now, timezone.utc),
                         random.Random(7))
    job_sacct = fake_sacct(workdir / "sacct-job", job_line(job))
    table_sacct = fake_sacct(workdir / "sacct-table", table)
    rows: dict[str, dict[str, list[float]]] = {}
    with prometheus_with_history(job.series, workdir / "prometheus") as prometheus:
        system = workdir / "usage.toml"
        system.write_text("[usage]\n")
        os.environ.update({"CLUSTERWATCH_PROMETHEUS_URL": prometheus.url,
                           "CLUSTERWATCH_USAGE_CONFIG": str(system), "USER": USER,
                           "CLUSTERWATCH_PROMETHEUS_TIMEOUT_S": "60"})
        os.environ.pop("CLUSTERWATCH_MONITOR_URL", None)
        from clusterwatch.monitor.usage.accounting.sacct import SacctAccounting
        from clusterwatch.monitor.usage.metrics.series import fetch_job_series

        def job_sources() -> None:
            record = SacctAccounting(str(job_sacct)).job(JOBID)
            assert record.start is not None and record.end is not None
            fetch_job_series(prometheus.url, JOBID, record.start, record.end, timeout_s=60)

        def table_sources() -> None:
            since = datetime.fromtimestamp(now - 31 * 86400, timezone.utc)
            SacctAccounting(str(table_sacct)).jobs_of_user(USER, since, limit=2000)

        for name, sacct, sources, arguments in (
                ("job", job_sacct, job_sources, [JOBID]),
                ("table", table_sacct, table_sources, ["--days", "31"])):
            os.environ["CLUSTERWATCH_SACCT"] = str(sacct)
            progress(f"{name}: {args.runs} runs of each way")
            in_process(arguments)  # warm: imports, the first connection
            rows[name] = {"sources": timed(args.runs, sources),
                          "command": timed(args.runs, lambda a=arguments: in_process(a)),
                          "console": timed(args.runs,
                                           lambda a=arguments: console(program, a))}
    return report(args, rows)


def report(args: argparse.Namespace, rows: dict[str, dict[str, list[float]]]) -> int:
    print(f"clusterwatch usage: the report of a {args.hours:g}-hour job (8 CPUs, 30 s scrapes) "
          f"and the table of {args.jobs} jobs; {args.runs} runs each, wall ms")
    print(f"{'':<8}{'sources p50':>13}{'command p50':>13}{'console p50':>13}"
          f"{'console min':>13}{'cmd/src':>9}{'target':>9}")
    missed = []
    for name, found in rows.items():
        sources, command, whole = (statistics.median(found[k])
                                   for k in ("sources", "command", "console"))
        target = TARGETS_MS[name]
        if whole > target:
            missed.append(name)
        print(f"{name:<8}{sources:>13.0f}{command:>13.0f}{whole:>13.0f}"
              f"{min(found['console']):>13.0f}{command / sources:>9.2f}{target:>9.0f}")
    if missed:
        print(f"missed the target: {', '.join(missed)}")
    return 1 if missed and args.check else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
