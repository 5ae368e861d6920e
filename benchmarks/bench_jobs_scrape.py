"""Time one job-exporter scrape on a node with 100 jobs and 2,000 processes, against psutil.

Builds the node for real (root, cgroup v1): Slurm-shaped job cgroups in a private
hierarchy (`clusterwatch.testing.cgroup_lab`) in freezer, cpuacct, cpuset, memory and pids,
and 2,000 sleeping processes, 20 per job, moved into the jobs' task directories. Then, side
by side and interleaved in the same run, it times
- `clusterwatch`: a full scrape of `JobsCollector` (cgroup files, /proc per process, and the
  text exposition), pointed at the private hierarchy;
- `psutil`: the original exporter's approach, per job and per process
  `psutil.Process(pid)` with cpu_percent(interval=None), cpu_times, memory_info,
  num_threads, num_fds, io_counters and open_files (without its 0.1 s sleep per process,
  and without building any exposition, which favours it).
Wall time per scrape (median, p90) and CPU time per scrape (process_time), and their
ratios. Everything is killed and removed at the end, also after Ctrl-C.

    sudo python benchmarks/bench_jobs_scrape.py [--jobs 100] [--processes 2000] [--scrapes 30]

Targets: at least 5x less CPU than psutil, under 100 ms per scrape.
"""

from __future__ import annotations

import argparse
import gc
import os
import pwd
import signal
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import FrameType
from typing import Optional

from prometheus_client import CollectorRegistry, generate_latest

from clusterwatch.jobs.exporter import JobsCollector
from clusterwatch.testing.cgroup_lab import CgroupLab

TARGET_CPU_RATIO = 5.0
TARGET_WALL_MS = 100.0
FIRST_JOB_ID = 4_200_000


@dataclass
class Timings:
    wall_ms: list[float] = field(default_factory=list)
    cpu_ms: list[float] = field(default_factory=list)

    def add(self, run: Callable[[], object]) -> None:
        wall, cpu = time.perf_counter(), time.process_time()
        run()
        self.cpu_ms.append((time.process_time() - cpu) * 1000)
        self.wall_ms.append((time.perf_counter() - wall) * 1000)

    def median_wall(self) -> float:
        return statistics.median(self.wall_ms)

    def p90_wall(self) -> float:
        return _p90(self.wall_ms)

    def median_cpu(self) -> float:
        return statistics.median(self.cpu_ms)

    def p90_cpu(self) -> float:
        return _p90(self.cpu_ms)


def _p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10)[-1] if len(values) > 1 else values[0]


def build_node(lab: CgroupLab, jobs: int, processes: int, uid: int) -> dict[int, str]:
    """`jobs` job cgroups, `processes` sleeping processes spread over them; {jobid: dir}."""
    tasks = {FIRST_JOB_ID + n: lab.task_dir(uid, FIRST_JOB_ID + n) for n in range(jobs)}
    job_ids = list(tasks)
    for n in range(processes):
        jobid = job_ids[n % jobs]
        lab.spawn(["sleep", "86400"], tasks[jobid], user=uid, env=job_environment(jobid, uid))
        if n % 500 == 499:
            print(f"  {n + 1} processes started", file=sys.stderr)
    return tasks


def job_environment(jobid: int, uid: int) -> dict[str, str]:
    """What slurmstepd gives a task (the part the exporter reads), so that identities are
    found as on a real node."""
    return {"PATH": "/usr/bin:/bin", "SLURM_JOB_ID": str(jobid), "SLURM_JOB_UID": str(uid),
            "SLURM_JOB_ACCOUNT": "bench", "SLURM_JOB_PARTITION": "batch",
            "SLURM_STEP_ID": "0", "SLURM_PROCID": "0"}


def exporter_scrape(registry: CollectorRegistry) -> Callable[[], object]:
    return lambda: generate_latest(registry)


def psutil_scrape(lab: CgroupLab, tasks: dict[int, str]) -> Callable[[], object]:
    """The original's loop: per job, per PID, every psutil reading, summed per job."""
    import psutil

    procs_files = {jobid: [lab.root / c / relative / "cgroup.procs" for c in ("cpuacct",)]
                   for jobid, relative in tasks.items()}

    def scrape() -> dict[int, dict[str, float]]:
        result: dict[int, dict[str, float]] = {}
        for jobid, files in procs_files.items():
            pids = {int(p) for path in files for p in path.read_text().split()}
            totals = dict.fromkeys(("cpu_percent", "user", "system", "rss", "threads", "fds",
                                    "read_bytes", "write_bytes", "open_files"), 0.0)
            for pid in pids:
                try:
                    process = psutil.Process(pid)
                    totals["cpu_percent"] += process.cpu_percent(interval=None)
                    times = process.cpu_times()
                    totals["user"] += times.user
                    totals["system"] += times.system
                    totals["rss"] += process.memory_info().rss
                    totals["threads"] += process.num_threads()
                    totals["fds"] += process.num_fds()
                    io = process.io_counters()
                    totals["read_bytes"] += io.read_bytes
                    totals["write_bytes"] += io.write_bytes
                    totals["open_files"] += len(process.open_files())
                except (psutil.NoSuchProcess, psutil.AccessDenied):
                    continue
            result[jobid] = totals
        return result

    return scrape


def check_exporter_sees_the_node(registry: CollectorRegistry, jobs: int, processes: int) -> None:
    found_jobs = registry.get_sample_value("jobs_exporter_jobs")
    found_processes = sum(
        sample.value for metric in registry.collect() for sample in metric.samples
        if sample.name == "jobs_processes")
    if found_jobs != jobs or found_processes != processes:
        raise SystemExit(f"the exporter sees {found_jobs} jobs and {found_processes} "
                         f"processes, not {jobs} and {processes}: wrong hierarchy?")


def run(args: argparse.Namespace) -> int:
    uid = pwd.getpwnam(args.user).pw_uid
    with CgroupLab() as lab:
        print(f"building {args.jobs} jobs, {args.processes} processes under {lab.root} "
              f"-> {lab.cgroup_root}/<controller>/{lab.name}", file=sys.stderr)
        started = time.monotonic()
        tasks = build_node(lab, args.jobs, args.processes, uid)
        print(f"  built in {time.monotonic() - started:.1f} s", file=sys.stderr)

        registry = CollectorRegistry()
        registry.register(JobsCollector(cgroup_root=str(lab.root), proc_root="/proc"))
        check_exporter_sees_the_node(registry, args.jobs, args.processes)
        contenders = {
            "clusterwatch": exporter_scrape(registry),
            "psutil": psutil_scrape(lab, tasks),
        }
        timings = {name: Timings() for name in contenders}
        for _ in range(args.warmup):
            for scrape in contenders.values():
                scrape()
        for _ in range(args.scrapes):
            for name, scrape in contenders.items():  # interleaved: same machine noise
                gc.collect()
                timings[name].add(scrape)
        report(timings, args)
        ours, theirs = timings["clusterwatch"], timings["psutil"]
        met = (theirs.median_cpu() / ours.median_cpu() >= TARGET_CPU_RATIO
               and ours.median_wall() < TARGET_WALL_MS)
    return 0 if met or not args.check else 1


def report(timings: dict[str, Timings], args: argparse.Namespace) -> None:
    print(f"\n{args.jobs} jobs, {args.processes} processes, {args.scrapes} scrapes each "
          f"(after {args.warmup} warm-up), Python {sys.version.split()[0]}, "
          f"{os.cpu_count()} CPUs\n")
    print(f"{'':14}{'wall min':>10}{'wall median':>12}{'wall p90':>10}{'CPU median':>12}"
          f"{'CPU p90':>10}   (ms per scrape)")
    for name, t in timings.items():
        print(f"{name:14}{min(t.wall_ms):10.1f}{t.median_wall():12.1f}{t.p90_wall():10.1f}"
              f"{t.median_cpu():12.1f}{t.p90_cpu():10.1f}")
    ours, theirs = timings["clusterwatch"], timings["psutil"]
    cpu_ratio = theirs.median_cpu() / ours.median_cpu()
    wall_ratio = theirs.median_wall() / ours.median_wall()
    print(f"{'psutil / ours':14}{'':10}{wall_ratio:11.1f}x{'':10}{cpu_ratio:11.1f}x")
    print(f"\ntargets: CPU ratio >= {TARGET_CPU_RATIO:g}x: "
          f"{'met' if cpu_ratio >= TARGET_CPU_RATIO else 'MISSED'} ({cpu_ratio:.1f}x); "
          f"wall < {TARGET_WALL_MS:g} ms: "
          f"{'met' if ours.median_wall() < TARGET_WALL_MS else 'MISSED'} "
          f"({ours.median_wall():.1f} ms)")


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=100)
    parser.add_argument("--processes", type=int, default=2000)
    parser.add_argument("--scrapes", type=int, default=30, help="timed scrapes of each")
    parser.add_argument("--warmup", type=int, default=3, help="untimed scrapes of each first")
    parser.add_argument("--user", default="nobody",
                        help="the jobs' processes run as this user (default: %(default)s)")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 when a target is missed")
    return parser.parse_args(argv)


def _terminate(signum: int, _frame: Optional[FrameType]) -> None:
    raise SystemExit(128 + signum)  # unwinds through CgroupLab's cleanup


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    if os.geteuid() != 0:
        print("bench_jobs_scrape: needs root (it creates cgroups)", file=sys.stderr)
        return 1
    signal.signal(signal.SIGTERM, _terminate)
    try:
        return run(args)
    except KeyboardInterrupt:
        print("interrupted; processes and cgroups removed", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
