"""Time whole `clusterwatch watch poll` processes beside the plain reference script.

Issue 23's measure of the pool watch: one poll is a process as the systemd timer starts it
(interpreter, imports, the poll, exit), so start-up counts. Each size sets up one loopback
pool (bench_poll.LoopbackPool: half execute nodes behind a fake `condor_status`, half GPU
workers behind a FakePrometheus, a fake Slack) and runs, in pairs and in alternating order,
the installed console script and `reference_poll.py` (the plain loop of the original
guide) on the same fakes, each on its own state dir. The first pair creates the states and
is reported apart; the others are the steady state (open incidents for the stale GPU files,
pending absence windows for the missing nodes, 10 queued events sent per poll).

    python benchmarks/bench_poll_process.py [--sizes 10000,100000] [--pairs 8]

Per contender: wall time (median and min of the steady polls), CPU time and peak RSS of the
process (os.wait4: its own and its waited-for children's, condor_status included,
started from a small spawner process so that the benchmark's memory is not counted), and the
median of the pairs' wall-time ratios. Issue 23's targets are checked at the largest size:
at most 0.5x the reference's wall time, at most 100 MiB peak, and time per target growing
at most x1.1 from the smallest size to the largest.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bench_poll import LoopbackPool, progress
from clusterwatch.loopback.fake_prometheus import FakePrometheus
from clusterwatch.loopback.http_recorder import fake_slack

REFERENCE = Path(__file__).with_name("reference_poll.py")
MAX_RATIO = 0.5
MAX_PEAK_MIB = 100.0
MAX_GROWTH = 1.1  # time per target, smallest size to largest
CONTENDERS = ("clusterwatch", "reference")


@dataclass
class Run:
    wall_s: float
    cpu_s: float
    peak_mib: float


@dataclass
class Contender:
    first: Run | None = None
    steady: list[Run] = field(default_factory=list)

    def median_wall(self) -> float:
        return statistics.median(run.wall_s for run in self.steady)


@dataclass
class SizeResult:
    targets: int
    contenders: dict[str, Contender]
    ratios: list[float]  # clusterwatch / reference, pair by pair

    def median_ratio(self) -> float:
        return statistics.median(self.ratios)


def clusterwatch_program() -> list[str]:
    """The console script installed beside this interpreter, as an operator runs it."""
    script = Path(sys.executable).with_name("clusterwatch")
    return [str(script)] if script.exists() else [sys.executable, "-m", "clusterwatch"]


# A process's peak RSS as wait4 gives it includes what the forking process held at the fork
# (the kernel keeps the larger of the old and the new image's peaks at exec). The benchmark
# holds the pool's answers, so the contenders are started by this small spawner instead, a
# fresh interpreter of about 10 MiB: below any figure measured here. One JSON line per run.
SPAWNER = """
import json, os, subprocess, sys, time
for line in sys.stdin:
    argv = json.loads(line)
    start = time.perf_counter()
    child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    print(json.dumps([child.returncode, wall, usage.ru_utime + usage.ru_stime,
                      usage.ru_maxrss]), flush=True)
"""


class Spawner:
    """Runs each contender from the small spawner process and reads back its figures."""

    def __init__(self) -> None:
        self.process = subprocess.Popen([sys.executable, "-c", SPAWNER], text=True,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def run(self, argv: Sequence[str]) -> Run:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(list(argv)) + "\n")
        self.process.stdin.flush()
        returncode, wall, cpu, maxrss_kib = json.loads(self.process.stdout.readline())
        if returncode != 0:
            raise SystemExit(f"{argv[0]} exited {returncode}: rerun it by hand to see why")
        return Run(wall, cpu, maxrss_kib / 1024)

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait()


def run_size(targets: int, pairs: int, workdir: Path, spawner: Spawner) -> SizeResult:
    contenders = {name: Contender() for name in CONTENDERS}
    ratios: list[float] = []
    with FakePrometheus() as prom, fake_slack() as slack:
        pool = LoopbackPool(workdir / f"pool-{targets}", targets, prom, slack)
        config = pool.config
        reference_state = workdir / f"pool-{targets}" / "reference-state"
        argv = {
            "clusterwatch": [*clusterwatch_program(), "watch", "poll",
                             "--config-dir", str(config.config_dir),
                             "--state-dir", str(config.state_dir),
                             "--prometheus-url", prom.url,
                             "--condor-status", config.condor_status],
            "reference": [sys.executable, str(REFERENCE), str(config.config_dir),
                          str(reference_state), prom.url, config.condor_status],
        }
        for index in range(pairs):
            order = CONTENDERS if index % 2 == 0 else CONTENDERS[::-1]
            walls = {}
            for name in order:
                # Each process reads the clock itself: the answer is made for now.
                pool.serve_gpu_answer(time.time())
                run = spawner.run(argv[name])
                walls[name] = run.wall_s
                if index == 0:
                    contenders[name].first = run
                else:
                    contenders[name].steady.append(run)
            if index:
                ratios.append(walls["clusterwatch"] / walls["reference"])
            progress(f"  {targets:>7} targets, pair {index + 1}/{pairs}: " + ", ".join(
                f"{name} {walls[name] * 1000:.0f} ms" for name in CONTENDERS))
    return SizeResult(targets, contenders, ratios)


def print_table(results: Sequence[SizeResult]) -> bool:
    """Print the figures; return whether issue 23's targets are met."""
    ms = 1000.0
    print(f"whole processes, steady state: {len(results[0].ratios)} pairs after the first; "
          f"load average {os.getloadavg()[0]:.2f}")
    print(f"{'targets':>8} {'contender':<13} {'first ms':>9} {'median ms':>10} {'min ms':>8} "
          f"{'CPU ms':>8} {'peak MiB':>9}")
    for result in results:
        for name, contender in result.contenders.items():
            assert contender.first is not None
            print(f"{result.targets:>8} {name:<13} {contender.first.wall_s * ms:9.1f} "
                  f"{contender.median_wall() * ms:10.1f} "
                  f"{min(run.wall_s for run in contender.steady) * ms:8.1f} "
                  f"{statistics.median(run.cpu_s for run in contender.steady) * ms:8.1f} "
                  f"{max(run.peak_mib for run in contender.steady):9.1f}")
        print(f"{result.targets:>8} ratio clusterwatch / reference (median of pairs): "
              f"{result.median_ratio():.2f}")
    largest, smallest = results[-1], results[0]
    growth = ((largest.contenders["clusterwatch"].median_wall() / largest.targets)
              / (smallest.contenders["clusterwatch"].median_wall() / smallest.targets))
    peak = max(run.peak_mib for run in largest.contenders["clusterwatch"].steady)
    checks = [
        (f"wall time at {largest.targets} targets at most {MAX_RATIO}x the reference's",
         largest.median_ratio() <= MAX_RATIO, f"{largest.median_ratio():.2f}x"),
        (f"peak RSS at {largest.targets} targets at most {MAX_PEAK_MIB:.0f} MiB",
         peak <= MAX_PEAK_MIB, f"{peak:.1f} MiB"),
    ]
    if len(results) > 1:
        checks.append((f"time per target x{MAX_GROWTH} or less from {smallest.targets} to "
                       f"{largest.targets}", growth <= MAX_GROWTH, f"x{growth:.2f}"))
    for what, met, figure in checks:
        print(f"target: {what}: {figure}, {'met' if met else 'MISSED'}")
    return all(met for _, met, _ in checks)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000",
                        help="comma-separated target counts, smallest first "
                             "(default: %(default)s)")
    parser.add_argument("--pairs", type=int, default=8,
                        help="pairs per size, the first one included (default: %(default)s)")
    parser.add_argument("--workdir", type=Path,
                        help="where the pools go (default: a new temporary directory, "
                             "removed afterwards); its file system decides what fsync costs")
    args = parser.parse_args(argv)
    try:
        args.sizes = sorted(int(s) for s in args.sizes.split(",") if s.strip())
    except ValueError:
        parser.error("--sizes takes integers, e.g. 10000,100000")
    if not args.sizes or args.sizes[0] < 2:
        parser.error("--sizes: each size must be at least 2")
    if args.pairs < 2:
        parser.error("--pairs must be at least 2 (the first pair is reported separately)")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="clusterwatch-bench-"))
    progress(f"pools under {workdir}; python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    spawner = Spawner()
    try:
        results = [run_size(size, args.pairs, workdir, spawner) for size in args.sizes]
    finally:
        spawner.close()
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0 if print_table(results) else 1


if __name__ == "__main__":
    sys.exit(main())
