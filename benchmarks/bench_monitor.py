"""Time the monitor: ingest of ~200 KB host records, and its pages over 50 hosts, 200 queues
and 7 days of records, through gunicorn on loopback as in production.

The records are the real reporter's example record (tests/monitor/fixtures) grown the
way a large harvester's record grows: more queues (each harvester serves some of the queues,
some queues are served by two, one by every harvester), 20 recent pushes and the database
parts, mostly not-finished workers grouped by the batch system's reason.

    python benchmarks/bench_monitor.py [--postgres] [--quick] [--requests 500] [--profile]

The table goes to standard output, progress to standard error. Exit status 1 when a request
fails (any ingest answer but 201, any page answer but 200), or with --check when a target is
missed.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import datetime as dt
import gc
import http.client
import json
import os
import platform
import random
import secrets
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional
from urllib.parse import urlsplit

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "tests" / "monitor" / "fixtures" / "record-example.json"
BUILD_META = "bench-monitor.json"
BUILD_VERSION = 1
INGEST_TARGET_MS = 50.0
INGEST_CPU_TARGET_MS = 10.0  # issue 23: server CPU (gunicorn's and the database server's) a post
PAGE_TARGET_MS = 150.0
RECENT_PUSHES = 20  # the reporter keeps the last 20 (reporter.harvester_log.RECENT_PUSHES)
EXAMPLES_PER_REASON = 3  # as reporter.record.group_not_finished
WORKERS = 4  # deploy/systemd/clusterwatch-monitor.service: --workers 4
AT, SINCE, PUSHES = "@collected_at@", "@since@", "@recent_pushes@"  # body placeholders


def utc(moment: dt.datetime) -> str:
    return moment.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def encode(record: Any) -> bytes:
    """As the reporter sends it (reporter.delivery): sorted keys, no spaces."""
    return json.dumps(record, sort_keys=True, separators=(",", ":")).encode("utf-8")


def example() -> dict[str, Any]:
    record: dict[str, Any] = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    return record


# --- who serves what --------------------------------------------------------------------------


@dataclass(frozen=True)
class Layout:
    """Keys, queue names, and the queues each key's records name.

    Queue 0 is named by every harvester (the worst case for its page). The others are cut
    into one block per harvester; a harvester also serves the first two queues of the next
    block, so about half the queues have two harvesters and the rest one.
    """

    keys: list[str]
    queues: list[str]
    served: list[list[str]]  # per key index

    def servers(self, queue: str) -> list[str]:
        return [key for key, names in zip(self.keys, self.served) if queue in names]

    def first_queue_served_by(self, count: int) -> str:
        return next(q for q in self.queues[1:] if len(self.servers(q)) == count)


def layout(hosts: int, queues: int) -> Layout:
    if hosts < 2 or queues < 2 * hosts + 1:
        raise ValueError("need at least 2 hosts and 2 * hosts + 1 queues")
    keys = [f"pandaharvester{h:02d}" for h in range(hosts)]
    names = [f"SITE{n:03d}_PanDA" for n in range(queues)]
    rest = queues - 1
    blocks = [list(range(1 + h * rest // hosts, 1 + (h + 1) * rest // hosts))
              for h in range(hosts)]
    served = [[names[i] for i in dict.fromkeys([0, *blocks[h], *blocks[(h + 1) % hosts][:2]])]
              for h in range(hosts)]
    return Layout(keys, names, served)


# --- records ----------------------------------------------------------------------------------

REASONS: tuple[tuple[str, str], ...] = (
    ("condor_event_log", "Error from slot1_{slot}@{node}: Job has gone over memory limit of "
                         "{limit} megabytes. Peak usage: {peak} megabytes."),
    ("condor_event_log", "Job was held: The job exceeded allowed execute duration of "
                         "{hours}:00:00 on {node} (by {minutes} minutes); PeriodicHold "
                         "expression evaluated to true"),
    ("condor_event_log", "Error from slot1_{slot}@{node}: SHADOW at 10.{a}.{b}.{c} failed to "
                         "send file(s) to <10.{b}.{c}.{a}:9618>: error reading from /var/lib/"
                         "condor/execute/dir_{pid}/pilotlog.txt: (errno 2) No such file or "
                         "directory; STARTER failed to receive file(s) from <10.{a}.{b}.{c}:9618>"),
    ("condor_event_log", "Job was held: Failed to initialize user log to /var/log/harvester/"
                         "condor_logs/{day}/grid.{cluster}.0.log or /dev/null"),
    ("condor_event_log", "Job was aborted. removed by SYSTEM_PERIODIC_REMOVE due to job "
                         "restarted undesirably ({restarts} restarts)."),
    ("harvester_diag", "pilot exited with code {code}: payload failed after {minutes} min: "
                       "stage-out of {files} file(s) to {node} failed"),
)


def _reason(rng: random.Random, key: str, day: str) -> tuple[str, dict[str, Any]]:
    source, pattern = rng.choice(REASONS)
    node = f"wn{rng.randrange(4000):04d}.farm{rng.randrange(9)}.example.org"
    text = pattern.format(
        slot=rng.randrange(1, 65), node=node, limit=rng.choice((2000, 4000, 16000)),
        peak=rng.randrange(2001, 30000), hours=rng.choice((48, 72, 96)),
        minutes=rng.randrange(1, 900), a=rng.randrange(256), b=rng.randrange(256),
        c=rng.randrange(256), pid=rng.randrange(10**6), day=day,
        cluster=rng.randrange(10**7), restarts=rng.randrange(2, 9),
        code=rng.choice((1008, 1137, 1150, 1305)), files=rng.randrange(1, 40))
    count = rng.randrange(1, 40)
    examples = []
    for _ in range(min(count, EXAMPLES_PER_REASON)):
        cluster = rng.randrange(10**7)
        examples.append({
            "worker": rng.randrange(10**8), "batch_id": f"{cluster}.0", "node": node,
            "ce": f"gridgk{rng.randrange(1, 9):02d}.example.org",
            "log_url": f"https://{key}.example.org/condor_logs/{day}/grid.{cluster}.0.log"})
    return text, {"count": count, "source": source, "examples": examples}


def _at(collected_at: dt.datetime, minutes: float) -> str:
    return utc(collected_at - dt.timedelta(minutes=minutes))


def _queue_sections(base: Mapping[str, Any], rng: random.Random, queue: str,
                    collected_at: dt.datetime) -> tuple[Any, Any, Any]:
    """fetching, submission and adjustment entries for one queue, from the example's."""
    fetch = copy.deepcopy(base["fetching"]["queues"]["BNL_PanDA_1"])
    state = rng.random()
    last_at = _at(collected_at, rng.uniform(0.2, 5))
    if state < 0.1:  # every fetch failing: the 2026-10-02 signature
        fetch.update(attempts=6, failed=6, errors={"SSLError": 6}, jobs_asked=210, jobs_got=0,
                     last_got_jobs_at=_at(collected_at, rng.uniform(60, 600)))
        fetch["last"] = {"asked": 35, "at": last_at, "error_class": "SSLError", "got": 0,
                         "label": "managed", "outcome": "failed to POST with <class 'requests."
                         "exceptions.SSLError'>:HTTPSConnectionPool(...)"}
    elif state < 0.25:
        fetch = copy.deepcopy(base["fetching"]["queues"]["UM_GREX_PanDA_1"])
        fetch["last"]["at"] = last_at
    else:
        fetch.update(errors={}, failed=0, jobs_got=rng.randrange(20, 180))
        fetch["last"].update(at=last_at, got=rng.randrange(1, 20))
        fetch["last_got_jobs_at"] = last_at
    submit = copy.deepcopy(base["submission"]["queues"]["BNL_PanDA_1"])
    submit.update(job_chunks_at=_at(collected_at, rng.uniform(0.5, 5)),
                  workers_status_at=_at(collected_at, rng.uniform(0.5, 5)),
                  workers_submitted=rng.randrange(0, 40))
    submit["workers_status"]["nRunning"] = rng.randrange(0, 2000)
    adjust = copy.deepcopy(rng.choice(list(base["adjustment"]["queues"].values())))
    adjust["at"] = _at(collected_at, rng.uniform(0.5, 5))
    return fetch, submit, adjust


def _database(rng: random.Random, key: str, served: Sequence[str],
              collected_at: dt.datetime) -> dict[str, Any]:
    """harvester_db in the shapes reporter.harvester_db and reporter.record build."""
    at = utc(collected_at)
    limits: dict[str, Any] = {}
    for queue in served:
        values = {"nQueueLimitWorker": rng.randrange(5, 200), "maxWorkers": rng.randrange(50, 4000),
                  "nQueueLimitJob": None, "nNewWorkers": rng.randrange(0, 50)}
        by_type = {f"{job}/{resource}": dict(values, maxWorkers=rng.randrange(10, 2000))
                   for job in ("managed", "user") for resource in ("SCORE", "MCORE", "HIMEM")}
        by_type["ANY/ANY"] = values
        limits[queue] = dict(values, siteName=queue, jobFetchTime=at, submitTime=at,
                             by_type=by_type)
    return {
        "launch_limits": limits,
        "workers_now": {q: {"running": rng.randrange(2000), "submitted": rng.randrange(200),
                            "idle": rng.randrange(50)} for q in served},
        "workers_ended": {q: {"by_status": {"finished": rng.randrange(400),
                                            "failed": rng.randrange(40),
                                            "cancelled": rng.randrange(10)},
                              "finished_median_run_s": rng.randrange(600, 40000)}
                          for q in served},
        "workers_not_finished": {q: {"workers": 0, "reasons": {}} for q in served},
        "service_metrics": {"hostName": f"{key}.example.org", "creationTime": at,
                            "metrics": {"cpu_pc": round(rng.uniform(5, 90), 1),
                                        "memory_pc": round(rng.uniform(20, 80), 1),
                                        "volume_data_pc": round(rng.uniform(10, 70), 1)}},
    }


def pushes(lay: Layout, h: int, seq: int, collected_at: dt.datetime,
           count: int = RECENT_PUSHES) -> list[dict[str, Any]]:
    """The record's recent pushes: new PandaIDs in every record (`seq` numbers the records)."""
    served = lay.served[h]
    return [{"at": utc(collected_at - dt.timedelta(seconds=10 * (count - i))),
             "pandaid": 6_000_000_000 + h * 100_000_000 + seq * RECENT_PUSHES + i,
             "queue": served[(seq * RECENT_PUSHES + i) % len(served)],
             "workerid": 80_000_000 + h * 10_000_000 + seq * RECENT_PUSHES + i}
            for i in range(count)]


def host_record(base: Mapping[str, Any], lay: Layout, h: int, collected_at: dt.datetime,
                seq: int, target_bytes: int) -> dict[str, Any]:
    """Host `h`'s record, grown to about `target_bytes` (encoded) with not-finished reasons.

    The content depends on `h` only (not on the time), so every record of a key has the same
    size; times inside are set relative to `collected_at`.
    """
    rng = random.Random(h)
    key = lay.keys[h]
    record = copy.deepcopy(dict(base))
    record.update(host=key, hostname=f"{key}.example.org", collected_at=utc(collected_at),
                  interval={"first_run": False, "seconds": 300, "since": _at(collected_at, 5)})
    record["processes"] = {"by_form": {"master.py": 1, "uwsgi": 0}, "count": 1}
    record["delivery"].update(backlog=1, oldest_at=utc(collected_at))
    for part in record["failed_calls"].values():
        moment = collected_at - dt.timedelta(minutes=rng.uniform(1, 5))
        part["last"]["at"] = utc(moment)  # and the line's own time with it
        part["last"]["line"] = f"{moment:%Y-%m-%d %H:%M:%S}" + part["last"]["line"][19:]
    sections = {name: record[name]["queues"] for name in ("fetching", "submission", "adjustment")}
    for queues in sections.values():
        queues.clear()
    for queue in lay.served[h]:
        for queues, entry in zip(sections.values(),
                                 _queue_sections(base, rng, queue, collected_at)):
            queues[queue] = entry
    record["submission"]["recent_pushes"] = pushes(lay, h, seq, collected_at)
    database = _database(rng, key, lay.served[h], collected_at)
    record["harvester_db"] = database
    # Reasons until the target: each one's encoded size is counted, so the record is sized
    # without encoding it again and again.
    size = len(encode(record))
    day = f"{collected_at:%Y-%m-%d}"
    not_finished = database["workers_not_finished"]
    weights = [rng.uniform(0.5, 1.5) for _ in lay.served[h]]
    while size < target_bytes:
        queue = rng.choices(lay.served[h], weights)[0]
        text, group = _reason(rng, key, day)
        entry = not_finished[queue]
        if text in entry["reasons"]:
            continue
        size += len(encode(text)) + len(encode(group)) + 2 * bool(entry["reasons"]) + 1
        entry["reasons"][text] = group
        entry["workers"] += group["count"]
    return record


def history_record(base: Mapping[str, Any], lay: Layout, h: int, collected_at: dt.datetime,
                   seq: int, push_count: int) -> dict[str, Any]:
    """An older record: the reporter's example record as `h`'s, with its own time and pushes."""
    record = dict(base)
    record.update(host=lay.keys[h], hostname=f"{lay.keys[h]}.example.org",
                  collected_at=utc(collected_at))
    record["submission"] = dict(base["submission"],
                                recent_pushes=pushes(lay, h, seq, collected_at, push_count))
    return record


def body_template(record: Mapping[str, Any]) -> bytes:
    """The encoded record with placeholders for what changes between posts of one key."""
    templated = copy.copy(dict(record))
    templated.update(collected_at=AT, interval=dict(record["interval"], since=SINCE),
                     delivery=dict(record["delivery"], oldest_at=AT),
                     submission=dict(record["submission"], recent_pushes=PUSHES))
    return encode(templated)


def body_at(template: bytes, lay: Layout, h: int, seq: int, collected_at: dt.datetime) -> bytes:
    return (template.replace(encode(AT), encode(utc(collected_at)))
            .replace(encode(SINCE), encode(_at(collected_at, 5)))
            .replace(encode(PUSHES), encode(pushes(lay, h, seq, collected_at))))


# --- measuring --------------------------------------------------------------------------------


def percentile(values: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile (p99 of 100 values is the 99th smallest)."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), int(fraction * len(ordered) + 0.999999)))
    return ordered[rank - 1]


@dataclass
class Timings:
    seconds: list[float] = field(default_factory=list)
    statuses: dict[int, int] = field(default_factory=dict)
    connects: int = 0
    wall_s: float = 0.0
    body_bytes: int = 0

    def add(self, status: int, elapsed: float) -> None:
        self.seconds.append(elapsed)
        self.statuses[status] = self.statuses.get(status, 0) + 1

    def merge(self, other: Timings) -> None:
        self.seconds += other.seconds
        for status, count in other.statuses.items():
            self.statuses[status] = self.statuses.get(status, 0) + count
        self.connects += other.connects

    def ms(self, fraction: float) -> float:
        return percentile(self.seconds, fraction) * 1000.0

    @property
    def rate(self) -> float:
        return len(self.seconds) / self.wall_s if self.wall_s else 0.0


class Connection:
    """One HTTP/1.1 client connection (keep-alive asked; reopened when the server closes)."""

    def __init__(self, base_url: str, headers: Optional[Mapping[str, str]] = None) -> None:
        parts = urlsplit(base_url)
        self._http = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=60)
        self.headers = {"Host": "localhost", **(headers or {})}
        self.connects = 0

    def request(self, method: str, path: str, body: Optional[bytes] = None,
                headers: Optional[Mapping[str, str]] = None) -> tuple[int, bytes, float]:
        if self._http.sock is None:
            self.connects += 1
        start = time.perf_counter()
        self._http.request(method, path, body=body, headers={**self.headers, **(headers or {})})
        response = self._http.getresponse()
        data = response.read()
        return response.status, data, time.perf_counter() - start

    def close(self) -> None:
        self._http.close()


@dataclass
class Load:
    """What the machine did during a phase: it is shared, so its own numbers come with it."""

    wall_s: float = 0.0
    busy_cpus: float = 0.0  # average CPUs busy, all processes
    server_cpu_s: float = 0.0  # gunicorn's master and workers
    db_cpu_s: float = 0.0  # the PostgreSQL server (SQLite runs inside the workers)
    client_cpu_s: float = 0.0  # this process (the client, or Django in-process)
    load1: tuple[float, float] = (0.0, 0.0)  # 1-min load average at start and end

    @property
    def others_cpus(self) -> float:
        ours = self.server_cpu_s + self.db_cpu_s + self.client_cpu_s
        return max(0.0, self.busy_cpus - ours / self.wall_s) if self.wall_s else 0.0


class CpuMeter:
    """CPU used by the whole machine, by gunicorn, by the database server and by us."""

    def __init__(self, server_pid: Optional[int] = None, db_pid: Optional[int] = None) -> None:
        self.pids = (server_pid, db_pid)
        self.tick = os.sysconf("SC_CLK_TCK")

    def _machine_busy_s(self) -> float:
        with open("/proc/stat", encoding="ascii") as stat:
            fields = [int(v) for v in stat.readline().split()[1:9]]
        return (sum(fields) - fields[3] - fields[4]) / self.tick  # all but idle and iowait

    def _trees_s(self) -> tuple[float, float]:
        """CPU seconds of each of `pids` with its children (workers, backends) as of now."""
        totals = [0, 0]
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except OSError:
                continue  # gone meanwhile
            for index, pid in enumerate(self.pids):
                if pid is not None and pid in (int(entry), int(fields[1])):
                    totals[index] += int(fields[11]) + int(fields[12])  # utime, stime
        return totals[0] / self.tick, totals[1] / self.tick

    @contextlib.contextmanager
    def phase(self) -> Iterator[Load]:
        load = Load()
        own = os.times()
        trees = self._trees_s()
        start = (time.perf_counter(), self._machine_busy_s(), own.user + own.system,
                 os.getloadavg()[0])
        try:
            yield load
        finally:
            own = os.times()
            load.wall_s = time.perf_counter() - start[0]
            load.busy_cpus = (self._machine_busy_s() - start[1]) / max(load.wall_s, 1e-9)
            ended = self._trees_s()
            load.server_cpu_s, load.db_cpu_s = ended[0] - trees[0], ended[1] - trees[1]
            load.client_cpu_s = own.user + own.system - start[2]
            load.load1 = (start[3], os.getloadavg()[0])


def postmaster_pid(server: Any) -> Optional[int]:
    try:
        return int((server.data_dir / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


RequestMaker = Callable[[int], tuple[str, str, bytes, dict[str, str]]]


def run_requests(count: int, connections: int, make: RequestMaker, base_url: str) -> Timings:
    """`count` requests from `connections` threads, each with its own connection; request i
    is `make(i)` = (method, path, body, headers), built before its clock starts."""
    timings = Timings()
    lock = threading.Lock()
    next_index = iter(range(count))
    errors: list[BaseException] = []

    def worker() -> None:
        connection = Connection(base_url)
        try:
            while True:
                with lock:
                    index = next(next_index, None)
                if index is None:
                    return
                method, path, body, headers = make(index)
                status, data, elapsed = connection.request(method, path, body, headers)
                with lock:
                    timings.add(status, elapsed)
                    timings.body_bytes = len(data)
        except BaseException as exc:  # reported by the caller
            errors.append(exc)
        finally:
            with lock:
                timings.connects += connection.connects
            connection.close()

    threads = [threading.Thread(target=worker) for _ in range(connections)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    timings.wall_s = time.perf_counter() - start
    if errors:
        raise RuntimeError(f"a client connection failed: {errors[0]!r}") from errors[0]
    return timings


# --- the database -----------------------------------------------------------------------------


@dataclass
class Built:
    """What was put in the database, for the report."""

    history: int = 0
    history_pushes: int = 0
    latest_sizes: list[int] = field(default_factory=list)
    reasons_per_queue: list[int] = field(default_factory=list)
    seconds: float = 0.0
    reused: bool = False
    latest_at: Optional[dt.datetime] = None
    latest_seq: int = 0


def setup_django(environ: Mapping[str, str]) -> None:
    os.environ.update(environ)
    os.environ["DJANGO_SETTINGS_MODULE"] = "clusterwatch.monitor.site.settings"
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0, interactive=False)


def build(args: argparse.Namespace, lay: Layout, base: Mapping[str, Any],
          tokens_by_key: Mapping[str, Any]) -> Built:
    """History through bulk_create, then each key's latest record through ingest's store."""
    from clusterwatch.monitor.core.models import HostReport, JobPush
    from clusterwatch.monitor.ingest.store import store_record

    built = Built()
    started = time.perf_counter()
    per_key = records_per_key(args)  # the latest included
    built.latest_seq = per_key - 1
    built.latest_at = args.latest_at
    for h, key in enumerate(lay.keys):
        rows = []
        for seq in range(per_key - 1):
            at = args.latest_at - dt.timedelta(seconds=args.interval * (per_key - 1 - seq))
            record = history_record(base, lay, h, at, seq, args.history_pushes)
            rows.append(HostReport(key=key, collected_at=at,
                                   received_at=at + dt.timedelta(seconds=2),
                                   size_bytes=len(encode(record)), record=record,
                                   token=tokens_by_key[key]))
        HostReport.objects.bulk_create(rows, batch_size=500)
        pushed = [JobPush(pandaid=p["pandaid"], workerid=p["workerid"], queue=p["queue"],
                          key=key, at=dt.datetime.strptime(p["at"], "%Y-%m-%dT%H:%M:%SZ")
                          .replace(tzinfo=dt.timezone.utc), report=row)
                  for row in rows for p in row.record["submission"]["recent_pushes"]]
        JobPush.objects.bulk_create(pushed, batch_size=2000)
        built.history += len(rows)
        built.history_pushes += len(pushed)
        latest = host_record(base, lay, h, args.latest_at, built.latest_seq, args.record_bytes)
        data = encode(latest)
        store_record(key, latest, len(data), token=tokens_by_key[key],
                     received_at=args.latest_at + dt.timedelta(seconds=2))
        built.latest_sizes.append(len(data))
        built.reasons_per_queue += [len(v["reasons"]) for v in
                                    latest["harvester_db"]["workers_not_finished"].values()]
        if h % max(1, len(lay.keys) // 10) == 0 or h == len(lay.keys) - 1:
            progress(f"  built {h + 1}/{len(lay.keys)} keys: {built.history:,} older records, "
                     f"{built.history_pushes:,} pushes, {time.perf_counter() - started:.0f} s")
    built.seconds = time.perf_counter() - started
    return built


def post_times(args: argparse.Namespace, built: Built, posted: int,
               newest: Optional[dt.datetime], now: dt.datetime) -> tuple[dt.datetime, dt.timedelta]:
    """(origin, step) of this run's posts (see Poster); `newest`: the newest collected_at
    stored."""
    interval = dt.timedelta(seconds=args.interval)
    if not posted:
        return built.latest_at or args.latest_at, interval
    origin = newest or built.latest_at or args.latest_at
    step = min(interval, (now - origin) / (args.post_rounds + 1))
    if step < dt.timedelta(seconds=1):
        raise SystemExit(f"the database in --workdir holds records up to {utc(origin)}: no "
                         f"room before now for this run's {args.post_rounds} rounds of posts; "
                         "wait, or use a new --workdir")
    return origin, step


def save_meta(workdir: Path, args: argparse.Namespace, built: Built, posted: int) -> None:
    meta = {"version": BUILD_VERSION, "params": build_params(args), "posted": posted,
            "built": {"history": built.history, "history_pushes": built.history_pushes,
                      "latest_sizes": built.latest_sizes,
                      "reasons_per_queue": built.reasons_per_queue, "seconds": built.seconds,
                      "latest_at": utc(built.latest_at or args.latest_at),
                      "latest_seq": built.latest_seq}}
    (workdir / BUILD_META).write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")


def load_meta(workdir: Path, args: argparse.Namespace) -> Optional[tuple[Built, int]]:
    """A database built earlier in `workdir` with the same parameters: (it, posts made)."""
    try:
        meta = json.loads((workdir / BUILD_META).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if meta.get("version") != BUILD_VERSION or meta.get("params") != build_params(args):
        return None
    saved = meta["built"]
    built = Built(history=saved["history"], history_pushes=saved["history_pushes"],
                  latest_sizes=saved["latest_sizes"],
                  reasons_per_queue=saved["reasons_per_queue"], seconds=saved["seconds"],
                  reused=True, latest_seq=saved["latest_seq"],
                  latest_at=dt.datetime.strptime(saved["latest_at"], "%Y-%m-%dT%H:%M:%SZ")
                  .replace(tzinfo=dt.timezone.utc))
    return built, int(meta["posted"])


def records_per_key(args: argparse.Namespace) -> int:
    return int(args.days * 86400 // args.interval)


def build_params(args: argparse.Namespace) -> dict[str, Any]:
    return {"hosts": args.hosts, "queues": args.queues, "days": args.days,
            "interval": args.interval, "record_bytes": args.record_bytes,
            "history_pushes": args.history_pushes}


# --- the phases -------------------------------------------------------------------------------


@dataclass
class Poster:
    """Ingest requests: post n goes to key n % hosts, one `step` after that key's last.

    A fresh database's posts come one interval apart after its latest records. A reused
    one's come after the newest record stored (earlier runs posted up to about their own
    end), as far apart as fits before now, so that none is refused as dated ahead."""

    lay: Layout
    templates: list[bytes]
    tokens: Mapping[str, str]
    built: Built
    origin: dt.datetime  # this run's posts are dated after it
    step: dt.timedelta
    posted: int = 0  # posts made so far, earlier runs' on a reused database included
    first_round: int = 0  # posted // hosts when this run began

    def request(self, n: int) -> tuple[str, str, bytes, dict[str, str]]:
        n += self.posted
        h, rounds = n % len(self.lay.keys), n // len(self.lay.keys) + 1
        at = self.origin + self.step * (rounds - self.first_round)
        key = self.lay.keys[h]
        body = body_at(self.templates[h], self.lay, h, self.built.latest_seq + rounds, at)
        return "POST", f"/api/host-reports/{key}/", body, {
            "Authorization": f"Bearer {self.tokens[key]}", "Content-Type": "application/json"}


@dataclass
class Row:
    label: str
    http: Timings
    load: Load
    inprocess: Optional[Timings] = None
    detail: str = ""
    target_ms: Optional[float] = None
    expected: int = 200
    ok: bool = True
    cpu_target_ms: Optional[float] = None  # of server CPU per request (ingest over HTTP)

    def server_cpu_ms(self) -> float:
        """gunicorn's and the database server's CPU per request, ms."""
        return (self.load.server_cpu_s + self.load.db_cpu_s) / len(self.http.seconds) * 1000

    def missed(self) -> list[str]:
        """The targets this row misses: "p99", "CPU"."""
        misses = []
        if self.target_ms is not None and self.http.ms(0.99) >= self.target_ms:
            misses.append("p99")
        if self.cpu_target_ms is not None and self.server_cpu_ms() > self.cpu_target_ms:
            misses.append("CPU")
        return misses


def ingest_http(poster: Poster, url: str, count: int, connections: int,
                meter: CpuMeter) -> tuple[Timings, Load]:
    offset = poster.posted

    def make(i: int) -> tuple[str, str, bytes, dict[str, str]]:
        return poster.request(i)

    with meter.phase() as load:
        timings = run_requests(count, connections, make, url)
    poster.posted = offset + count
    return timings, load


def ingest_inprocess(poster: Poster, count: int) -> Timings:
    from django.test import Client

    client = Client(HTTP_HOST="localhost")
    timings = Timings()
    start = time.perf_counter()
    for i in range(-1, count):  # the first, untimed, loads and compiles what a worker would
        _, path, body, headers = poster.request(i + 1)
        began = time.perf_counter()
        response = client.post(path, data=body, content_type="application/json",
                               HTTP_AUTHORIZATION=headers["Authorization"])
        if i >= 0:
            timings.add(response.status_code, time.perf_counter() - began)
    timings.wall_s = time.perf_counter() - start
    poster.posted += count + 1
    return timings


@dataclass(frozen=True)
class Page:
    label: str
    path: str
    expect: tuple[str, ...]  # texts the page must hold (each serving key, the queue)
    target: bool  # the target applies (the queue page); else shown for reference


def pages(lay: Layout) -> list[Page]:
    from clusterwatch.monitor.core.models import JobPush

    one, two, every = (lay.first_queue_served_by(1), lay.first_queue_served_by(2),
                       lay.queues[0])
    job = JobPush.objects.filter(queue=two).order_by("-at").values_list("pandaid", flat=True)[0]
    return [
        Page(f"queue, 1 harvester ({one})", f"/queues/{one}/", (one, *lay.servers(one)), True),
        Page(f"queue, 2 harvesters ({two})", f"/queues/{two}/", (two, *lay.servers(two)), True),
        Page(f"queue, all {len(lay.keys)} ({every})", f"/queues/{every}/",
             (every, *lay.servers(every)), True),
        Page(f"hosts ({len(lay.keys)} hosts)", "/hosts/", tuple(lay.keys), False),
        Page(f"job {job} ({two})", f"/jobs/{job}/", (str(job), two), False),
    ]


def measure_page(page: Page, url: str, cookie: str, count: int, client: Any,
                 meter: CpuMeter, warm_up: int) -> Row:
    """`count` GETs over HTTP and as many in-process, interleaved so both see the same noise."""
    connection = Connection(url, {"Cookie": cookie})
    http_t, local_t = Timings(), Timings()
    ok = True
    for _ in range(warm_up):  # each worker: imports, template loading, caches
        connection.request("GET", page.path)
    client.get(page.path)
    gc.collect()
    with meter.phase() as load:
        for _ in range(count):
            status, data, elapsed = connection.request("GET", page.path)
            http_t.add(status, elapsed)
            http_t.body_bytes = len(data)
            began = time.perf_counter()
            response = client.get(page.path)
            local_t.add(response.status_code, time.perf_counter() - began)
            ok = ok and all(text.encode() in data for text in page.expect)
    http_t.wall_s = load.wall_s
    http_t.connects = connection.connects
    connection.close()
    return Row(page.label, http_t, load, local_t, page.path,
               PAGE_TARGET_MS if page.target else None, 200, ok)


def breakdown(queues: Sequence[str], username: str, rounds: int) -> str:
    """Median ms of the queue page's steps, in-process: the database read (`serving`), the
    pure page builder (`queue_page`) and the template."""
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.template.loader import render_to_string
    from django.test import RequestFactory
    from django.utils import timezone

    from clusterwatch.monitor.pages.queue_page import queue_page
    from clusterwatch.monitor.pages.queue_query import serving

    lines = [f"queue page steps in-process, median of {rounds} (ms):"]
    for queue in queues:
        request = RequestFactory().get(f"/queues/{queue}/", HTTP_HOST="localhost")
        request.user = get_user_model().objects.get(username=username)
        steps: dict[str, list[float]] = {"read (serving)": [], "build (queue_page)": [],
                                         "render (template)": []}
        size = 0
        for _ in range(rounds):
            t0 = time.perf_counter()
            stored = serving(queue)
            t1 = time.perf_counter()
            page = queue_page(queue, stored, timezone.now(), int(settings.REPORT_INTERVAL_S))
            t2 = time.perf_counter()
            size = len(render_to_string("monitor/queue.html", {"page": page}, request))
            t3 = time.perf_counter()
            for name, seconds in zip(steps, (t1 - t0, t2 - t1, t3 - t2)):
                steps[name].append(seconds * 1000)
        lines.append(f"  {queue} ({len(stored)} harvesters, {size / 1024:.0f} KB): " + ", ".join(
            f"{name} {statistics.median(values):.1f}" for name, values in steps.items()))
    return "\n".join(lines)


def post_stages(poster: Poster, rounds: int) -> str:
    """Median CPU ms (process_time) of a post's stages in-process, the view's own calls in
    its order, each post a new latest record: where ingest's server CPU goes, less HTTP,
    gunicorn and Django's request handling (the in-process row has those but HTTP)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from clusterwatch.monitor.core import sqlite_tuning
    from clusterwatch.monitor.ingest import access, body, horizon, store, validation

    steps: dict[str, list[float]] = {name: [] for name in (
        "token", "parse (JSON, depth)", "schema", "digest", "duplicate check", "store")}
    queries: list[int] = []
    for i in range(rounds):
        _, path, data, headers = poster.request(i)
        key = path.split("/")[-2]
        with CaptureQueriesContext(connection) as captured:
            t0 = time.process_time()
            token = access.authorize(headers["Authorization"], key)
            t1 = time.process_time()
            record, odd_floats = body.parse_body(data)
            t2 = time.process_time()
            collected_at = validation.check_record(record, key)
            horizon.check_not_ahead(collected_at)
            t3 = time.process_time()
            digest = store.record_digest(record, odd_floats)
            t4 = time.process_time()
            store.duplicate_of(key, collected_at, record, digest)
            t5 = time.process_time()
            with sqlite_tuning.write_lock():
                store.store_record(key, record, len(data), token=token, digest=digest)
            t6 = time.process_time()
        queries.append(len(captured.captured_queries))
        for name, seconds in zip(steps, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t6 - t5)):
            steps[name].append(seconds * 1000)
    poster.posted += rounds
    total = sum(statistics.median(values) for values in steps.values())
    return (f"post steps in-process, median CPU of {rounds} (ms; {total:.1f} in all, "
            f"{statistics.median(queries):.0f} statements): " + ", ".join(
                f"{name} {statistics.median(values):.2f}" for name, values in steps.items()))


def profile(paths: Sequence[str], client: Any, poster: Poster, rounds: int) -> str:
    """cProfile of in-process GETs of `paths` and of in-process POSTs: the top functions."""
    import cProfile
    import io
    import pstats

    out = io.StringIO()
    for what in [*paths, "POST"]:
        profiler = cProfile.Profile()
        for i in range(rounds):
            if what == "POST":
                _, path, body, headers = poster.request(i)
                profiler.enable()
                client.post(path, data=body, content_type="application/json",
                            HTTP_AUTHORIZATION=headers["Authorization"])
                profiler.disable()
            else:
                profiler.enable()
                client.get(what)
                profiler.disable()
        if what == "POST":
            poster.posted += rounds
        out.write(f"\nprofile: {rounds} x {'POST a record' if what == 'POST' else 'GET ' + what}"
                  " in-process, by own time (tottime, cumulative in s)\n")
        stats = pstats.Stats(profiler, stream=out)
        stats.sort_stats("tottime").print_stats(18)
    return "\n".join(line for line in out.getvalue().splitlines()
                     if line.strip() and not line.startswith(("   Ordered by", "   List reduced")))


# --- the run ----------------------------------------------------------------------------------


@dataclass
class Report:
    engine: str
    versions: str
    lay: Layout
    built: Built
    db_bytes: int
    workers: int
    rows_ingest: list[Row]
    rows_pages: list[Row]
    connections: int
    warm: Timings
    profile_text: str = ""
    load_start: tuple[float, float, float] = (0.0, 0.0, 0.0)
    load_end: tuple[float, float, float] = (0.0, 0.0, 0.0)


@contextlib.contextmanager
def database(args: argparse.Namespace, workdir: Path) -> Iterator[tuple[dict[str, str], Any]]:
    """(CLUSTERWATCH_DATABASE_* settings, the private PostgreSQL server or None)."""
    if not args.postgres:
        yield {"CLUSTERWATCH_DATABASE_URL": f"sqlite:///{workdir / 'monitor.sqlite3'}"}, None
        return
    from clusterwatch.loopback.postgres import postgres_server

    with postgres_server() as server:
        yield server.environ(), server


def durable(server: Any) -> None:
    """The private server runs without fsync (thrown-away data); measure as in production."""
    server.psql("ALTER SYSTEM SET fsync = on;\nALTER SYSTEM SET synchronous_commit = on;\n"
                "ALTER SYSTEM SET full_page_writes = on;\nSELECT pg_reload_conf();\n")


def run(args: argparse.Namespace, workdir: Path) -> Report:
    from clusterwatch.loopback.monitor_server import monitor_server

    lay = layout(args.hosts, args.queues)
    base = example()
    with database(args, workdir) as (environ, server):
        environ = {"CLUSTERWATCH_DATA_DIR": str(workdir), **environ}
        setup_django(environ)
        from django.conf import settings
        from django.contrib.auth import get_user_model
        from django.db import connection, connections
        from django.db.models import Max
        from django.test import Client

        from clusterwatch.monitor.core.models import HostReport, HostToken
        from clusterwatch.monitor.core.operators import set_operator
        from clusterwatch.monitor.ingest import tokens

        engine = connection.vendor
        reused = None if args.postgres or args.workdir is None else load_meta(workdir, args)
        token_texts: dict[str, str] = {}
        token_rows: dict[str, HostToken] = {}
        for key in lay.keys:  # new tokens each run: only their digests are stored
            token_rows[key], token_texts[key] = tokens.create([key], note="bench_monitor")
        if reused is not None:
            built, posted = reused
            progress(f"reusing the database in {workdir} ({posted} posts made earlier)")
        else:
            if HostReport.objects.exists():
                raise SystemExit(f"{workdir} holds another database; use an empty --workdir")
            progress(f"building: {len(lay.keys)} keys x {args.days:g} days every "
                     f"{args.interval} s ({engine})")
            built, posted = build(args, lay, base, token_rows), 0
        password = secrets.token_urlsafe(24)
        username = f"bench-{secrets.token_hex(4)}"
        # The pages are the operators' (issue 19 item 7): the benchmark logs in as one.
        set_operator(get_user_model().objects.create_user(username, password=password), True)
        if server is not None:
            durable(server)
        db_bytes = database_bytes(connection, settings)
        connections.close_all()  # gunicorn's workers take over; SQLite: no open reader
        templates = [body_template(host_record(base, lay, h, built.latest_at or args.latest_at,
                                               built.latest_seq, args.record_bytes))
                     for h in range(len(lay.keys))]
        newest = HostReport.objects.aggregate(newest=Max("collected_at"))["newest"]
        origin, step = post_times(args, built, posted, newest, dt.datetime.now(dt.timezone.utc))
        poster = Poster(lay, templates, token_texts, built, origin, step, posted=posted,
                        first_round=posted // len(lay.keys))
        load_start = os.getloadavg()
        progress(f"starting gunicorn ({args.workers} workers)")
        db_entries = {k: v for k, v in environ.items() if k.startswith("CLUSTERWATCH_DATABASE")}
        with monitor_server(workdir, database=db_entries, workers=args.workers) as monitor:
            db_pid = postmaster_pid(server) if server is not None else None
            meter = CpuMeter(monitor.process.pid, db_pid)
            progress(f"ingest: {2 * args.workers} posts to warm the workers up")
            warm, _ = ingest_http(poster, monitor.url, 2 * args.workers, args.workers, meter)
            rows_ingest = []
            for label, count, conns in (("HTTP, sequential", args.requests, 1),
                                        (f"HTTP, {args.connections} connections",
                                         args.requests, args.connections)):
                progress(f"ingest: {count} posts, {label}")
                timings, load = ingest_http(poster, monitor.url, count, conns, meter)
                rows_ingest.append(Row(label, timings, load, None, f"{conns} conn",
                                       INGEST_TARGET_MS, 201, set(timings.statuses) == {201},
                                       INGEST_CPU_TARGET_MS))
            progress(f"ingest: {args.bursts} bursts of {len(lay.keys)} posts at once")
            bursts, drains = Timings(), []
            with meter.phase() as load:
                for _ in range(args.bursts):
                    time.sleep(0.5)  # apart: each burst meets an idle server
                    burst, _ = ingest_http(poster, monitor.url, len(lay.keys), len(lay.keys),
                                           meter)
                    bursts.merge(burst)
                    drains.append(burst.wall_s)
            bursts.wall_s = sum(drains)
            rows_ingest.append(Row(f"HTTP, bursts of {len(lay.keys)}", bursts, load, None,
                                   f"drain {statistics.median(drains) * 1000:.0f} ms median, "
                                   f"{max(drains) * 1000:.0f} max", None, 201,
                                   set(bursts.statuses) == {201}))
            progress(f"ingest: {args.inprocess_posts} posts in-process (Django test client)")
            with CpuMeter(None, db_pid).phase() as load:
                timings = ingest_inprocess(poster, args.inprocess_posts)
            timings.wall_s = load.wall_s
            rows_ingest.append(Row("in-process (test client)", timings, load, None, "-",
                                   None, 201, set(timings.statuses) == {201}))
            from clusterwatch.loopback.monitor_client import Session

            session = Session(monitor.url)
            session.login(username, password)
            cookie = "; ".join(f"{c.name}={c.value}" for c in session.cookies)
            client = Client(HTTP_HOST="localhost")
            client.login(username=username, password=password)
            rows_pages = []
            for page in pages(lay):
                progress(f"pages: {args.page_requests} x {page.path} (HTTP and in-process)")
                rows_pages.append(measure_page(page, monitor.url, cookie, args.page_requests,
                                               client, meter, 2 * args.workers))
            profile_text = ""
            if args.profile:
                progress("profiling in-process")
                profile_text = breakdown([lay.queues[0], lay.first_queue_served_by(2)],
                                         username, args.profile_rounds)
                profile_text += "\n" + post_stages(poster, args.profile_rounds)
                profile_text += "\n" + profile([rows_pages[2].detail, rows_pages[3].detail],
                                               client, poster, args.profile_rounds)
        if args.workdir is not None and not args.postgres:
            save_meta(workdir, args, built, poster.posted)
        versions = software(connection, server)
        return Report(engine, versions, lay, built, db_bytes, args.workers, rows_ingest,
                      rows_pages, args.connections, warm, profile_text, load_start,
                      os.getloadavg())


def database_bytes(connection: Any, settings: Any) -> int:
    if connection.vendor == "sqlite":
        name = Path(settings.DATABASES["default"]["NAME"])
        return sum(p.stat().st_size for p in name.parent.glob(name.name + "*"))
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_database_size(current_database())")
        return int(cursor.fetchone()[0])


def software(connection: Any, server: Any) -> str:
    import django
    import gunicorn

    if connection.vendor == "sqlite":
        import sqlite3

        engine = f"SQLite {sqlite3.sqlite_version} (WAL, synchronous=NORMAL)"
    else:
        version = server.psql("SHOW server_version;").strip().split()[0]
        engine = (f"PostgreSQL {version} (private server on loopback, fsync and "
                  "synchronous_commit on for the measurements)")
    return (f"{engine}, Python {platform.python_version()}, Django {django.get_version()}, "
            f"gunicorn {gunicorn.__version__}")


# --- the report -------------------------------------------------------------------------------


def verdict(row: Row) -> str:
    if not row.ok:
        return "FAILED REQUESTS"
    if row.target_ms is None:
        return "-"
    misses = row.missed()  # the one statement of pass and miss
    said = (f"{'MISS' if 'p99' in misses else 'pass'} "
            f"({row.http.ms(0.99) / row.target_ms:.2f} of target)")
    if row.cpu_target_ms is not None:
        said += (f"; CPU {'MISS' if 'CPU' in misses else 'pass'} "
                 f"({row.server_cpu_ms() / row.cpu_target_ms:.2f} of target)")
    return said


def kb(n: float) -> str:
    return f"{n / 1024:.1f} KB"


def print_report(report: Report, args: argparse.Namespace) -> None:
    lay, built = report.lay, report.built
    per_key = records_per_key(args)
    shared = [len(lay.servers(q)) for q in lay.queues]
    quick = " (--quick: a smoke size, not what the targets are about)" if args.quick else ""
    print(f"clusterwatch monitor benchmark{quick}")
    print(f"  {report.versions}; gunicorn {report.workers} sync workers on 127.0.0.1; "
          f"{os.cpu_count()} CPUs (shared)")
    made = "reused from an earlier run" if built.reused else f"built in {built.seconds:.0f} s"
    print(f"data: {len(lay.keys)} hosts, {len(lay.queues)} queues, {args.days:g} days every "
          f"{args.interval} s = {len(lay.keys) * per_key:,} records; database "
          f"{report.db_bytes / 2**20:,.0f} MiB, {made}")
    print(f"  latest record per host ({len(built.latest_sizes)}): "
          f"{kb(min(built.latest_sizes))}-{kb(max(built.latest_sizes))} (the reporter's example "
          f"record grown: {min(len(s) for s in lay.served)}-{max(len(s) for s in lay.served)} "
          f"queues per harvester, {RECENT_PUSHES} recent pushes, harvester_db parts with "
          f"{statistics.median(built.reasons_per_queue):.0f} not-finished reasons per queue "
          "(median)), stored through ingest's store_record")
    print(f"  older records: {built.history:,} x about {kb(len(encode(example())))} (the "
          f"reporter's example record with host, time and {args.history_pushes} pushes of its "
          f"own; {built.history_pushes:,} JobPush rows), written with bulk_create: at 200 KB "
          f"they would take {len(lay.keys) * per_key * args.record_bytes / 1e9:.0f} GB, and no "
          "page reads them (the pages read the latest-record indexes); they size the tables "
          "and indexes ingest writes")
    print(f"  queues: {lay.queues[0]} named by all {len(lay.keys)} harvesters; of the others "
          f"{shared.count(1)} by one, {shared.count(2)} by two")
    print()
    print(f"ingest: POST /api/host-reports/<key>/ with ~{kb(statistics.mean(built.latest_sizes))} "
          "records (compact JSON, as the reporter sends), a valid token per key, each record "
          "newer than its key's latest (so every post moves the latest-record indexes)")
    db = report.engine != "sqlite"
    print(f"  {'client':<26}{'posts':>6}{'req/s':>8}{'p50':>8}{'p90':>8}{'p99':>8}{'max':>8}"
          f"{'app CPU':>9}{'db CPU':>8}  {'statuses':<10}  target p99 < {INGEST_TARGET_MS:.0f} ms; "
          f"server CPU (app + db) <= {INGEST_CPU_TARGET_MS:.0f} ms/req")
    print(f"  {'':<26}{'':>6}{'':>8}{'ms':>8}{'ms':>8}{'ms':>8}{'ms':>8}{'ms/req':>9}"
          f"{'ms/req':>8}")
    for row in report.rows_ingest:
        t = row.http
        cpu = row.load.server_cpu_s if row.label.startswith("HTTP") else row.load.client_cpu_s
        statuses = ",".join(f"{s}x{n}" for s, n in sorted(t.statuses.items()))
        db_cpu = f"{row.load.db_cpu_s / len(t.seconds) * 1000:.1f}" if db else "-"
        print(f"  {row.label:<26}{len(t.seconds):>6}{t.rate:>8.1f}{t.ms(0.5):>8.1f}"
              f"{t.ms(0.9):>8.1f}{t.ms(0.99):>8.1f}{max(t.seconds) * 1000:>8.1f}"
              f"{cpu / len(t.seconds) * 1000:>9.1f}{db_cpu:>8}  {statuses:<10}  {verdict(row)}")
    print("  (app CPU: gunicorn's, or this process's for the in-process row; db CPU: the "
          "PostgreSQL server's; SQLite runs inside the app: '-')")
    seq, conc = report.rows_ingest[0].http, report.rows_ingest[1].http
    inproc = report.rows_ingest[-1].http
    print(f"  ratios: {report.connections} connections / sequential: x{conc.rate / seq.rate:.2f} "
          f"req/s, x{conc.ms(0.99) / seq.ms(0.99):.2f} p99; HTTP sequential / in-process p50: "
          f"x{seq.ms(0.5) / inproc.ms(0.5):.2f}; real load: {len(lay.keys)} reporters every "
          f"{args.interval} s = {len(lay.keys) / args.interval:.2f} posts/s")
    warm = report.warm
    print(f"  not in the table: {len(warm.seconds)} warm-up posts ({report.workers} connections) "
          f"as the workers start, answered in {warm.ms(0.5):.0f} ms median, "
          f"{max(warm.seconds) * 1000:.0f} ms max")
    for row in report.rows_ingest:
        if row.label.startswith("HTTP, bursts"):
            print(f"  bursts: {args.bursts} x {len(lay.keys)} posts started together (one per "
                  f"key, as cron on synchronised clocks sends them), {row.detail} until the "
                  "last answer; no target: it is queueing for the CPUs")
    for row in report.rows_ingest:
        print(f"  machine during '{row.label}': {row.load.busy_cpus:.2f} CPUs busy, "
              f"{row.load.others_cpus:.2f} of them other processes'; load average "
              f"{row.load.load1[0]:.2f} -> {row.load.load1[1]:.2f}; "
              f"{row.http.connects} TCP connects")
    print()
    print(f"pages: GET as a logged-in operator, {args.page_requests} requests each over HTTP "
          "(gunicorn) and in-process (Django test client, no HTTP), interleaved")
    print(f"  {'page':<34}{'KB':>6}{'HTTP p50':>10}{'p90':>7}{'p99':>7}{'max':>7}"
          f"{'in-proc p50':>13}{'p99':>7}{'HTTP/in-proc':>14}{'app CPU':>9}{'db CPU':>8}  "
          f"target p99 < {PAGE_TARGET_MS:.0f} ms")
    for row in report.rows_pages:
        t, local = row.http, row.inprocess or Timings()
        db_cpu = (f"{row.load.db_cpu_s / (len(t.seconds) + len(local.seconds)) * 1000:.1f}"
                  if db else "-")
        print(f"  {row.label:<34}{t.body_bytes / 1024:>6.0f}{t.ms(0.5):>10.1f}{t.ms(0.9):>7.1f}"
              f"{t.ms(0.99):>7.1f}{max(t.seconds) * 1000:>7.1f}{local.ms(0.5):>13.1f}"
              f"{local.ms(0.99):>7.1f}{t.ms(0.5) / local.ms(0.5):>14.2f}"
              f"{row.load.server_cpu_s / len(t.seconds) * 1000:>9.1f}{db_cpu:>8}  "
              f"{verdict(row)}")
    print("  (ms; app CPU: gunicorn's per HTTP request; db CPU: the PostgreSQL server's per "
          "request, HTTP and in-process alike; hosts and job pages have no target in the "
          "issue: '-')")
    for row in report.rows_pages:
        print(f"  machine during '{row.label}': {row.load.busy_cpus:.2f} CPUs busy, "
              f"{row.load.others_cpus:.2f} of them other processes'; load average "
              f"{row.load.load1[0]:.2f} -> {row.load.load1[1]:.2f}")
    print(f"load average (1/5/15 min) at start {' '.join(f'{v:.2f}' for v in report.load_start)}"
          f", at end {' '.join(f'{v:.2f}' for v in report.load_end)}")
    if report.profile_text:
        print(report.profile_text)


def failed(report: Report) -> list[str]:
    return [row.label for row in report.rows_ingest + report.rows_pages if not row.ok]


def missed(report: Report) -> list[str]:
    return [f"{row.label} ({', '.join(row.missed())})"
            for row in report.rows_ingest + report.rows_pages if row.missed()]


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--postgres", action="store_true",
                        help="a private PostgreSQL server (clusterwatch.loopback.postgres) "
                             "instead of SQLite")
    parser.add_argument("--quick", action="store_true",
                        help="smoke size: 5 hosts, 12 queues, 2 hours, 20 posts, 5 page GETs")
    parser.add_argument("--hosts", type=int, default=50)
    parser.add_argument("--queues", type=int, default=200)
    parser.add_argument("--days", type=float, default=7.0)
    parser.add_argument("--interval", type=int, default=300, help="seconds between records")
    parser.add_argument("--record-bytes", type=int, default=200 * 1024,
                        help="size of the latest and the posted records (default: %(default)s)")
    parser.add_argument("--history-pushes", type=int, default=5,
                        help="pushes per older record, stored as JobPush rows (default: "
                             "%(default)s)")
    parser.add_argument("--requests", type=int, default=500,
                        help="posts per ingest mode (default: %(default)s)")
    parser.add_argument("--connections", type=int, default=4,
                        help="client connections of the concurrent ingest (default: %(default)s)")
    parser.add_argument("--bursts", type=int, default=5,
                        help="bursts of one post per host at once, as cron ticks on synchronised "
                             "clocks send them (default: %(default)s)")
    parser.add_argument("--inprocess-posts", type=int, default=100)
    parser.add_argument("--page-requests", type=int, default=100)
    parser.add_argument("--workers", type=int, default=WORKERS,
                        help="gunicorn workers (default: %(default)s, as the systemd unit)")
    parser.add_argument("--workdir", type=Path,
                        help="where the database goes; kept, and reused by a later run with the "
                             "same sizes (SQLite only); default: a temporary directory")
    parser.add_argument("--profile", action="store_true",
                        help="the CPU of a post's steps, the queue page's steps, and cProfile of "
                             "in-process GETs of the queue pages and POSTs")
    parser.add_argument("--profile-rounds", type=int, default=20)
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--raw", type=Path,
                        help="also write every latency (s, in request order) to this JSON file")
    args = parser.parse_args(argv)
    if args.quick:
        args.hosts, args.queues, args.days = 5, 12, 2 / 24
        args.requests, args.inprocess_posts, args.page_requests, args.bursts = 20, 10, 5, 2
        args.workers = min(args.workers, 2)
        args.profile_rounds = min(args.profile_rounds, 2)
    if args.hosts < 2 or args.queues < 2 * args.hosts + 1:
        parser.error("need --hosts >= 2 and --queues >= 2 * hosts + 1")
    if args.days * 86400 < 2 * args.interval:
        parser.error("--days must cover at least two intervals")
    for name in ("requests", "connections", "inprocess_posts", "bursts", "page_requests", "workers",
                 "profile_rounds", "record_bytes", "interval"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    # The latest records end where the posts start, so the last post is about now.
    posts = (2 * args.requests + args.inprocess_posts + 1 + args.bursts * args.hosts
             + 2 * args.workers + (2 * args.profile_rounds if args.profile else 0))
    rounds = args.post_rounds = -(-posts // args.hosts) + 1
    now = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    args.latest_at = now - dt.timedelta(seconds=args.interval * rounds)
    args.days = args.days if args.days != int(args.days) else int(args.days)
    return args


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="clusterwatch-bench-monitor-"))
    workdir.mkdir(mode=0o700, parents=True, exist_ok=True)
    progress(f"data directory {workdir}; python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    try:
        report = run(args, workdir)
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    print_report(report, args)
    if args.raw is not None:
        args.raw.write_text(json.dumps({row.label: {"http": row.http.seconds, "in-process": (
            row.inprocess.seconds if row.inprocess else None)}
            for row in report.rows_ingest + report.rows_pages}) + "\n", encoding="utf-8")
    if failed(report):
        print(f"FAILED: requests with other answers than expected in: {', '.join(failed(report))}")
        return 1
    misses = missed(report)
    print(f"targets missed: {'; '.join(misses)}" if misses else "targets: all met")
    if args.check and misses:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
