"""Parsers for the harvester's own logs: what the fetcher, submitter, adjuster and the
calls to the PanDA server did in the interval.

Each takes the chunks of bytes appended to one log since the previous run (complete lines,
the tailer's guarantee) and returns plain JSON data. Formats and their variants across
harvester versions: the comments beside each pattern below, and real-format excerpts in this
repository, src/clusterwatch/loopback/harvester_files/logs/ (`new`: the current harvester,
`old`: the 2020 generation, `info`: a fetcher logging at INFO), which
tests/reporter/test_harvester_log.py parses. Log times are UTC.
"""

import re
from collections import deque
from typing import Any, Deque, Dict, Iterable, List, Match, Optional, Tuple

from clusterwatch.reporter.harvester_lines import (
    HEAD,
    clip,
    error_class,
    line_at,
    records,
    rest_of_line,
    text,
    utc,
)

RECENT_PUSHES = 20
MAX_QUEUES = 1000  # adjuster values kept in state: far above any harvester's queue count
MAX_LINE = 2000

# --- job fetcher: `run <queueName=Q> getting N jobs ...` (DEBUG), `got N jobs ... with X`
# the marker holds as much of the record as its regex can find at memory speed: a `got 5
# queues` line costs the scan one comparison more instead of a failed record match
FETCH_MARK = re.compile(rb"> g(?:ot|etting) \d+ jobs")
FETCH = re.compile(
    HEAD + rb"\S+ <queueName=([^>]*)> "
    rb"(?:getting (\d+) jobs(?: for prodSourceLabel[= ](\S+))?[^\n]*"
    # >= 0.5.3 `got N jobs for prodSourceLabel=L rtype=R with X  : took T sec`, else
    # `got N jobs with X ...`; X may go on with a traceback on the following lines
    rb"|got (\d+) jobs(?: for prodSourceLabel=(\S*) rtype=\S* with | with )([^\n]*))")
TOOK = re.compile(rb": took [0-9.]+ sec[ \t\r\f\v]*")
NO_JOBS = re.compile(r"no jobs in panda|^StatusCode=20\b|^no need to get job",
                     re.IGNORECASE | re.ASCII)
STATUS_CODE = re.compile(r"StatusCode=\d+")


def fetching_section(chunks: Iterable[bytes]) -> Dict[str, Any]:
    """Per queue: fetch attempts (one per `got N jobs` record), jobs asked and got, failures.

    And, by the order of the lines (never their times), what the latest attempts say
    (telemetry 1.9): the last attempt that did not fail (`last_ok_at`), and when the latest
    attempt failed, the first failure after it (`failing_since`) with those failures by
    class (`failing_errors`). Read from this interval alone here; `carry_fetch_streaks`
    joins them to what earlier runs saw.
    """
    # per queue: [attempts, jobs asked or None, jobs got, failed, errors, last, last got at,
    #             last ok at, failing since, failing errors]
    queues: Dict[bytes, List[Any]] = {}
    asking: Dict[bytes, Tuple[Any, ...]] = {}  # (jobs asked, label) by queue
    outcomes: Dict[bytes, Tuple[str, Optional[str]]] = {}
    for line in records(chunks, FETCH_MARK, FETCH):
        if line.lastindex != 8:  # `getting N jobs`, read by the queue's next `got N jobs`
            asking[line[3]] = line.group(4, 5)  # (a queue running into the next line never is)
            continue
        date, hms, queue, _, _, got_n, label, outcome_b = line.groups()
        if b"\n" in queue:
            continue
        asked_b, asked_label = asking.pop(queue, (None, None))
        if label is None:
            label = asked_label
        cut = outcome_b.rfind(b": took ")
        if cut >= 0 and TOOK.fullmatch(outcome_b, cut):
            outcome_b = outcome_b[:cut].rstrip(b" \t\r\f\v")
        known = outcomes.get(outcome_b)
        if known is None:
            known = outcomes[outcome_b] = _outcome(text(outcome_b))
        q = queues.get(queue)
        if q is None:
            q = queues[queue] = [0, None, 0, 0, {}, None, None, None, None, {}]
        got = int(got_n)
        q[0] += 1
        q[2] += got
        asked = None if asked_b is None else int(asked_b)
        if asked is not None:
            q[1] = asked if q[1] is None else q[1] + asked
        cls = known[1]
        if cls is not None:
            q[3] += 1
            q[4][cls] = q[4].get(cls, 0) + 1
            if q[8] is None:
                q[8] = (date, hms)
            q[9][cls] = q[9].get(cls, 0) + 1
        else:
            q[7], q[8], q[9] = (date, hms), None, {}
        if got:
            q[6] = (date, hms)
        q[5] = (date, hms, label, asked, got, known)
    out = {}
    for queue, (attempts, jobs_asked, jobs_got, failed, errors, last, got_at, ok_at,
                failing_at, failing_errors) in queues.items():
        date, hms, label, asked, got, (outcome, cls) = last
        out[text(queue)] = {
            "attempts": attempts, "jobs_asked": jobs_asked, "jobs_got": jobs_got,
            "failed": failed, "errors": errors,
            "last": {"at": utc(date, hms), "label": None if label is None else text(label),
                     "asked": asked, "got": got, "outcome": outcome, "error_class": cls},
            "last_got_jobs_at": None if got_at is None else utc(*got_at),
            "last_ok_at": None if ok_at is None else utc(*ok_at),
            "failing_since": None if failing_at is None else utc(*failing_at),
            "failing_errors": failing_errors}
    return {"queues": out}


STREAK_FIELDS = ("last_ok_at", "failing_since", "failing_errors")
MAX_STREAK_CLASSES = 20  # error classes kept per streak: the most frequent (a days-long one)
UTC_TEXT = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z\Z")


def carry_fetch_streaks(section: Dict[str, Any], previous: Any
                        ) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """The fetching section with each queue's streak joined to earlier runs; the state.

    A queue whose attempts all failed in this interval keeps the last success an earlier
    run saw, and when the earlier run's latest attempt had failed too, the failing streak
    goes on from there: `failing_since` is the first failure after the last success even
    when that failure was logged in the previous interval (whose record still showed the
    success). `previous` is what this function returned as state last time ({} at
    first); a queue of the wrong shape there starts afresh, so a damaged state can never
    put a value the schema refuses into the record. A queue without attempts this
    interval keeps its streak in the state. A section without queues (its log unreadable,
    its parser failed) leaves the state as it was.
    """
    kept = previous.get("queues") if isinstance(previous, dict) else None
    state = {name: streak for name, streak in (kept if isinstance(kept, dict) else {}).items()
             if isinstance(name, str) and _is_streak(streak)}  # type: Dict[str, Any]
    queues = section.get("queues")
    if not isinstance(queues, dict):
        return section, {"queues": state}
    for name, entry in queues.items():
        before = state.get(name)
        if entry["last_ok_at"] is None and before is not None:
            entry["last_ok_at"] = before["last_ok_at"]
            if before["failing_since"] is not None:
                entry["failing_since"] = before["failing_since"]
                errors = dict(before["failing_errors"])
                for cls, count in entry["failing_errors"].items():
                    errors[cls] = errors.get(cls, 0) + count
                entry["failing_errors"] = errors
        # At most the most frequent classes, whether the streak began in this interval or
        # before (one interval's dialogs can fail in as many ways as a days-long streak).
        entry["failing_errors"] = _most_frequent(entry["failing_errors"])
        state[name] = {key: entry[key] for key in STREAK_FIELDS}
    if len(state) > MAX_QUEUES:
        newest = sorted(state, key=lambda k: max(state[k]["failing_since"] or "",
                                                 state[k]["last_ok_at"] or ""))[-MAX_QUEUES:]
        state = {k: state[k] for k in newest}
    return section, {"queues": state}


def _most_frequent(errors: Dict[str, int]) -> Dict[str, int]:
    if len(errors) <= MAX_STREAK_CLASSES:
        return errors
    kept = sorted(errors, key=lambda cls: (-errors[cls], cls))[:MAX_STREAK_CLASSES]
    return {cls: errors[cls] for cls in kept}


def _is_streak(value: Any) -> bool:
    """A streak as `carry_fetch_streaks` keeps it: two times (UTC text or null), and the
    failures by class, present exactly when `failing_since` is."""
    if not isinstance(value, dict) or set(value) != set(STREAK_FIELDS):
        return False
    errors = value["failing_errors"]
    return (all(value[key] is None
                or (isinstance(value[key], str) and UTC_TEXT.match(value[key]) is not None)
                for key in ("last_ok_at", "failing_since"))
            and isinstance(errors, dict)
            and all(isinstance(k, str) and type(n) is int and n > 0 for k, n in errors.items())
            and (value["failing_since"] is None) == (not errors))


def _outcome(raw: str) -> Tuple[str, Optional[str]]:
    """(outcome as delivered, error class or None when it is no failure)."""
    outcome = clip(raw)
    if outcome == "OK" or NO_JOBS.search(outcome) is not None:
        return outcome, None
    cls = error_class(outcome)
    if cls is None:
        code = STATUS_CODE.match(outcome)
        # the server's errorDialog (e.g. `database timeout`), shortened
        cls = code.group(0) if code else " ".join(outcome.split())[:60] or "unknown"
    return outcome, cls


# --- submitter: token `id=submitter-... queue=Q jtype=J rtype=R [ptype=P]`
SUBMIT_MARK = re.compile(rb"> (?:workers status: |got \d+ job chunks|submitting \d"
                         rb"|submitted a workerID=\d|failed to (?:submit|register) a worker)")
SUBMIT = re.compile(
    HEAD + rb"\S+ <([^>]*)> "
    rb"(?:workers status: ([^\n]*)|got (\d+) job chunks|submitting (\d+) workers"
    rb"|submitted a workerID=(\d+) for PandaID=(\d+)"
    rb"|failed to (submit) a workerID=|failed to register a worker)")
QUEUE_IN_TOKEN = re.compile(rb"(?:^|.*? )queue=([^\s>]+)")
STATUS_KEYS = ("nQueue", "nReady", "nRunning", "nNewWorkers")
STATUS_FIELD = re.compile(r"'(nQueue|nReady|nRunning|nNewWorkers)': (\d+)")


def submission_section(chunks: Iterable[bytes]) -> Dict[str, Any]:
    """Per queue: workers submitted and failed, the last `workers status` and job chunks."""
    # A record is kept as its groups (date, time, token, status, job chunks, submitting,
    # workerID, PandaID, `submit` of a failed submission) and read at the end, so that it
    # builds no tuple of its own. Per queue: [workers announced by `submitting N workers`
    # less failed, failures, last workers status record, last job chunks record]
    queues: Dict[bytes, List[Any]] = {}
    # the queue each token names; None for a token naming none or running into the next line
    tokens: Dict[bytes, Optional[bytes]] = {}
    pushes: Deque[Tuple[bytes, Tuple[Any, ...]]] = deque(maxlen=RECENT_PUSHES)
    for line in records(chunks, SUBMIT_MARK, SUBMIT):
        g = line.groups()
        token = g[2]
        try:
            queue = tokens[token]
        except KeyError:
            named = None if b"\n" in token else QUEUE_IN_TOKEN.match(token)
            queue = tokens[token] = named.group(1) if named else None
        if queue is None:
            continue
        q = queues.get(queue)
        if q is None:
            q = queues[queue] = [0, 0, None, None]
        if g[6] is not None:  # the most frequent first
            pushes.append((queue, g))
        elif g[3] is not None:
            q[2] = g
        elif g[5] is not None:
            q[0] += int(g[5])
        elif g[4] is not None:
            q[3] = g
        else:
            q[1] += 1
            if g[8] is not None:
                q[0] -= 1  # one of the N workers `submitting N workers` announced
    out = {}
    for queue, (submitted, failures, status, job_chunks) in queues.items():
        out[text(queue)] = {
            # `submitting N workers` also covers pull-mode queues, which log no workerID lines
            "workers_submitted": max(submitted, 0), "submit_failures": failures,
            "workers_status": None if status is None else _workers_status(text(status[3])),
            "workers_status_at": None if status is None else utc(status[0], status[1]),
            "job_chunks": None if job_chunks is None else int(job_chunks[4]),
            "job_chunks_at": None if job_chunks is None else utc(job_chunks[0], job_chunks[1])}
    recent = [{"at": utc(g[0], g[1]), "queue": text(queue), "workerid": int(g[6]),
               "pandaid": int(g[7])} for queue, g in pushes]
    return {"queues": out, "recent_pushes": recent}


def _workers_status(raw: str) -> Dict[str, Optional[int]]:
    """The four counts of a `workers status: {...}` dict repr, read, never evaluated."""
    fields = dict(STATUS_FIELD.findall(raw))
    return {k: int(fields[k]) if k in fields else None for k in STATUS_KEYS}


# --- worker adjuster (method define_num_workers, token `site=Q`); HEAD and v0.5 spellings
ADJUST_MARK = re.compile(rb"> (?:No n|limiting max|set n)")
ADJUST = re.compile(
    HEAD + rb"\S+ <site=([^>]*)> "
    rb"(?:No (?:n_new_workers|nNewWorkers) since (?:n_queue|nQueue)\((\d+)\)"
    rb"(?:>=(?:n_queue_limit_per_rt|nQueueLimitPerRT)\((\d+)\)"
    rb"| \+ (?:n_ready|nReady)\((\d+)\) \+ (?:n_running|nRunning)\((\d+)\) "
    rb">= (?:max_workers|maxWorkers)\((\d+)\))"
    rb"|limiting (?:max_queued_workers|maxQueuedWorkers) to min\(n_activated=(\d+), "
    rb"queue_limit=(\d+|None)\)"
    rb"|set (?:n_new_workers|nNewWorkers)=0 ([^\n]*))")


def _limit(found: Match[bytes]) -> Dict[str, Any]:
    """What one adjuster line says about the waiting-worker limit."""
    g = found.groups()
    against: Dict[str, Any]
    if g[4] is not None:
        limit, name = int(g[4]), "n_queue_limit_per_rt"
        against = {"n_queue": int(g[3])}
    elif g[5] is not None:
        limit, name = int(g[7]), "max_workers"
        against = {"n_queue": int(g[3]), "n_ready": int(g[5]), "n_running": int(g[6])}
    elif g[8] is not None:
        activated = int(g[8])
        queue_limit = None if g[9] == b"None" else int(g[9])
        limit = activated if queue_limit is None else min(activated, queue_limit)
        name = "max_queued_workers"
        against = {"n_activated": activated, "queue_limit": queue_limit}
    else:
        limit, name = 0, "n_new_workers"
        against = {"reason": clip(text(g[10]))}
    return {"at": utc(g[0], g[1]), "limit": limit, "limit_name": name, "against": against,
            "message": clip(rest_of_line(found.string, found.end(3) + 2))}


def adjustment_section(chunks: Iterable[bytes], previous: Dict[str, Any]
                       ) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """Per queue: the waiting-worker limit the adjuster last applied, kept across runs.

    `previous` is what this function returned as state last time ({} at first).
    """
    kept = previous.get("queues") if isinstance(previous, dict) else None
    queues: Dict[str, Any] = dict(kept) if isinstance(kept, dict) else {}
    latest: Dict[bytes, Tuple[int, Match[bytes]]] = {}
    for n, found in enumerate(records(chunks, ADJUST_MARK, ADJUST)):
        if b"\n" not in found.group(3):
            latest[found.group(3)] = (n, found)  # only the last line per queue is delivered
    for _n, found in sorted(latest.values(), key=lambda last: last[0]):
        queues[text(found.group(3))] = _limit(found)
    if len(queues) > MAX_QUEUES:
        newest = sorted(queues, key=lambda k: str(queues[k].get("at")))[-MAX_QUEUES:]
        queues = {k: queues[k] for k in newest}
    return {"queues": queues}, {"queues": dict(queues)}


# --- communicator and propagator: `failed to POST|GET|UPLOAD with <class 'x.Error'>:...`
CALL_MARK = re.compile(rb"<class")
CALL = re.compile(HEAD + rb"(\S+) "
                  rb"(?:<([^>]*)>|:) [^\n]*?failed to (?:POST|GET|UPLOAD|post|put) "
                  rb"with <class '([\w.]+)'>")  # groups: date, time, method, token, class
CALL_URL = re.compile(rb"with url: (/[^\s?]*)")


def failed_calls_section(chunks: Iterable[bytes]) -> Dict[str, Any]:
    """Failed calls to the PanDA server by call (the API path when named) and error class."""
    counts: Dict[Tuple[bytes, bytes], int] = {}
    latest = None
    for found in records(chunks, CALL_MARK, CALL):
        if found.group(4) is not None and b"\n" in found.group(4):
            continue
        chunk = found.string
        end = chunk.find(b"\n", found.end())
        url = CALL_URL.search(chunk, found.end(), end if end >= 0 else len(chunk))
        key = (url.group(1) if url is not None else found.group(3), found.group(5))
        counts[key] = counts.get(key, 0) + 1
        latest = found
    by_call: Dict[str, int] = {}
    for (call, cls), n in counts.items():
        name = "{} {}".format(text(call), text(cls).rsplit(".", 1)[-1])
        by_call[name] = by_call.get(name, 0) + n
    last = None
    if latest is not None:
        last = {"at": utc(latest.group(1), latest.group(2)),
                "line": line_at(latest)[:MAX_LINE]}
    return {"failed": sum(counts.values()), "by_call_and_class": by_call, "last": last}
