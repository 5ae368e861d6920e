"""Time one pool-watch poll at 1,000 / 10,000 / 100,000 targets, on loopback fakes.

Half the targets are execute nodes (a fake `condor_status` printing two slot lines per
machine), half GPU workers (a FakePrometheus serving a real instant-vector body with the
labels Prometheus returns). Each size runs several polls, one simulated minute apart, on one
state dir: the first creates the state, the others show the steady state. 1% of the nodes
are missing and 1% of the GPU files stale, so incidents open, absence windows are pending
and events queue for a fake Slack that answers `ok` (10 events per poll).

    python benchmarks/bench_poll.py [--sizes 1000,10000,100000] [--polls 8]

The table goes to standard output, progress to standard error.
"""

from __future__ import annotations

import argparse
import functools
import gc
import logging
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from clusterwatch.loopback.fake_condor import write_fake_condor_status
from clusterwatch.loopback.fake_prometheus import FakePrometheus, vector_response
from clusterwatch.loopback.http_recorder import SLACK_WEBHOOK_PATH, HttpRecorder, fake_slack
from clusterwatch.watch import health, poll, prometheus, state
from clusterwatch.watch.channels import build_channels
from clusterwatch.watch.config import WatchConfig, load_config

T0 = 1_790_949_600.0  # 2026-10-02 14:00:00Z
STEP_S = 60.0  # one poll a minute, as the systemd timer runs it
TEXTFILE = "/var/lib/prometheus/node-exporter/gpu_vram.prom"
WRITE_EVERY_S = 30.0  # the VRAM writer's timer: a fresh file is 0-30 s old
STALE_AGE_S = 3600.0

# (phase, module, function) timed by wrapping the module attribute the poll looks up.
# Nested phases are reported exclusive of their children (see `exclusive`).
PHASES: tuple[tuple[str, Any, str], ...] = (
    ("inventory", poll, "read_inventory"),
    ("load", state, "load"),
    ("condor", poll, "query_machines"),
    ("query", poll, "query_gpu_files"),
    ("parse", prometheus, "parse_vector"),
    ("decide", poll, "evaluate"),
    ("save", state, "save"),
    ("deliver", poll, "deliver"),
    ("health", health, "write"),
)
CHILDREN = {"query": "parse"}  # query: the HTTP exchange alone
SHOWN = ("inventory", "load", "condor", "query", "parse", "decide", "save", "deliver", "health",
         "gc", "other")


class PhaseTimer:
    """Accumulates wall time per phase while installed; `reset` before each poll."""

    def __init__(self) -> None:
        self.totals: dict[str, float] = defaultdict(float)

    def reset(self) -> None:
        self.totals.clear()

    @contextmanager
    def installed(self) -> Iterator[None]:
        originals = [(module, name, getattr(module, name)) for _, module, name in PHASES]
        for (phase, module, name), (_, _, original) in zip(PHASES, originals):
            setattr(module, name, self._timed(phase, original))
        try:
            yield
        finally:
            for module, name, original in originals:
                setattr(module, name, original)

    def _timed(self, phase: str, function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self.totals[phase] += time.perf_counter() - start
        return timed

    def exclusive(self, total: float) -> dict[str, float]:
        phases = dict(self.totals)
        for parent, child in CHILDREN.items():
            if parent in phases:
                phases[parent] -= phases.get(child, 0.0)
        phases["other"] = total - sum(phases.values())
        return phases


@dataclass
class SizeResult:
    targets: int
    first_s: float
    steady_s: list[float]
    phases: list[dict[str, float]] = field(default_factory=list)  # steady polls only
    state_bytes: int = 0
    open_incidents: int = 0
    queued_events: int = 0


class LoopbackPool:
    """Inventories, a fake condor_status and the GPU answer for one size."""

    def __init__(self, root: Path, targets: int, prom: FakePrometheus, slack: HttpRecorder):
        rng = random.Random(targets)
        n_nodes = targets // 2
        n_gpus = targets - n_nodes
        self.nodes = [f"wn{i:06d}.pool.example.org" for i in range(n_nodes)]
        self.gpus = [f"10.{i >> 16 & 255}.{i >> 8 & 255}.{i & 255}:9100" for i in range(n_gpus)]
        missing = set(rng.sample(self.nodes, n_nodes // 100))
        self.stale = set(rng.sample(self.gpus, n_gpus // 100))
        self.offsets = [rng.uniform(0, WRITE_EVERY_S) for _ in self.gpus]
        self.prom = prom

        config_dir = root / "config"
        config_dir.mkdir(parents=True)
        self.state_dir = root / "state"
        (config_dir / "expected_nodes").write_text("".join(f"{n}\n" for n in self.nodes))
        (config_dir / "gpu_instances").write_text("".join(f"{g}\n" for g in self.gpus))
        secret = config_dir / "slack_webhook"
        secret.write_text(slack.url + SLACK_WEBHOOK_PATH + "\n")
        secret.chmod(0o600)
        machines = root / "machines.txt"  # `condor_status -af Machine`: one line per slot
        machines.write_text("".join(f"{n}\n{n}\n" for n in self.nodes if n not in missing))
        program = write_fake_condor_status(root / "bin", machines)
        self.config: WatchConfig = load_config(config_dir, self.state_dir, prom.url, str(program))

    def serve_gpu_answer(self, now: float) -> None:
        rows = []
        for instance, offset in zip(self.gpus, self.offsets):
            mtime = T0 - STALE_AGE_S if instance in self.stale else now - offset
            labels = {"__name__": "node_textfile_mtime_seconds", "file": TEXTFILE,
                      "instance": instance, "job": "node"}
            rows.append((labels, now, repr(mtime)))
        self.prom.set_response(vector_response(rows))


def run_size(targets: int, polls: int, workdir: Path) -> SizeResult:
    timer = PhaseTimer()
    first = 0.0
    steady: list[float] = []
    phases: list[dict[str, float]] = []
    with FakePrometheus() as prom, fake_slack() as slack:
        pool = LoopbackPool(workdir / f"pool-{targets}", targets, prom, slack)
        for index in range(polls):
            now = T0 + index * STEP_S
            pool.serve_gpu_answer(now)
            channels = build_channels(pool.config)
            timer.reset()
            with timer.installed():
                start = time.perf_counter()
                poll.run_poll(pool.config, channels, clock=functools.partial(float, now))
                # What the poll leaves to the cyclic collector counts as part of its cost.
                collected = time.perf_counter()
                gc.collect(1)  # the young generations, where its leftovers are
                end = time.perf_counter()
                timer.totals["gc"] += end - collected
                elapsed = end - start
            if index == 0:
                first = elapsed
            else:
                steady.append(elapsed)
                phases.append(timer.exclusive(elapsed))
            progress(f"  {targets:>7} targets, poll {index + 1}/{polls}: {elapsed * 1000:7.1f} ms")
    saved = state.load(pool.state_dir)
    return SizeResult(
        targets=targets, first_s=first, steady_s=steady, phases=phases,
        state_bytes=(pool.state_dir / state.STATE_FILE).stat().st_size,
        open_incidents=sum(r.incident is not None for r in saved.records.values()),
        queued_events=len(saved.outbox.events),
    )


def print_table(results: Sequence[SizeResult]) -> None:
    ms = 1000.0
    print(f"steady state: median and min of {len(results[0].steady_s)} polls after the first; "
          "phases: median ms of the steady polls (exclusive)")
    header = (f"{'targets':>8} {'first ms':>9} {'median ms':>10} {'min ms':>8} "
              f"{'us/target':>9} " + " ".join(f"{p[:7]:>7}" for p in SHOWN)
              + f" {'state bytes':>12} {'open':>5} {'queued':>6}")
    print(header)
    for r in results:
        median = statistics.median(r.steady_s)
        cells = " ".join(
            f"{statistics.median(p.get(name, 0.0) for p in r.phases) * ms:7.1f}" for name in SHOWN
        )
        print(f"{r.targets:>8} {r.first_s * ms:9.1f} {median * ms:10.1f} "
              f"{min(r.steady_s) * ms:8.1f} {median / r.targets * 1e6:9.2f} {cells} "
              f"{r.state_bytes:>12} {r.open_incidents:>5} {r.queued_events:>6}")
    for small, big in zip(results, results[1:]):
        size_ratio = big.targets / small.targets
        time_ratio = statistics.median(big.steady_s) / statistics.median(small.steady_s)
        print(f"linearity {small.targets} -> {big.targets}: targets x{size_ratio:.1f}, "
              f"median time x{time_ratio:.2f}, time per target x{time_ratio / size_ratio:.2f}")


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000",
                        help="comma-separated target counts (default: %(default)s)")
    parser.add_argument("--polls", type=int, default=8,
                        help="polls per size, the first one included (default: %(default)s)")
    parser.add_argument("--workdir", type=Path,
                        help="where state dirs go (default: a new temporary directory, removed "
                             "afterwards); its file system decides what the fsyncs cost")
    parser.add_argument("--log", action="store_true",
                        help="show the watch's log on stderr (default: formatted, then dropped)")
    args = parser.parse_args(argv)
    try:
        args.sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    except ValueError:
        parser.error("--sizes takes integers, e.g. 1000,10000")
    if not args.sizes or min(args.sizes) < 2:
        parser.error("--sizes: each size must be at least 2")
    if args.polls < 2:
        parser.error("--polls must be at least 2 (the first poll is reported separately)")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    # As the CLI logs by default (WARNING: one line per transition): formatted, then dropped.
    sink = sys.stderr if args.log else open(os.devnull, "w")  # noqa: SIM115
    logging.basicConfig(level=logging.WARNING, stream=sink,
                        format="%(levelname)s %(name)s: %(message)s")
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="clusterwatch-bench-"))
    progress(f"state dirs under {workdir}; python {sys.version.split()[0]}, "
             f"{os.cpu_count()} CPUs")
    try:
        results = [run_size(size, args.polls, workdir) for size in args.sizes]
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    print_table(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
