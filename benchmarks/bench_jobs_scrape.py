"""Time one job-exporter scrape on a node with 100 jobs and 2,000 processes, against psutil.

Builds the node for real (root, cgroup v1): Slurm-shaped job cgroups in a private
hierarchy (`clusterwatch.loopback.cgroup_lab`) in freezer, cpuacct, cpuset, memory and pids,
and 2,000 sleeping processes, 20 per job, moved into the jobs' task directories. Then it
times two contenders that gather the same figures, side by side and interleaved in one run:

- `clusterwatch`: `JobsCollector`, pointed at the private hierarchy (one instance, reused:
  its held files and counters are part of what it is);
- `psutil`: the original exporter's approach made to gather exactly the exporter's
  figures: jobs found by globbing the cgroup directories, each job's cgroup files read with
  `open().read()` (cpuacct, cpuset, memory: the same files), its `cgroup.procs` found with
  `os.walk`, and per PID a fresh `psutil.Process(pid)` read under `oneshot()` for its name
  and real uid (slurmstepd left out), threads, RSS, open descriptors and I/O counters; the
  job's identity from one process's `environ()`, once per job; the same I/O bookkeeping
  (`clusterwatch.jobs.counters`: totals that survive exits) and the same parsers. Not the
  original's `cpu_percent`, `cpu_times` and `open_files` (the exporter takes CPU from the
  cgroup and reads open files only with --scratch) nor its 0.1 s sleep per process.

Each is timed twice per round:
- collection only: the exporter's `collect_samples()`, psutil's per-job figures as the same
  `JobSample` records;
- full scrape: collection and the text exposition, the exporter's `exposition()` (what
  `serve` answers and `collect` prints), psutil's `generate_latest` over prometheus_client
  families of its records (`metric_families.job_families`) and its own health families.
Before timing, both contenders' records and expositions are compared: the run stops if they
differ (other than the exporter's own collection duration).

CPU time per scrape (`time.process_time`, user + system of this process, median and p90)
is the measure on a shared machine; wall time is shown too. Everything is killed and
removed at the end, also after Ctrl-C.

    sudo python benchmarks/bench_jobs_scrape.py [--jobs 100] [--processes 2000] [--scrapes 30]

Also timed: the system-call floor (`SystemCallFloor`: the same system calls as a scrape in a
tight loop, nothing else) and a new exporter's first scrape (which opens every file it
then holds; closing them afterwards, which no scrape does, is timed apart). `--profile`
prints cProfile's view of the exporter's scrapes instead.

Targets (issue 23): a full scrape at most 30 ms of CPU and at least 10x less CPU than
psutil, on the same run; the first scrape at most 60 ms of CPU.
"""

from __future__ import annotations

import argparse
import gc
import glob
import os
import pwd
import signal
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from types import FrameType
from typing import Any, Optional

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

from clusterwatch.jobs import cgroup_parse, job_metadata
from clusterwatch.jobs.cgroup_stats import NS_PER_S, USER_HZ, CgroupStats
from clusterwatch.jobs.counters import JobCounters
from clusterwatch.jobs.exporter import JobsCollector
from clusterwatch.jobs.exposition import TEXT
from clusterwatch.jobs.file_reader import ERROR_KINDS
from clusterwatch.jobs.layout import SLURM_JOB_DIR, JobCgroup
from clusterwatch.jobs.metric_families import job_families
from clusterwatch.jobs.procfs import IoCounters
from clusterwatch.jobs.sampler import JobSample
from clusterwatch.loopback.cgroup_lab import CgroupLab

TARGET_CPU_RATIO = 10.0
TARGET_MS = 30.0
TARGET_FIRST_MS = 60.0  # a new exporter's first scrape, which opens every file it holds
FIRST_JOB_ID = 4_200_000
CPU_CONTROLLERS = ("cpuacct", "cpu,cpuacct", "cpuacct,cpu")


@dataclass
class Timings:
    wall_ms: list[float] = field(default_factory=list)
    cpu_ms: list[float] = field(default_factory=list)

    def add(self, run: Callable[[], object]) -> None:
        gc.collect()
        wall, cpu = time.perf_counter(), time.process_time()
        run()
        self.cpu_ms.append((time.process_time() - cpu) * 1000)
        self.wall_ms.append((time.perf_counter() - wall) * 1000)

    def median_cpu(self) -> float:
        return statistics.median(self.cpu_ms)

    def median_wall(self) -> float:
        return statistics.median(self.wall_ms)


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


class _Fixed(Collector):
    def __init__(self, families: Sequence[Metric]) -> None:
        self.families = list(families)

    def collect(self) -> Iterable[Metric]:
        return self.families


class PsutilBaseline:
    """The exporter's figures gathered the psutil way (see the module's docstring)."""

    def __init__(self, cgroup_root: str) -> None:
        import psutil

        self.psutil: Any = psutil
        self.root = cgroup_root
        self.counters: dict[str, JobCounters] = {}
        self.identities: dict[str, job_metadata.JobMetadata] = {}
        self.users: dict[int, str] = {}
        self.errors = dict.fromkeys(ERROR_KINDS, 0)

    def collect(self) -> list[JobSample]:
        samples = []
        freezer = os.path.join(self.root, "freezer")
        for path in sorted(glob.glob(os.path.join(freezer, "slurm*", "uid_*", "job_*"))):
            key = os.path.relpath(path, freezer)
            match = SLURM_JOB_DIR.fullmatch(os.path.basename(path))
            if match is None or not match.group("jobid"):
                continue
            samples.append(self._job(key, match.group("jobid"), path))
        self.counters = {k: v for k, v in self.counters.items()
                         if k in {s.job.key for s in samples}}
        return samples

    def _job(self, key: str, jobid: str, procs_dir: str) -> JobSample:
        uid = int(key.split("/")[1][len("uid_"):])
        cpu_dir = next((os.path.join(self.root, c, key) for c in CPU_CONTROLLERS
                        if os.path.isdir(os.path.join(self.root, c, key))), None)
        job = JobCgroup(scheduler="slurm", key=key, name=os.path.basename(key), inode=0,
                        cgroup_version=1, jobid=jobid, uid=uid, cpu_dir=cpu_dir,
                        memory_dir=os.path.join(self.root, "memory", key),
                        cpuset_dir=os.path.join(self.root, "cpuset", key),
                        procs_dir=procs_dir, has_steps=True)
        pids: set[int] = set()
        steps = 0
        for directory, subdirectories, _ in os.walk(procs_dir):
            if directory == procs_dir:
                steps = sum(name.startswith("step_") for name in subdirectories)
            with open(os.path.join(directory, "cgroup.procs")) as procs:
                pids.update(int(pid) for pid in procs.read().split())
        sample = JobSample(jobid=jobid, user=self._user(uid), uid=uid, job=job,
                           metadata=job_metadata.JobMetadata(), cgroup=self._cgroup(job),
                           steps=steps)
        readings = []
        job_pids = []
        for pid in sorted(pids):
            try:
                process = self.psutil.Process(pid)
                with process.oneshot():
                    if process.name() == "slurmstepd" and process.uids().real == 0:
                        continue
                    threads = process.num_threads()
                    rss = process.memory_info().rss
                    fds = process.num_fds()
                    io = process.io_counters()
            except self.psutil.NoSuchProcess:
                self.errors["process_vanished"] += 1
                continue
            except self.psutil.AccessDenied:
                self.errors["permission_denied"] += 1
                continue
            job_pids.append(pid)
            sample.processes += 1
            sample.threads += threads
            sample.max_process_threads = max(sample.max_process_threads, threads)
            sample.open_files += fds
            sample.process_rss_bytes += rss
            # (PID, start time) tells processes apart, as the exporter's (PID, start ticks).
            readings.append(((pid, round(process.create_time() * 100)), IoCounters(
                io.read_bytes, io.write_bytes, io.read_count, io.write_count)))
        sample.metadata = self._identity(key, job_pids)
        counters = self.counters.setdefault(key, JobCounters())
        total = counters.update(readings)
        sample.spawned = counters.spawned
        sample.io = total if counters.io_known else None
        return sample

    def _cgroup(self, job: JobCgroup) -> CgroupStats:
        stats = CgroupStats()

        def read(directory: Optional[str], name: str) -> Optional[str]:
            try:
                with open(os.path.join(directory or "", name)) as file:
                    return file.read()
            except OSError:
                return None

        usage = read(job.cpu_dir, "cpuacct.usage")
        if usage is not None:
            stats.cpu_seconds = cgroup_parse.parse_int(usage) / NS_PER_S
        ticks = read(job.cpu_dir, "cpuacct.stat")
        if ticks is not None:
            parsed = cgroup_parse.parse_flat_keyed(ticks)
            stats.cpu_user_seconds = parsed["user"] / USER_HZ
            stats.cpu_system_seconds = parsed["system"] / USER_HZ
        cpus = read(job.cpuset_dir, "cpuset.cpus")
        if cpus is not None:
            stats.cpus = cgroup_parse.parse_cpulist(cpus) or None
        percpu = read(job.cpu_dir, "cpuacct.usage_percpu")
        if percpu is not None:
            per_cpu = cgroup_parse.parse_percpu(percpu)
            wanted = stats.cpus or [c for c, ns in enumerate(per_cpu) if ns]
            stats.core_seconds = {c: per_cpu[c] / NS_PER_S for c in wanted if c < len(per_cpu)}
        memory = read(job.memory_dir, "memory.stat")
        if memory is not None:
            parsed = cgroup_parse.parse_flat_keyed(memory)
            stats.memory_rss_bytes = parsed.get("total_rss")
            stats.memory_cache_bytes = parsed.get("total_cache")
            stats.memory_shmem_bytes = parsed.get("total_shmem")
        for attribute, name, parse in (
                ("memory_usage_bytes", "memory.usage_in_bytes", cgroup_parse.parse_int),
                ("memory_max_usage_bytes", "memory.max_usage_in_bytes", cgroup_parse.parse_int),
                ("memory_limit_bytes", "memory.limit_in_bytes", cgroup_parse.parse_limit),
                ("memory_failcnt", "memory.failcnt", cgroup_parse.parse_int)):
            text = read(job.memory_dir, name)
            if text is not None:
                setattr(stats, attribute, parse(text))
        oom = read(job.memory_dir, "memory.oom_control")
        if oom is not None:
            stats.memory_oom_kills = cgroup_parse.parse_flat_keyed(oom).get("oom_kill")
        return stats

    def _identity(self, key: str, pids: list[int]) -> job_metadata.JobMetadata:
        known = self.identities.get(key)
        if known is not None:
            return known
        for pid in pids[:8]:
            try:
                environ = self.psutil.Process(pid).environ()
            except (self.psutil.NoSuchProcess, self.psutil.AccessDenied):
                continue
            if job_metadata.SLURM_MARKER in environ:
                known = self.identities[key] = job_metadata.slurm_metadata(environ)
                return known
        return job_metadata.JobMetadata()

    def _user(self, uid: int) -> str:
        name = self.users.get(uid)
        if name is None:
            try:
                name = pwd.getpwuid(uid).pw_name
            except KeyError:
                name = str(uid)
            self.users[uid] = name
        return name

    def scrape(self) -> bytes:
        started = time.monotonic()
        samples = self.collect()
        duration = time.monotonic() - started
        errors = CounterMetricFamily(
            "jobs_exporter_errors", "Failed reads since the exporter started, by kind "
            "(process_vanished, permission_denied, unreadable, malformed, job_failed, gpu, "
            "duplicate_job); none of them fails a collection.", labels=["kind"])
        for kind, count in sorted(self.errors.items()):
            errors.add_metric([kind], count)
        own = [
            GaugeMetricFamily("jobs_exporter_collect_duration_seconds",
                              "Time this collection took to read every job's cgroups and "
                              "processes.", value=duration),
            GaugeMetricFamily("jobs_exporter_jobs", "Jobs found on this node in this "
                              "collection.", value=len(samples)),
            errors,
        ]
        registry = CollectorRegistry()
        registry.register(_Fixed([*job_families(samples), *own]))
        return generate_latest(registry)


class SystemCallFloor:
    """The system calls of one scrape and nothing else, as a tight loop of `os` calls: a
    `pread` of every file the exporter holds open (its processes' `statm` and `io`, its jobs'
    cgroup files), an `fstat` of every /proc directory it holds (`fd/`, `task/`), and for
    every cgroup below each job an open of its `cgroup.procs` relative to the directory it
    holds, a read and a close, an `fstat` of that directory and, where its link count says
    it has subdirectories, a listing. What the exporter's Python adds to that is the
    distance to the floor."""

    def __init__(self, ours: JobsCollector, cgroup_root: str) -> None:
        held = ours._sampler.files.held
        entries = held.entries if held is not None else {}
        cgroups = [directory for directory, _, names in
                   os.walk(os.path.join(cgroup_root, "freezer"))
                   if "/job_" in directory and "cgroup.procs" in names]
        directories = ("/fd", "/task")
        self.files = [e.fd for path, e in entries.items()
                      if not path.endswith(directories) and path not in cgroups]
        self.directories = [e.fd for path, e in entries.items() if path.endswith(directories)]
        self.cgroups = [(directory, entries[directory].fd) for directory in cgroups]

    def scrape(self) -> None:
        pread, fstat = os.pread, os.fstat
        for fd in self.files:
            pread(fd, 4096, 0)
        for fd in self.directories:
            fstat(fd)
        self.scrape_cgroups()

    def scrape_cgroups(self) -> None:
        fstat = os.fstat
        for directory, dir_fd in self.cgroups:
            fd = os.open("cgroup.procs", os.O_RDONLY | os.O_CLOEXEC, dir_fd=dir_fd)
            os.read(fd, 65536)
            os.close(fd)
            if fstat(dir_fd).st_nlink != 2:
                with os.scandir(directory) as entries:
                    for entry in entries:
                        entry.is_dir(follow_symlinks=False)


class FirstScrapeFloor:
    """The system calls of a new exporter's first scrape and nothing else: an open and a
    read (or stat) of every file the exporter then holds but `task/` (the first scrape takes
    threads from `stat`), an open, read and close of each process's `stat` and of one
    environment per job, and the floor's `cgroup.procs` reads and listings."""

    def __init__(self, ours: JobsCollector, floor: SystemCallFloor, jobs: int) -> None:
        held = ours._sampler.files.held
        paths = list(held.entries) if held is not None else []
        cgroups = {directory for directory, _ in floor.cgroups}
        self.floor = floor
        self.directories = [path for path in paths if path.endswith("/fd") or path in cgroups]
        self.files = [path for path in paths
                      if not path.endswith(("/fd", "/task")) and path not in cgroups]
        bases = [path[:-len("statm")] for path in paths if path.endswith("/statm")]
        # Each process's stat; one environment per job (any process's costs the same).
        self.once = [base + "stat" for base in bases] + [base + "environ"
                                                          for base in bases[:jobs]]
        self.held: list[int] = []

    def scrape(self) -> None:
        open_, pread, read, close, fstat = os.open, os.pread, os.read, os.close, os.fstat
        held = self.held
        for path in self.files:
            fd = open_(path, os.O_RDONLY | os.O_CLOEXEC)
            held.append(fd)
            pread(fd, 4096, 0)
        for path in self.directories:
            fd = open_(path, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
            held.append(fd)
            fstat(fd)
        for path in self.once:
            fd = open_(path, os.O_RDONLY | os.O_CLOEXEC)
            read(fd, 65536)
            close(fd)
        self.floor.scrape_cgroups()

    def close(self) -> None:
        for fd in self.held:
            os.close(fd)
        self.held = []


class FirstScrape:
    """A new exporter's first scrape, which opens every file it then holds; closing them
    afterwards (which no scrape does: an exporter holds them until it exits) is timed apart."""

    def __init__(self, cgroup_root: str) -> None:
        self.cgroup_root = cgroup_root
        self.fresh: Optional[JobsCollector] = None

    def scrape(self) -> None:
        self.close()
        self.fresh = JobsCollector(cgroup_root=self.cgroup_root, proc_root="/proc", nvml=None)
        self.fresh.exposition(TEXT)

    def close(self) -> None:
        held = self.fresh._sampler.files.held if self.fresh is not None else None
        if held is not None:
            held.close()
        self.fresh = None


def profile(ours: JobsCollector, scrapes: int) -> None:
    """cProfile around `scrapes` full scrapes of the exporter, the top functions printed."""
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(scrapes):
        ours.exposition(TEXT)
    profiler.disable()
    pstats.Stats(profiler, stream=sys.stdout).sort_stats("tottime").print_stats(20)


def comparable(sample: JobSample) -> JobSample:
    """A record without what legitimately differs: the cgroup object found on disk."""
    return replace(sample, job=replace(sample.job, inode=0, devices_dir=None,
                                       daemon_comm=b""))


def check_same_figures(ours: JobsCollector, baseline: PsutilBaseline, jobs: int,
                       processes: int, attempts: int = 10) -> None:
    """Stop unless both contenders gather exactly the same figures and exposition. The
    processes just started settle for a moment (memory charged, CPU time): try again."""
    for attempt in range(attempts):
        try:
            return _compare(ours, baseline, jobs, processes)
        except SystemExit:
            if attempt == attempts - 1:
                raise
            time.sleep(1)


def _compare(ours: JobsCollector, baseline: PsutilBaseline, jobs: int,
             processes: int) -> None:
    our_samples, _ = ours.collect_samples()
    their_samples = baseline.collect()
    if sum(s.processes or 0 for s in our_samples) != processes or len(our_samples) != jobs:
        raise SystemExit(f"the exporter sees {len(our_samples)} jobs and "
                         f"{sum(s.processes or 0 for s in our_samples)} processes, not {jobs} and "
                         f"{processes}: wrong hierarchy?")
    mismatched = [(a, b) for a, b in zip(map(comparable, our_samples),
                                         map(comparable, their_samples)) if a != b]
    if len(our_samples) != len(their_samples) or mismatched:
        raise SystemExit(f"the contenders gather different figures: {mismatched[:1]}")

    def series(text: bytes) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
        return {(s.name, frozenset(s.labels.items())): s.value
                for family in text_string_to_metric_families(text.decode())
                for s in family.samples if s.name != "jobs_exporter_collect_duration_seconds"}

    if series(ours.exposition(TEXT)) != series(baseline.scrape()):
        raise SystemExit("the contenders expose different series")


def run(args: argparse.Namespace) -> int:
    uid = pwd.getpwnam(args.user).pw_uid
    with CgroupLab() as lab:
        print(f"building {args.jobs} jobs, {args.processes} processes under {lab.root} "
              f"-> {lab.cgroup_root}/<controller>/{lab.name}", file=sys.stderr)
        started = time.monotonic()
        build_node(lab, args.jobs, args.processes, uid)
        print(f"  built in {time.monotonic() - started:.1f} s", file=sys.stderr)

        ours = JobsCollector(cgroup_root=str(lab.root), proc_root="/proc", nvml=None)
        baseline = PsutilBaseline(str(lab.root))
        check_same_figures(ours, baseline, args.jobs, args.processes)
        if args.profile:
            profile(ours, args.scrapes)
            return 0
        floor = SystemCallFloor(ours, str(lab.root))

        first = FirstScrape(str(lab.root))
        first_floor = FirstScrapeFloor(ours, floor, args.jobs)
        contenders: dict[tuple[str, str], Callable[[], object]] = {
            ("collection only", "clusterwatch"): ours.collect_samples,
            ("collection only", "psutil"): baseline.collect,
            ("full scrape", "clusterwatch"): lambda: ours.exposition(TEXT),
            ("full scrape", "psutil"): baseline.scrape,
            ("full scrape", "system-call floor"): floor.scrape,
            ("first scrape", "clusterwatch"): first.scrape,
            ("first scrape", "closing its files"): first.close,
            ("first scrape", "system-call floor"): first_floor.scrape,
            ("first scrape", "floor closing its files"): first_floor.close,
        }
        timings = {name: Timings() for name in contenders}
        for _ in range(args.warmup):
            for scrape in contenders.values():
                scrape()
        for _ in range(args.scrapes):
            for name, scrape in contenders.items():  # interleaved: same machine noise
                timings[name].add(scrape)
        met = report(timings, args, len(ours._sampler.files.held or ()))
    return 0 if met or not args.check else 1


def report(timings: dict[tuple[str, str], Timings], args: argparse.Namespace,
           held: int) -> bool:
    print(f"\n{args.jobs} jobs, {args.processes} processes, {args.scrapes} scrapes of each "
          f"(after {args.warmup} warm-up), interleaved; Python {sys.version.split()[0]}, "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; the exporter "
          f"holds {held} files open\n")
    print("collection only: job discovery, cgroup files, cgroup.procs, /proc per process, "
          "identities,\n  I/O bookkeeping; records of every job (no exposition text)")
    print("full scrape: the collection and the text exposition (bytes of the Prometheus "
          "text format):\n  exporter: JobsCollector.exposition(), what serve answers; "
          "psutil: generate_latest\n  over prometheus_client families of its records\n")
    print(f"{'':30}{'CPU median':>11}{'CPU p90':>9}{'wall median':>12}{'wall p90':>10}"
          "   (ms per scrape)")
    for mode in ("collection only", "full scrape"):
        print(mode)
        for name in ("clusterwatch", "psutil", "system-call floor"):
            t = timings.get((mode, name))
            if t is None:
                continue
            print(f"  {name:28}{t.median_cpu():11.1f}{_p90(t.cpu_ms):9.1f}"
                  f"{t.median_wall():12.1f}{_p90(t.wall_ms):10.1f}")
        ours, theirs = timings[(mode, "clusterwatch")], timings[(mode, "psutil")]
        cpu_ratio = theirs.median_cpu() / ours.median_cpu()
        wall_ratio = theirs.median_wall() / ours.median_wall()
        print(f"  {'psutil / clusterwatch':28}{cpu_ratio:10.1f}x{'':9}{wall_ratio:11.1f}x")
        floor = timings.get((mode, "system-call floor"))
        if floor is not None:
            print(f"  {'clusterwatch / floor':28}{ours.median_cpu() / floor.median_cpu():10.1f}x"
                  f"{'':9}{ours.median_wall() / floor.median_wall():11.1f}x")
    first = timings[("first scrape", "clusterwatch")]
    closing = timings[("first scrape", "closing its files")]
    print("first scrape of a new exporter (opens every file it then holds)")
    first_floor = timings[("first scrape", "system-call floor")]
    for name, t in (("clusterwatch", first), ("then closing its files", closing),
                    ("system-call floor", first_floor)):
        print(f"  {name:28}{t.median_cpu():11.1f}{_p90(t.cpu_ms):9.1f}"
              f"{t.median_wall():12.1f}{_p90(t.wall_ms):10.1f}")
    ours, theirs = timings[("full scrape", "clusterwatch")], timings[("full scrape", "psutil")]
    cpu_ratio = theirs.median_cpu() / ours.median_cpu()
    ratio_met = cpu_ratio >= TARGET_CPU_RATIO
    fast = ours.median_cpu() <= TARGET_MS
    first_fast = first.median_cpu() <= TARGET_FIRST_MS
    print(f"\ntargets: full scrape CPU ratio >= {TARGET_CPU_RATIO:g}x: "
          f"{'met' if ratio_met else 'MISSED'} ({cpu_ratio:.1f}x); full scrape <= "
          f"{TARGET_MS:g} ms CPU: {'met' if fast else 'MISSED'} ({ours.median_cpu():.1f} ms); "
          f"first scrape <= {TARGET_FIRST_MS:g} ms CPU: {'met' if first_fast else 'MISSED'} "
          f"({first.median_cpu():.1f} ms)")
    return ratio_met and fast and first_fast


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=100)
    parser.add_argument("--processes", type=int, default=2000)
    parser.add_argument("--scrapes", type=int, default=30, help="timed scrapes of each")
    parser.add_argument("--warmup", type=int, default=3, help="untimed scrapes of each first")
    parser.add_argument("--user", default="nobody",
                        help="the jobs' processes run as this user (default: %(default)s)")
    parser.add_argument("--profile", action="store_true",
                        help="profile --scrapes full scrapes of the exporter instead of timing")
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
