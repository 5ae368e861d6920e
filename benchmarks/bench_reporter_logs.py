"""Parsing throughput of the reporter's harvester log parsers, against `grep -c`.

Generates (once, cached under --workdir) a harvester log set of --size bytes: the fetcher,
submitter, worker adjuster, communicator and propagator logs of both harvester generations,
mostly DEBUG noise with about one line in ten of interest, multi-line tracebacks included.
Then, in the same run, times the four section parsers over the set (read in newline-aligned
chunks, as the tailer hands them over) and `grep -c` counting the lines of interest with
fixed patterns, prints MB/s for both and their ratio, and checks that the fast parsers'
sections equal those of `reference_sections`, a plain line-by-line parser (on all of the
set, or the first --check-mb of each file with --check sample).

    python benchmarks/bench_reporter_logs.py [--size 1G] [--workdir DIR] [--check sample]
                                             [--floors]

With --floors it also times, in the same runs, what the parsers' design costs before any
section's own work: reading the chunks alone, the marker scan alone (`re` finding every
marker), and the records matched alone (marker, line start, record regex; no bookkeeping).

Results go to standard output, progress to standard error. Target (the issue): >= 300 MB/s
on a 2-core machine and within 2.5x of `grep -c` over the same files.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Callable

from clusterwatch.reporter import harvester_lines, harvester_log

GENERATOR_VERSION = 4
LOGS = {  # file name: share of the set's bytes
    "panda-job_fetcher.log": 0.07,
    "panda-submitter.log": 0.20,
    "panda-worker_adjuster.log": 0.08,
    "panda-communicator.log": 0.45,
    "panda-propagator.log": 0.20,
}
# `grep -c -F` patterns counting the lines of interest of each log
GREP = {
    "panda-job_fetcher.log": ["> got ", "> getting "],
    "panda-submitter.log": ["workers status:", "job chunks", "> submitting ", "a workerID",
                            "register a worker"],
    "panda-worker_adjuster.log": ["No n", "limiting max", "set n"],
    "panda-communicator.log": [" with <class '"],
    "panda-propagator.log": [" with <class '"],
}
QUEUES = ["BNL_PanDA_1", "UM_GREX_PanDA_1", "BNL_ARM_1", "MWT2_UCORE", "AGLT2_TEST"]
HOST = "pandaharvester01.sdcc.bnl.gov"
T0 = 1_790_949_600.0  # 2026-10-02 14:00:00Z


# --- the reference: one line at a time, every line decoded --------------------------------

A = re.ASCII
LINE = re.compile(r"(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d),\d{3} \S+ *: \w+ +(\S+) "
                  r"(?:<([^>\n]*)>|:) (.*)", A)
R_FETCH = re.compile(r"(got|getting) (\d+) jobs(.*)", A)
R_GOT = re.compile(r" for prodSourceLabel=(\S*) rtype=\S* with (.*)", A)
R_TOOK = re.compile(r"\s*: took [0-9.]+ sec\s*$", A)
R_QUEUE = re.compile(r"(?:^|.*? )queue=([^\s>]+)", A)
R_SUBMIT = re.compile(r"workers status: (.*)|got (\d+) job chunks|submitting (\d+) workers"
                      r"|submitted a workerID=(\d+) for PandaID=(\d+)"
                      r"|(failed to submit a workerID=|failed to register a worker)", A)
R_ADJ = [
    ("n_queue_limit_per_rt", re.compile(
        r"No (?:n_new_workers|nNewWorkers) since (?:n_queue|nQueue)\((\d+)\)>="
        r"(?:n_queue_limit_per_rt|nQueueLimitPerRT)\((\d+)\)", A)),
    ("max_workers", re.compile(
        r"No (?:n_new_workers|nNewWorkers) since (?:n_queue|nQueue)\((\d+)\) \+ "
        r"(?:n_ready|nReady)\((\d+)\) \+ (?:n_running|nRunning)\((\d+)\) >= "
        r"(?:max_workers|maxWorkers)\((\d+)\)", A)),
    ("max_queued_workers", re.compile(
        r"limiting (?:max_queued_workers|maxQueuedWorkers) to min\(n_activated=(\d+), "
        r"queue_limit=(\d+|None)\)", A)),
    ("n_new_workers", re.compile(r"set (?:n_new_workers|nNewWorkers)=0 (.*)", A)),
]
R_CALL = re.compile(r".*?failed to (?:POST|GET|UPLOAD|post|put) with <class '([\w.]+)'>(.*)", A)


def _lines(chunks: list[bytes]) -> Iterator[tuple[str, str, str, str | None, str]]:
    for chunk in chunks:
        for raw in chunk.split(b"\n"):
            found = LINE.match(raw.decode("utf-8", "replace"))
            if found:
                date, hms, method, token, msg = found.groups()
                yield f"{date}T{hms}Z", method, raw.decode("utf-8", "replace"), token, msg


def _clip(msg: str) -> str:
    cut = msg.find(" Traceback (most recent call last):")
    return (msg if cut < 0 else msg[:cut]).strip()[:500]


def _fetch_class(outcome: str) -> str:
    found = re.search(r"<class '([\w.]+)'>", outcome)
    if found:
        return found.group(1).split(".")[-1]
    code = re.match(r"StatusCode=\d+", outcome)
    if code:
        return code.group(0)
    return " ".join(outcome.split())[:60] or "unknown"


def ref_fetching(chunks: list[bytes]) -> dict[str, Any]:
    queues: dict[str, Any] = {}
    asking: dict[str, tuple[int, str | None]] = {}
    for at, _method, _line, token, msg in _lines(chunks):
        if token is None or not token.startswith("queueName="):
            continue
        queue = token[len("queueName="):]
        found = R_FETCH.match(msg)
        if not found:
            continue
        verb, n, rest = found.group(1), int(found.group(2)), found.group(3)
        if verb == "getting":
            named = re.match(r" for prodSourceLabel[= ](\S+)", rest)
            asking[queue] = (n, named.group(1) if named else None)
            continue
        got = R_GOT.match(rest)
        if got is None and not rest.startswith(" with "):
            continue
        asked, label = asking.pop(queue, (None, None))
        if got is not None:
            label, outcome = got.group(1), got.group(2)
        else:
            outcome = rest[len(" with "):]
        outcome = _clip(R_TOOK.sub("", outcome))
        ok = outcome == "OK" or "no jobs in panda" in outcome.lower() or bool(
            re.match(r"StatusCode=20\b|no need to get job", outcome, re.I | A))
        q = queues.setdefault(queue, {"attempts": 0, "jobs_asked": None, "jobs_got": 0,
                                      "failed": 0, "errors": {}, "last": None,
                                      "last_got_jobs_at": None, "last_ok_at": None,
                                      "failing_since": None, "failing_errors": {}})
        q["attempts"] += 1
        q["jobs_got"] += n
        if asked is not None:
            q["jobs_asked"] = (q["jobs_asked"] or 0) + asked
        cls = None if ok else _fetch_class(outcome)
        if cls is not None:
            q["failed"] += 1
            q["errors"][cls] = q["errors"].get(cls, 0) + 1
            # telemetry 1.9: the failures since the last attempt that did not fail
            q["failing_since"] = q["failing_since"] or at
            q["failing_errors"][cls] = q["failing_errors"].get(cls, 0) + 1
        else:
            q["last_ok_at"], q["failing_since"], q["failing_errors"] = at, None, {}
        if n > 0:
            q["last_got_jobs_at"] = at
        q["last"] = {"at": at, "label": label, "asked": asked, "got": n, "outcome": outcome,
                     "error_class": cls}
    return {"queues": queues}


def ref_submission(chunks: list[bytes]) -> dict[str, Any]:
    queues: dict[str, Any] = {}
    attempted: dict[str, int] = {}
    pushes: list[dict[str, Any]] = []
    for at, _method, _line, token, msg in _lines(chunks):
        named = R_QUEUE.match(token or "")
        found = R_SUBMIT.match(msg)
        if not named or not found:
            continue
        queue = named.group(1)
        q = queues.setdefault(queue, {"workers_submitted": 0, "submit_failures": 0,
                                      "workers_status": None, "workers_status_at": None,
                                      "job_chunks": None, "job_chunks_at": None})
        attempted.setdefault(queue, 0)
        status, chunks_n, submitting, worker, panda, failure = found.groups()
        if status is not None:
            counts = {}
            for key in ("nQueue", "nReady", "nRunning", "nNewWorkers"):
                one = re.search(rf"'{key}': (\d+)", status)
                counts[key] = int(one.group(1)) if one else None
            q["workers_status"], q["workers_status_at"] = counts, at
        elif chunks_n is not None:
            q["job_chunks"], q["job_chunks_at"] = int(chunks_n), at
        elif submitting is not None:
            attempted[queue] += int(submitting)
        elif worker is not None:
            pushes.append({"at": at, "queue": queue, "workerid": int(worker),
                           "pandaid": int(panda)})
        else:
            q["submit_failures"] += 1
            if failure.startswith("failed to submit"):
                attempted[queue] -= 1
    for queue, q in queues.items():
        q["workers_submitted"] = max(attempted[queue], 0)
    return {"queues": queues, "recent_pushes": pushes[-20:]}


def ref_adjustment(chunks: list[bytes], previous: dict[str, Any]) -> dict[str, Any]:
    queues = dict(previous.get("queues", {}))
    for at, _method, _line, token, msg in _lines(chunks):
        if token is None or not token.startswith("site="):
            continue
        for name, pattern in R_ADJ:
            found = pattern.match(msg)
            if not found:
                continue
            g = found.groups()
            if name == "n_queue_limit_per_rt":
                limit, against = int(g[1]), {"n_queue": int(g[0])}
            elif name == "max_workers":
                limit = int(g[3])
                against = {"n_queue": int(g[0]), "n_ready": int(g[1]), "n_running": int(g[2])}
            elif name == "max_queued_workers":
                activated, ql = int(g[0]), None if g[1] == "None" else int(g[1])
                limit = activated if ql is None else min(activated, ql)
                against = {"n_activated": activated, "queue_limit": ql}
            else:
                limit, against = 0, {"reason": _clip(g[0])}
            queues[token[len("site="):]] = {"at": at, "limit": limit, "limit_name": name,
                                            "against": against, "message": _clip(msg)}
            break
    return {"queues": queues}


def ref_failed_calls(chunks: list[bytes]) -> dict[str, Any]:
    failed, by_call, last = 0, {}, None
    for at, method, line, _token, msg in _lines(chunks):
        found = R_CALL.match(msg)
        if not found:
            continue
        failed += 1
        url = re.search(r"with url: (/[^\s?]*)", found.group(2))
        key = "{} {}".format(url.group(1) if url else method, found.group(1).split(".")[-1])
        by_call[key] = by_call.get(key, 0) + 1
        last = {"at": at, "line": line[:2000]}
    return {"failed": failed, "by_call_and_class": by_call, "last": last}


def reference_sections(logs: dict[str, list[bytes]]) -> dict[str, Any]:
    """The sections a plain line-by-line parser finds in `logs` (file name: chunks)."""
    return {
        "fetching": ref_fetching(logs["panda-job_fetcher.log"]),
        "submission": ref_submission(logs["panda-submitter.log"]),
        "adjustment": ref_adjustment(logs["panda-worker_adjuster.log"], {}),
        "communicator": ref_failed_calls(logs["panda-communicator.log"]),
        "propagator": ref_failed_calls(logs["panda-propagator.log"]),
    }


def fast_sections(logs: dict[str, Iterable[bytes]]) -> dict[str, Any]:
    """The same through the reporter's parsers (which also take chunks read as they go)."""
    return {
        "fetching": harvester_log.fetching_section(logs["panda-job_fetcher.log"]),
        "submission": harvester_log.submission_section(logs["panda-submitter.log"]),
        "adjustment": harvester_log.adjustment_section(
            logs["panda-worker_adjuster.log"], {})[0],
        "communicator": harvester_log.failed_calls_section(logs["panda-communicator.log"]),
        "propagator": harvester_log.failed_calls_section(logs["panda-propagator.log"]),
    }


# --- floors: what the parsers' design costs before any section's own work ----------------

# Per log: the marker regex and record regex its section scans with (harvester_log).
PATTERNS = {
    "panda-job_fetcher.log": ("FETCH_MARK", "FETCH"),
    "panda-submitter.log": ("SUBMIT_MARK", "SUBMIT"),
    "panda-worker_adjuster.log": ("ADJUST_MARK", "ADJUST"),
    "panda-communicator.log": ("CALL_MARK", "CALL"),
    "panda-propagator.log": ("CALL_MARK", "CALL"),
}


def scan_only(logs: dict[str, list[bytes]]) -> int:
    """Every marker found, nothing else: the floor of scanning the bytes with `re`."""
    found = 0
    for name, chunks in logs.items():
        marker = getattr(harvester_log, PATTERNS[name][0])
        for chunk in chunks:
            found += sum(1 for _ in marker.finditer(chunk))
    return found


def records_only(logs: dict[str, list[bytes]]) -> int:
    """Every record matched at its line's start, no section's bookkeeping: the floor of one
    regex match per record, as `harvester_lines.records` does it."""
    found = 0
    for name, chunks in logs.items():
        marker, record = (getattr(harvester_log, p) for p in PATTERNS[name])
        found += sum(1 for _ in harvester_lines.records(chunks, marker, record))
    return found


# --- the generator --------------------------------------------------------------------------

class _Log:
    """Lines of one daemon's log, one record at a time, with a clock moving forward."""

    def __init__(self, rnd: random.Random, daemon: str, debug: bool) -> None:
        self.rnd, self.daemon, self.debug, self.t = rnd, daemon, debug, T0
        self.lines: list[str] = []
        self.size = 0

    def emit(self, level: str, method: str, token: str | None, msg: str,
             more: tuple[str, ...] = ()) -> None:
        if level == "DEBUG" and not self.debug:
            return
        self.t += self.rnd.random() * 0.05
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(self.t))
        ms = int((self.t % 1) * 1000)
        prefix = f"<{token}>" if token is not None else ":"
        line = f"{stamp},{ms:03d} panda.log.{self.daemon}: {level:<8} {method} {prefix} {msg}"
        self.lines.append(line)
        self.lines.extend(more)
        self.size += len(line) + 1 + sum(len(m) + 1 for m in more)


def _traceback(cls: str, tricky: bool) -> tuple[str, ...]:
    lines = (
        '  File "/opt/harvester/lib/python3.9/site-packages/urllib3/connectionpool.py", '
        "line 703, in urlopen",
        "    httplib_response = self._make_request(",
        '  File "/opt/harvester/lib/python3.9/site-packages/requests/adapters.py", '
        "line 517, in send",
        f"{cls}: HTTPSConnectionPool(host='pandaserver01.sdcc.bnl.gov', port=25443): "
        "Max retries exceeded",
    )
    if tricky:  # continuation lines holding markers: no timestamp, so never records
        lines += ("    run <queueName=BNL_PanDA_1> got 3 jobs with OK",
                  "    failed to POST with <class 'requests.exceptions.SSLError'>: nested")
    return lines


ERRORS = [
    ("requests.exceptions.SSLError",
     "HTTPSConnectionPool(host='pandaserver01.sdcc.bnl.gov', port=25443): Max retries "
     "exceeded with url: {url} (Caused by SSLError(SSLCertVerificationError(1, '[SSL: "
     "CERTIFICATE_VERIFY_FAILED] certificate verify failed: unable to get local issuer "
     "certificate (_ssl.c:1129)')))"),
    ("requests.exceptions.ConnectionError",
     "HTTPSConnectionPool(host='pandaserver01.sdcc.bnl.gov', port=25443): Max retries "
     "exceeded with url: {url} (Caused by NewConnectionError('<urllib3.connection."
     "HTTPSConnection object at 0x7f3e>: Failed to establish a new connection: [Errno 111] "
     "Connection refused'))"),
    ("requests.exceptions.ReadTimeout",
     "HTTPSConnectionPool(host='pandaserver01.sdcc.bnl.gov', port=25443): Read timed out. "
     "(read timeout=180)"),
]


def _failure(rnd: random.Random, new: bool, url: str) -> tuple[str, str]:
    """(communicator error string's first line, exception class with module)."""
    cls, text = rnd.choice(ERRORS)
    if new:
        verb = rnd.choice(["POST", "POST", "GET", "UPLOAD"])
        url = "/api/v1/" + url
    else:
        verb = rnd.choice(["post", "post", "put"])
        url = "/server/panda/" + url.split("/")[-1]
    first = (f"failed to {verb} with <class '{cls}'>:{text.format(url=url)} "
             "Traceback (most recent call last):")
    return first, cls


def _fetcher(log: _Log, new: bool, tricky: float) -> None:
    rnd = log.rnd
    pid = f"id={HOST}_2911-7f3e9a1fb700"
    log.emit("DEBUG", "run", pid, "getting number of jobs to be fetched")
    log.emit("DEBUG", "run", pid, f"got {len(QUEUES)} queues")
    for queue in QUEUES:
        token = f"queueName={queue}"
        if rnd.random() < 0.3:
            log.emit("DEBUG", "run", token, "no job to fetch; skip")
            continue
        n = rnd.randint(1, 60)
        label = rnd.choice(["managed", "managed", "test", "user"])
        if new:
            log.emit("DEBUG", "run", token,
                     f"getting {n} jobs for prodSourceLabel={label} rtype=None")
        else:
            log.emit("DEBUG", "run", token, f"getting {n} jobs for prodSourceLabel {label}")
        took = f"  : took {rnd.random() * 3:.3f} sec"
        head = (f"got {{}} jobs for prodSourceLabel={label} rtype=None with " if new
                else "got {} jobs with ")
        roll = rnd.random()
        if roll < 0.45:
            got = rnd.randint(1, n)
            log.emit("INFO", "run", token, head.format(got) + "OK" + took)
            log.emit("DEBUG", "run", token, f"Converting of {got} jobs{took}")
            log.emit("DEBUG", "run", token, f"Insert of {got} jobs{took}")
        elif roll < 0.8:
            empty = rnd.choice(["no jobs in PanDA", "no jobs in PanDA", "No jobs in PanDA",
                                "StatusCode=20"])
            log.emit("INFO", "run", token, head.format(0) + empty + took)
        elif roll < 0.9:
            first, cls = _failure(rnd, new, "pilot/acquire_jobs")
            log.emit("INFO", "run", token, head.format(0) + first,
                     (*_traceback(cls, rnd.random() < tricky), took))
        else:
            other = rnd.choice(["database timeout", "StatusCode=500 Internal Server Error",
                                "StatusCode=503 <html>busy</html>"])
            log.emit("INFO", "run", token, head.format(0) + other + took)
    log.emit("DEBUG", "run", pid, "done")


def _submitter(log: _Log, new: bool, tricky: float) -> None:
    rnd = log.rnd
    lock = f"submitter-{HOST}_2911-7f3e8c4f9700"
    log.emit("DEBUG", "run", f"id={lock}", "getting queues to submit workers")
    queue = rnd.choice(QUEUES)
    log.emit("DEBUG", "run", f"id={lock}", f"got 1 queues for site {queue}")
    token = (f"id={lock} queue={queue} jtype=managed rtype=SCORE" +
             (" ptype=PR" if new else ""))
    counts = [rnd.randint(0, 50), rnd.randint(0, 5), rnd.randint(0, 500), rnd.randint(0, 20)]
    keys = (["nQueue", "nReady", "nRunning", "nNewWorkers"] if new
            else ["nReady", "nRunning", "nQueue", "nNewWorkers"])
    values = dict(zip(["nQueue", "nReady", "nRunning", "nNewWorkers"], counts))
    status = ", ".join(f"'{k}': {values[k]}" for k in keys)
    log.emit("DEBUG", "run", token, f"workers status: {{{status}}}")
    for _ in range(rnd.randint(6, 14)):  # plugin chatter
        log.emit("DEBUG", "run", token, rnd.choice([
            "nJobsPerWorker=1", "start", f"sent jobs to workerID={rnd.randint(1, 10**7)} with True",
            "successfully made 3 workers", "made 2 workers, while 1 workers failed",
            "skipped since no new worker is needed based on current stats"]))
    if values["nNewWorkers"] == 0:
        return
    n = rnd.randint(1, 5)
    log.emit("DEBUG", "run", token, f"got {n} job chunks")
    log.emit("INFO", "run", token, f"submitting {n} workers")
    log.emit("DEBUG", "run", token, f"done submitting {n} workers : took 4.217 sec")
    pull = queue == "UM_GREX_PanDA_1"
    for _ in range(n):
        worker = rnd.randint(8_000_000, 9_000_000)
        roll = rnd.random()
        if roll < 0.1:
            log.emit("ERROR", "run", token, f"failed to submit a workerID={worker} with "
                     "submission failed; HTCondorException: schedd not reachable")
        elif roll < 0.12:
            log.emit("ERROR", "run", token, f"failed to register a worker for PandaID="
                     f"{rnd.randint(6 * 10**6, 7 * 10**6)} with submissionHost={HOST} "
                     "batchID=1234567.0")
        elif not pull:
            log.emit("INFO", "run", token, f"submitted a workerID={worker} for PandaID="
                     f"{rnd.randint(6 * 10**6, 7 * 10**6)} with submissionHost={HOST},"
                     f"{HOST}:9618 batchID={rnd.randint(10**6, 10**7)}.0")
    log.emit("INFO", "run", token, "done")


def _adjuster(log: _Log, new: bool, tricky: float) -> None:
    rnd = log.rnd
    site = rnd.choice(QUEUES)
    token = f"site={site}"
    log.emit("DEBUG", "define_num_workers", token, "start")
    stats = f"{{'{site}': {{'managed': {{'SCORE': {{'nReady': 0, 'nRunning': 412, 'nQueue': 37, " \
            "'nNewWorkers': 0}}}}"
    log.emit("DEBUG", "define_num_workers", token, f"static_num_workers: {stats}")
    for _ in range(rnd.randint(3, 8)):
        log.emit("DEBUG", "get_activate_worker_factor", token, "ret_val=1.0")
    nq = "n_new_workers" if new else "nNewWorkers"
    q, lim = rnd.randint(0, 60), rnd.randint(1, 40)
    roll = rnd.random()
    if roll < 0.3:
        what = (f"No {nq} since n_queue({q})>=n_queue_limit_per_rt({lim})" if new
                else f"No {nq} since nQueue({q})>=nQueueLimitPerRT({lim})")
    elif roll < 0.5:
        what = (f"No {nq} since n_queue({q}) + n_ready(0) + n_running(412) >= max_workers(400)"
                if new else f"No {nq} since nQueue({q}) + nReady(0) + nRunning(412) >= "
                "maxWorkers(400)")
    elif roll < 0.8:
        ql = rnd.choice([str(lim), "None"])
        what = ("limiting max_queued_workers" if new else "limiting maxQueuedWorkers") + \
            f" to min(n_activated={rnd.randint(0, 99)}, queue_limit={ql})"
    else:
        what = f"set {nq}=0 " + rnd.choice(["since status=offline", "by BnlThrottler:busy",
                                            "by panda in slave mode"])
    log.emit("DEBUG", "define_num_workers", token, what)
    log.emit("DEBUG", "define_num_workers", token,
             f"setting {nq} to {rnd.randint(0, 9)} in order to respect maxNewWorkersPerCycle")
    log.emit("DEBUG", "define_num_workers", token, f"defined {stats}")


def _communicator(log: _Log, new: bool, tricky: float) -> None:
    rnd = log.rnd
    pid = f"id={HOST}_2911-7f3e7b2e8700"
    for _ in range(rnd.randint(8, 14)):
        panda = rnd.randint(6 * 10**6, 7 * 10**6)
        log.emit("DEBUG", "update_jobs", f"{pid} PandaID={panda}",
                 f"data={{'jobId': {panda}, 'siteName': '{rnd.choice(QUEUES)}', 'state': "
                 "'running', 'attemptNr': 1, 'jobSubStatus': None, 'coreCount': 8, "
                 "'startTime': '2026-10-02 18:01:02', 'cpuConsumptionTime': 1234}")
        log.emit("DEBUG", "update_jobs", f"{pid} PandaID={panda}",
                 "done with {'StatusCode': 0, 'ErrorDiag': '', 'command': 'NULL'}")
    queue = rnd.choice(QUEUES)
    log.emit("DEBUG", "get_jobs", f"siteName={queue}", "try to get 35 jobs")
    log.emit("DEBUG", "get_jobs", f"siteName={queue}", "get_jobs for 35 jobs  : took 0.089 sec")
    if rnd.random() < 0.6:
        method, token, url = rnd.choice([
            ("get_jobs", f"siteName={queue}", "pilot/acquire_jobs"),
            ("update_jobs", pid, "pilot/update_jobs_bulk"),
            ("update_workers", None, "harvester/update_workers"),
            ("is_alive", None, "harvester/heartbeat")])
        first, cls = _failure(rnd, new, url)
        log.emit("ERROR", method, token, first, _traceback(cls, rnd.random() < tricky))


def _propagator(log: _Log, new: bool, tricky: float) -> None:
    rnd = log.rnd
    pid = f"id={HOST}_2911-7f3e6a1d7700"
    log.emit("DEBUG", "run", pid, f"got {rnd.randint(1, 99)} jobs  : took 0.021 sec")
    for _ in range(rnd.randint(4, 9)):
        log.emit("DEBUG", "run", pid, f"updated PandaID={rnd.randint(6 * 10**6, 7 * 10**6)} "
                 "status=running")
    log.emit("DEBUG", "run", pid, "update_jobs for 5 jobs took  : took 0.231 sec")
    if rnd.random() < 0.2:
        first, cls = _failure(rnd, new, "harvester/report_worker_statistics")
        log.emit("ERROR", "run", pid, "failed to update worker stats (bulk) for "
                 f"{rnd.choice(QUEUES)} err={first}", _traceback(cls, rnd.random() < tricky))
    if rnd.random() < 0.1:
        log.emit("ERROR", "run", pid, f"failed to update PandaID={rnd.randint(1, 9)} "
                 "status=running")


MAKERS: dict[str, tuple[str, Callable[[_Log, bool, float], None]]] = {
    "panda-job_fetcher.log": ("job_fetcher", _fetcher),
    "panda-submitter.log": ("submitter", _submitter),
    "panda-worker_adjuster.log": ("worker_adjuster", _adjuster),
    "panda-communicator.log": ("communicator", _communicator),
    "panda-propagator.log": ("propagator", _propagator),
}


def generate(name: str, size: int, seed: int, debug: bool = True, tricky: float = 0.01,
             new_share: float = 0.7) -> Iterator[bytes]:
    """Blocks of complete lines of one log, about `size` bytes in all; deterministic."""
    daemon, make = MAKERS[name]
    log = _Log(random.Random(f"{seed}-{name}"), daemon, debug)
    done = 0
    idle = 0  # at INFO, the adjuster writes nothing at all
    while done < size and idle < 1000:
        while log.size < 1 << 20 and done + log.size < size and idle < 1000:
            before = log.size
            make(log, log.rnd.random() < new_share, tricky)
            idle = idle + 1 if log.size == before else 0
        if log.lines:
            block = ("\n".join(log.lines) + "\n").encode()
            done += len(block)
            log.lines, log.size = [], 0
            yield block


def build_set(workdir: Path, size: int, seed: int = 1) -> dict[str, Path]:
    """The log set of `size` bytes under workdir, generated once and reused."""
    folder = workdir / f"set-{size}-{seed}-v{GENERATOR_VERSION}"
    paths = {name: folder / name for name in LOGS}
    if (folder / "done").exists():
        return paths
    folder.mkdir(parents=True, exist_ok=True)
    for name, share in LOGS.items():
        print(f"generating {paths[name]} ({share * size / 1e6:.0f} MB)", file=sys.stderr)
        with open(paths[name], "wb") as out:
            for block in generate(name, int(share * size), seed):
                out.write(block)
    (folder / "done").write_text("ok\n")
    return paths


def stream_chunks(path: Path, chunk_size: int = 4 << 20, limit: int | None = None
                  ) -> Iterator[bytes]:
    """The file in chunks ending on a newline, as the tailer hands them over."""
    done = 0
    with open(path, "rb") as f:
        while limit is None or done < limit:
            block = f.read(chunk_size)
            if not block:
                break
            cut = block.rfind(b"\n") + 1
            if 0 < cut < len(block):  # leave the partial line for the next chunk
                f.seek(cut - len(block), os.SEEK_CUR)
                block = block[:cut]
            done += len(block)
            yield block


def read_chunks(path: Path, chunk_size: int = 64 << 20, limit: int | None = None
                ) -> list[bytes]:
    return list(stream_chunks(path, chunk_size, limit))


def parse_size(text: str) -> int:
    units = {"K": 10**3, "M": 10**6, "G": 10**9}
    if text[-1:].upper() in units:
        return int(float(text[:-1]) * units[text[-1].upper()])
    return int(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", default="1G", help="bytes in the log set, e.g. 200M, 1G")
    parser.add_argument("--workdir", default="/tmp/clusterwatch-bench-logs")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3, help="timed runs; the best is shown")
    parser.add_argument("--check", choices=["full", "sample", "none"], default="full")
    parser.add_argument("--floors", action="store_true",
                        help="also time reading alone, the marker scan alone and the record "
                        "matches alone, in the same runs")
    parser.add_argument("--check-mb", type=int, default=50,
                        help="MB of each file the sample check compares")
    args = parser.parse_args(argv)
    size = parse_size(args.size)
    paths = build_set(Path(args.workdir), size, args.seed)
    total = sum(p.stat().st_size for p in paths.values())
    folder = paths["panda-job_fetcher.log"].parent
    print(f"log set: {total / 1e6:.0f} MB in {len(paths)} files under {folder}",
          file=sys.stderr)

    parse_s, only_s, grep_s = [], [], []
    floors: dict[str, list[float]] = {
        "read only": [], "marker scan only": [], "records matched only": []}
    counts: dict[str, Any] = {}
    for attempt in range(args.repeat):
        print(f"timing run {attempt + 1}/{args.repeat}", file=sys.stderr)
        started = time.perf_counter()
        fast_sections({name: stream_chunks(path) for name, path in paths.items()})
        parse_s.append(time.perf_counter() - started)
        logs = {name: read_chunks(path) for name, path in paths.items()}
        started = time.perf_counter()
        fast_sections(logs)
        only_s.append(time.perf_counter() - started)
        if args.floors:
            started = time.perf_counter()
            for path in paths.values():
                for _chunk in stream_chunks(path):
                    pass
            floors["read only"].append(time.perf_counter() - started)
            chunked = {name: read_chunks(path, 4 << 20) for name, path in paths.items()}
            started = time.perf_counter()
            scan_only(chunked)
            floors["marker scan only"].append(time.perf_counter() - started)
            started = time.perf_counter()
            records_only(chunked)
            floors["records matched only"].append(time.perf_counter() - started)
            del chunked
        del logs
        started = time.perf_counter()
        for name, path in paths.items():
            cmd = ["grep", "-c", "-F"] + [a for p in GREP[name] for a in ("-e", p)]
            done = subprocess.run([*cmd, str(path)], stdout=subprocess.PIPE, check=False,
                                  env=dict(os.environ, LC_ALL="C"), text=True)
            counts[name] = int(done.stdout.strip() or 0)
        grep_s.append(time.perf_counter() - started)

    mb = total / 1e6
    best_parse, best_grep = min(parse_s), min(grep_s)
    print(f"log set                 {mb:10.0f} MB")
    print(f"parsers (read + parse)  {mb / best_parse:10.0f} MB/s  ({best_parse:.2f} s best of "
          f"{args.repeat}; all: {', '.join(f'{s:.2f}' for s in parse_s)})")
    best_only = min(only_s)
    print(f"parsers (parse only)    {mb / best_only:10.0f} MB/s  ({best_only:.2f} s best of "
          f"{args.repeat})")
    print(f"grep -c -F              {mb / best_grep:10.0f} MB/s  ({best_grep:.2f} s best of "
          f"{args.repeat}; lines of interest: {sum(counts.values())})")
    print(f"ratio parse/grep time   {best_parse / best_grep:10.2f} x  (parse only: "
          f"{best_only / best_grep:.2f} x)")
    for what, times in floors.items():
        if times:
            print(f"floor: {what:<21} {mb / min(times):6.0f} MB/s  ({min(times):.2f} s, "
                  f"{min(times) / best_grep:.2f} x grep)")

    if args.check != "none":
        limit = None if args.check == "full" else args.check_mb * 10**6
        what = "all of the set" if limit is None else f"the first {args.check_mb} MB per file"
        print(f"checking against the line-by-line reference on {what}", file=sys.stderr)
        logs = {name: read_chunks(path, limit=limit) for name, path in paths.items()}
        started = time.perf_counter()
        fast = fast_sections(logs)
        ref = reference_sections(logs)
        same = json.dumps(fast, sort_keys=True) == json.dumps(ref, sort_keys=True)
        fq = fast["fetching"]["queues"]
        print(f"reference check ({what}): {'identical' if same else 'DIFFERENT'}; "
              f"fetch attempts {sum(q['attempts'] for q in fq.values())}, failed calls "
              f"{fast['communicator']['failed']} + {fast['propagator']['failed']} "
              f"({time.perf_counter() - started:.1f} s)")
        if not same:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
