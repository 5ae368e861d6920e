"""Time one `clusterwatch monitor usage_mail` run that mails a mass ending: 1,000 jobs that
ended at once, each emailed with its PDF, as the timer runs it.

    python benchmarks/bench_usage_mail.py                     # 1,000 half-hour jobs
    python benchmarks/bench_usage_mail.py --emails 50         # a smaller batch
    python benchmarks/bench_usage_mail.py --quick             # smoke size: 10 jobs
    python benchmarks/bench_usage_mail.py --check             # exit 1 past the target

The jobs (2 CPUs, `--hours` long, ended half an hour ago, their figures final) are
`clusterwatch.loopback.job_series`' synthetic ones, backfilled into a real Prometheus on
127.0.0.1 (promtool blocks, the Debian `prometheus`); a fake `sacct` (a small Python program
run with -IS, reading one file per job) answers accounting as Slurm does with the monitor's
format and delimiter; the SMTP server is aiosmtpd on loopback (clusterwatch.loopback.smtp),
which counts its connections. The database is a migrated SQLite file in the data directory.
The run is the installed console script as a subprocess: the poll queues every job, then
every email is built (the report from the kept summary and Prometheus, the PDF drawn) and
sent. Untimed: migrate, the backfill. Output (stdout): the run's wall time, the CPU time of
the run and its worker processes, per email, emails received, SMTP connections, the run's
own summary line (PDFs drawn and taken from the render cache), and pass or MISS against
the target. Exit status 1 when an email is missing or sent twice; with --check, also past
the target.

Target (issue 19, item 13): 1,000 emails in under 5 minutes on this 2-core machine.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from clusterwatch.loopback.job_series import JobHistory, JobPlan, Usage, history
from clusterwatch.loopback.prometheus_history import prometheus_with_history
from clusterwatch.loopback.smtp import SmtpServer

TARGET_S = 300.0
TARGET_EMAILS = 1000
GiB = 1024**3
SEP = "\x1f"  # the book's field separator; the fake sacct prints the monitor's delimiter
CONSOLE = str(Path(sys.executable).with_name("clusterwatch"))
SACCT = """\
import sys
args = sys.argv[1:]
delimiter = next(a.split("=", 1)[1] for a in args if a.startswith("--delimiter="))
book = {book!r}
name = args[args.index("--jobs") + 1] if "--jobs" in args else "all"
if "/" in name or name.startswith("."):
    sys.exit(0)
try:
    with open(book + "/" + name, encoding="utf-8") as lines:
        sys.stdout.write(lines.read().replace({sep!r}, delimiter))
except FileNotFoundError:
    pass
"""


def progress(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--emails", type=int, default=TARGET_EMAILS, help="jobs (1000)")
    parser.add_argument("--hours", type=float, default=0.5, help="each job's length (0.5)")
    parser.add_argument("--quick", action="store_true", help="a smoke size: 10 jobs")
    parser.add_argument("--check", action="store_true", help="exit 1 when the target is missed")
    parser.add_argument("--workdir", type=Path, help="keep the data here (default: temporary)")
    args = parser.parse_args(argv)
    if args.quick:
        args.emails, args.hours = 10, 0.25
    if args.emails < 1 or not 0 < args.hours <= 48:
        parser.error("--emails must be at least 1 and --hours in (0, 48]")
    return args


def jobs(count: int, hours: float, now: float) -> list[JobHistory]:
    end = float(round(now) - 1800)  # half an hour ago: final, and found by the first poll
    usage = Usage(
        core_busy=(0.9, 0.3),
        rss_bytes=3 * GiB,
        cache_bytes=GiB // 2,
        threads=3,
        open_files=12,
        read_bytes_per_s=2e6,
        write_bytes_per_s=5e5,
    )
    return [
        history(
            JobPlan(
                jobid=str(700_000 + number),
                name=f"sim-{number}",
                user="alice",
                uid=1500,
                account="physics",
                partition="cpu",
                node=f"node{number % 40:02d}",
                start=end - hours * 3600,
                end=end,
                memory_requested_bytes=8 * GiB,
                usage=usage,
            )
        )
        for number in range(count)
    ]


def sacct_lines(job: JobHistory) -> str:
    """The job's allocation line and batch step, as `sacct --parsable2` prints them."""
    from clusterwatch.monitor.usage.accounting.sacct_parse import FIELDS

    plan, totals = job.plan, job.totals
    elapsed = round(plan.end - plan.start)
    values = {
        "JobID": plan.jobid,
        "JobIDRaw": plan.jobid,
        "User": plan.user,
        "Account": plan.account,
        "Partition": plan.partition,
        "State": "COMPLETED",
        "Start": str(round(plan.start)),
        "End": str(round(plan.end)),
        "Elapsed": _clock(elapsed),
        "AllocCPUS": str(plan.cpus),
        "ReqMem": "8G",
        "ReqTRES": f"billing={plan.cpus},cpu={plan.cpus},mem=8G,node=1",
        "AllocTRES": f"billing={plan.cpus},cpu={plan.cpus},mem=8G,node=1",
        "NNodes": "1",
        "NodeList": plan.node,
        "MaxRSS": "",
        "TotalCPU": _clock(round(totals.cpu_s)),
        "UserCPU": _clock(round(totals.user_s)),
        "SystemCPU": _clock(round(totals.system_s)),
        "Timelimit": _clock(2 * elapsed),
        "ExitCode": "0:0",
        "JobName": plan.name,
    }
    step = dict(
        values,
        JobID=f"{plan.jobid}.batch",
        JobIDRaw=f"{plan.jobid}.batch",
        User="",
        Account="",
        Partition="",
        JobName="batch",
        ReqTRES="",
        AllocTRES="",
        MaxRSS=f"{totals.max_rss_bytes // 1024}K",
    )
    return "".join(SEP.join(row[name] for name in FIELDS) + "\n" for row in (values, step))


def _clock(seconds: int) -> str:
    return f"{seconds // 3600:02d}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def write_sacct(workdir: Path, histories: Sequence[JobHistory]) -> Path:
    book = workdir / "sacct-book"
    book.mkdir(parents=True)
    every = []
    for job in histories:
        lines = sacct_lines(job)
        (book / job.plan.jobid).write_text(lines, encoding="utf-8")
        every.append(lines)
    (book / "all").write_text("".join(every), encoding="utf-8")
    program = workdir / "sacct"
    program.write_text(f"#!{sys.executable} -IS\n" + SACCT.format(book=str(book), sep=SEP))
    program.chmod(0o755)
    return program


def environ(data: Path, prometheus_url: str, sacct: Path, smtp_port: int) -> dict[str, str]:
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("CLUSTERWATCH_", "DJANGO_", "SLURM_"))
    }
    env.update(
        {
            "CLUSTERWATCH_DATA_DIR": str(data),
            "CLUSTERWATCH_PROMETHEUS_URL": prometheus_url,
            "CLUSTERWATCH_SACCT": str(sacct),
            "CLUSTERWATCH_EMAIL_HOST": "127.0.0.1",
            "CLUSTERWATCH_EMAIL_PORT": str(smtp_port),
            "CLUSTERWATCH_EMAIL_FROM": "clusterwatch@monitor.test",
            "CLUSTERWATCH_EMAIL_BASE_URL": "https://monitor.test",
            "CLUSTERWATCH_EMAIL_DOMAIN": "example.org",
            "CLUSTERWATCH_EMAIL_JOBS": "all",
        }
    )
    return env


def run(args: argparse.Namespace, workdir: Path) -> int:
    histories = jobs(args.emails, args.hours, time.time())
    sacct = write_sacct(workdir, histories)
    series = [s for job in histories for s in job.series]
    progress(f"backfilling {len(series)} series of {len(histories)} jobs")
    with prometheus_with_history(series, workdir / "prom") as prometheus, SmtpServer() as smtp:
        data = workdir / "data"
        env = environ(data, prometheus.url, sacct, smtp.port)
        data.mkdir(mode=0o700)
        subprocess.run([CONSOLE, "monitor", "migrate", "--noinput", "-v", "0"], env=env, check=True)
        progress(f"mailing {len(histories)} jobs")
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        began = time.perf_counter()
        done = subprocess.run(
            [CONSOLE, "monitor", "usage_mail"], env=env, capture_output=True, text=True, check=False
        )
        wall = time.perf_counter() - began
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        got = Counter(str(m["X-Clusterwatch-Job"]) for m in smtp.messages)
        connections = getattr(smtp, "connections", "not counted")  # an older harness: none
    expected = {job.plan.jobid for job in histories}
    complete = done.returncode == 0 and set(got) == expected and set(got.values()) == {1}
    summary = next((line for line in done.stderr.splitlines() if "PDFs drawn" in line), "-")
    per_email = wall / len(histories)
    at_target = per_email * TARGET_EMAILS
    met = at_target < TARGET_S
    print(
        f"usage_mail: {len(histories)} ended jobs of {args.hours:g} h, 2 CPUs, 30 s scrapes; "
        f"{len(os.sched_getaffinity(0))} CPUs, load average {os.getloadavg()[0]:.2f}"
    )
    print(
        f"run: {wall:.1f} s wall, {cpu:.1f} s CPU (the run and its workers); "
        f"{per_email * 1000:.0f} ms wall and {cpu / len(histories) * 1000:.0f} ms CPU per email"
    )
    print(
        f"emails: {sum(got.values())} received for {len(expected)} jobs, "
        f"{sum(1 for n in got.values() if n > 1)} twice; exit {done.returncode}"
    )
    print(f"SMTP connections: {connections}; {summary.removeprefix('usage_mail: ')}")
    print(
        f"target: {TARGET_EMAILS:,} emails < {TARGET_S:.0f} s: {at_target:.0f} s at this rate "
        f"({'pass' if met else 'MISS'})"
    )
    if not complete:
        print("NOT EVERY EMAIL ONCE\n" + done.stderr[-3000:])
        return 1
    return 1 if args.check and not met else 0


def main(argv: Sequence[str]) -> int:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="cw-bench-mail-") as scratch:
        workdir = args.workdir or Path(scratch)
        if args.workdir is not None:
            shutil.rmtree(workdir, ignore_errors=True)
            workdir.mkdir(parents=True)
        return run(args, workdir)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
