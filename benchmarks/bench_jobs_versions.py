"""Two versions of the job exporter side by side on one lab node: CPU per scrape and the
expositions compared byte for byte.

    git archive 935c84b src | tar -x -C /tmp/before        # the exporter of another commit
    sudo python benchmarks/bench_jobs_versions.py --before /tmp/before/src [--scrapes 30]

Builds the node of bench_jobs_scrape.py (root, cgroup v1: `--jobs` Slurm-shaped jobs,
`--processes` sleeping processes), then starts one worker process per version, each
importing `clusterwatch` from its own source directory (`--before`, and this checkout's
`src`) and holding one `JobsCollector` on the node. Every round asks each worker for a full
scrape (`JobsCollector.exposition`, text format), one after the other, the order swapped
every round (the same machine noise for both), and compares the two expositions byte for
byte, the collection's own duration masked. A round that differs is printed with the series
that differ: a value the kernel changed between the two readings (memory.usage_in_bytes of
a job, say) is the kernel's, not the exporter's; anything else is a behaviour change.

With `--churn N` the node changes between rounds, never between the two scrapes of a
round (see `Churn`): processes exit and start, and a step is removed and made again under
the same name, so that both versions meet what their held files and remembered processes
must survive; the expositions must still be identical (CPU figures are then not a steady
state's).

Also timed in each worker, after the rounds: a new collector's first scrape (which opens
every file it then holds), the files closed outside the timing.

Output: the median and p90 CPU time (`time.process_time` of the worker) per scrape of each
version, their ratio and the median of the rounds' own after/before ratios, and how many
rounds' expositions were identical. Exit status 1 when a
round differs other than by the kernel's memory figures.
"""

from __future__ import annotations

import argparse
import os
import pwd
import random
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Optional

from bench_jobs_scrape import build_node, job_environment
from clusterwatch.loopback.cgroup_lab import CgroupLab

HERE = Path(__file__).resolve().parent
_DURATION = re.compile(rb"^(jobs_exporter_collect_duration_seconds) \S+$", re.MULTILINE)
# Read from the kernel at each scrape and changed by it between two workers' readings.
_KERNEL_MOVING = (b"jobs_memory_usage_bytes", b"jobs_memory_max_usage_bytes",
                  b"jobs_memory_cache_bytes", b"jobs_memory_rss_bytes")

# The worker: one JobsCollector; "scrape" answers the CPU seconds and the exposition,
# "first" the CPU seconds of a new collector's first scrape.
WORKER = """
import sys, time
from clusterwatch.jobs.exporter import JobsCollector
from clusterwatch.jobs.exposition import TEXT
root = sys.argv[1]
collector = JobsCollector(cgroup_root=root, proc_root="/proc", nvml=None)
out = sys.stdout.buffer
for line in sys.stdin:
    if line.strip() == "first":
        fresh = JobsCollector(cgroup_root=root, proc_root="/proc", nvml=None)
        started = time.process_time()
        fresh.exposition(TEXT)
        cpu = time.process_time() - started
        fresh._sampler.files.held.close()
        out.write(b"%r 0\\n" % cpu)
    else:
        started = time.process_time()
        text = collector.exposition(TEXT)
        cpu = time.process_time() - started
        out.write(b"%r %d\\n" % (cpu, len(text)) + text)
    out.flush()
"""


class Worker:
    def __init__(self, name: str, source: str, cgroup_root: str) -> None:
        self.name = name
        env = {**os.environ, "PYTHONPATH": source}
        self.process = subprocess.Popen([sys.executable, "-c", WORKER, cgroup_root],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        env=env)
        self.cpu_ms: list[float] = []
        self.first_ms: list[float] = []

    def ask(self, verb: str) -> tuple[float, bytes]:
        stdin: Optional[IO[bytes]] = self.process.stdin
        stdout: Optional[IO[bytes]] = self.process.stdout
        assert stdin is not None and stdout is not None
        stdin.write(verb.encode() + b"\n")
        stdin.flush()
        cpu, length = stdout.readline().split()
        return float(cpu) * 1000, stdout.read(int(length))

    def scrape(self) -> bytes:
        cpu_ms, text = self.ask("scrape")
        self.cpu_ms.append(cpu_ms)
        return _DURATION.sub(rb"\1 DURATION", text)

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(30)


def differing(before: bytes, after: bytes) -> list[bytes]:
    """The lines of one exposition that the other does not have."""
    return sorted(set(before.splitlines()) ^ set(after.splitlines()))


class Churn:
    """The node changing between rounds (never between the two scrapes of one round), as a
    busy node does: each round `processes` sleeping processes are killed and as many started
    in other jobs, and one of three extra steps (`c0`, `c1`, `c2`, each in its own job) is
    removed with its processes and made again under the same name with two new ones, so
    that held files and directories of the removed cgroups meet a new cgroup of the same
    path."""

    STEPS = 3

    def __init__(self, lab: CgroupLab, tasks: dict[int, str], uid: int,
                 processes: int) -> None:
        self.lab = lab
        self.tasks = tasks
        self.uid = uid
        self.processes = processes
        self.started = [(jobid, process) for n, process in enumerate(lab.processes)
                        for jobid in [list(tasks)[n % len(tasks)]]]
        self.steps: dict[int, list[subprocess.Popen[bytes]]] = {}
        self.random = random.Random(23)
        self.rounds = 0

    def change(self) -> None:
        for _ in range(self.processes):
            _, process = self.started.pop(self.random.randrange(len(self.started)))
            process.kill()
            process.wait()
            jobid = self.random.choice(list(self.tasks))
            self.started.append((jobid, self._spawn(jobid, self.tasks[jobid])))
        step = self.rounds % self.STEPS
        jobid = list(self.tasks)[step]
        relative = f"slurm/uid_{self.uid}/job_{jobid}/step_c{step}"
        for process in self.steps.pop(step, []):
            process.kill()
            process.wait()
        for controller in self.lab.controllers:
            for directory in (f"{relative}/task_0", relative):
                _remove(self.lab.cgroup_root / controller / self.lab.name / directory)
        task = self.lab.task_dir(self.uid, jobid, step=f"c{step}")
        self.steps[step] = [self._spawn(jobid, task) for _ in range(2)]
        self.rounds += 1

    def _spawn(self, jobid: int, task: str) -> subprocess.Popen[bytes]:
        return self.lab.spawn(["sleep", "86400"], task, user=self.uid,
                              env=job_environment(jobid, self.uid))


def _remove(directory: Path) -> None:
    for _ in range(100):  # EBUSY while killed processes are still leaving the cgroup
        try:
            directory.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.02)
    directory.rmdir()


def run(args: argparse.Namespace) -> int:
    uid = pwd.getpwnam(args.user).pw_uid
    with CgroupLab() as lab:
        print(f"building {args.jobs} jobs, {args.processes} processes", file=sys.stderr)
        tasks = build_node(lab, args.jobs, args.processes, uid)
        churn = Churn(lab, tasks, uid, args.churn) if args.churn else None
        time.sleep(2)  # the processes just started settle (memory charged)
        workers = [Worker("before", str(Path(args.before).resolve()), str(lab.root)),
                   Worker("after", str(HERE.parent / "src"), str(lab.root))]
        try:
            for _ in range(args.warmup):
                for worker in workers:
                    worker.scrape()
            identical = kernel_only = 0
            changed: list[list[bytes]] = []
            for round_number in range(args.scrapes):
                order = workers if round_number % 2 == 0 else workers[::-1]
                texts = {worker.name: worker.scrape() for worker in order}
                lines = differing(texts["before"], texts["after"])
                if not lines:
                    identical += 1
                elif all(line.startswith(_KERNEL_MOVING) for line in lines):
                    kernel_only += 1
                else:
                    changed.append(lines)
                if churn is not None:
                    churn.change()
                    time.sleep(0.5)  # new processes' memory charged before both read it
            for _ in range(args.first):
                for worker in workers:
                    worker.first_ms.append(worker.ask("first")[0])
        finally:
            for worker in workers:
                worker.close()
        report(workers, args, identical, kernel_only, changed)
    return 1 if changed else 0


def report(workers: list[Worker], args: argparse.Namespace, identical: int,
           kernel_only: int, changed: list[list[bytes]]) -> None:
    print(f"\n{args.jobs} jobs, {args.processes} processes, {args.scrapes} rounds (after "
          f"{args.warmup} warm-up), order swapped every round; {os.cpu_count()} CPUs, load "
          f"average {' '.join(f'{x:.1f}' for x in os.getloadavg())}\n")
    print(f"{'':12}{'CPU median':>11}{'CPU p90':>9}{'first scrape':>14}   (ms)")
    for worker in workers:
        p90 = statistics.quantiles(worker.cpu_ms, n=10)[-1]
        first = statistics.median(worker.first_ms) if worker.first_ms else float("nan")
        print(f"  {worker.name:10}{statistics.median(worker.cpu_ms):11.1f}{p90:9.1f}"
              f"{first:14.1f}")
    before, after = (statistics.median(worker.cpu_ms) for worker in workers)
    pairs = statistics.median(a / b for b, a in zip(*(worker.cpu_ms for worker in workers)))
    print(f"  after / before: {after / before:.3f} of the medians "
          f"({(after - before) / before:+.1%}), {pairs:.3f} the median of the rounds' pairs")
    print(f"\nexpositions: {identical} of {args.scrapes} rounds identical byte for byte, "
          f"{kernel_only} differing only in memory figures the kernel changed between the "
          f"two readings, {len(changed)} otherwise")
    for lines in changed[:3]:
        print("  differs:", *[line.decode(errors="replace") for line in lines[:6]],
              sep="\n    ")


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--before", required=True,
                        help="the source directory (with clusterwatch/) of the other version")
    parser.add_argument("--jobs", type=int, default=100)
    parser.add_argument("--processes", type=int, default=2000)
    parser.add_argument("--scrapes", type=int, default=30, help="timed rounds")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--first", type=int, default=5, help="first scrapes timed of each")
    parser.add_argument("--user", default="nobody")
    parser.add_argument("--churn", type=int, default=0, metavar="N",
                        help="between rounds, kill N processes and start N, and remove and "
                        "make again one of three extra steps (see Churn)")
    return parser.parse_args(argv)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    if os.geteuid() != 0:
        print("bench_jobs_versions: needs root (it creates cgroups)", file=sys.stderr)
        return 1
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
