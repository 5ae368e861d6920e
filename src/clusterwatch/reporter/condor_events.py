"""HTCondor job event logs: parse them and say why a harvester worker did not finish.

Event-log times are the submit host's local time (no year before HTCondor 8.9.3), so they
are labelled as local and never converted to, or passed off as, UTC.
"""

# typing.List/Dict/Tuple rather than list[...]: the reporter must run on Python 3.6.
import os
import re
from collections import OrderedDict
from typing import Any, Dict, List, Mapping, Optional, Tuple

from clusterwatch.reporter.regular_read import open_regular

SOURCE_LOG = "condor_event_log"
SOURCE_DIAG = "harvester_diag"
SOURCE_NONE = "none"

DEFAULT_MAX_BYTES = 1048576
MAX_REASON_CHARS = 500

ABORTED = 9
DISCONNECTED = 22
EXECUTE = 1
HELD = 12
RECONNECTED = 23
RECONNECT_FAILED = 24
REMOTE_ERROR = 21
RELEASED = 13
SHADOW_EXCEPTION = 7
TERMINATED = 5

REASON_EVENTS = {
    ABORTED: "aborted",
    DISCONNECTED: "disconnected",
    HELD: "held",
    RECONNECT_FAILED: "reconnect_failed",
    REMOTE_ERROR: "remote_error",
    SHADOW_EXCEPTION: "shadow_exception",
    TERMINATED: "terminated",
}

_HEADER = re.compile(
    r"^(\d{3}) \((\d+)\.(\d+)\.(\d+)\) "
    r"(?:(\d{4})-(\d{2})-(\d{2})|(\d{2})/(\d{2})) "
    r"(\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?)(Z?)"
    r"(?: (.*))?$"
)
# Characters of "YYYY-MM-DD " and "MM/DD " before the clock.
_DATE_WIDTH = {False: 11, True: 6}
_FLAG_PREFIX = re.compile(r"^\(\d+\) ")
_RETURN_VALUE = re.compile(r"Normal termination \(return value (-?\d+)\)")
_CODE_SUBCODE = re.compile(r"^Code (-?\d+) Subcode (-?\d+)$")
# Usage, byte-count and resource-table lines of terminated / shadow-exception bodies.
_NOISE = re.compile(
    r"^(Usr \d|\d+\s+-\s+(Run|Total) Bytes|Partitionable Resources"
    r"|\w[\w ()]*?\s+:\s+[\d.]*\s+[\d.]+\s+[\d.]+$|\(\d+\) (No core file|Corefile in:))"
)
_PLACEHOLDER = re.compile(r"\[ScheddHostname\]|\$\{(\w+)\}|\$(\w+)")


def _time_fields(match: "re.Match[str]") -> Dict[str, Any]:
    year = match.group(5)
    clock, utc = match.group(10), match.group(11) == "Z"
    iso = None  # type: Optional[str]
    if year is not None:  # a legacy MM/DD date has no year, so it has no ISO form here
        iso = f"{year}-{match.group(6)}-{match.group(7)}T{clock}"
    return {
        "time_iso_local": iso if not utc else None,
        "time_iso_utc": iso + "Z" if (iso is not None and utc) else None,
        "time_zone": "UTC" if utc else "local",
        "year_known": year is not None,
    }


def parse_events(text: str) -> List[Dict[str, Any]]:
    """Every complete event of an event log, in order. An event still being written (no
    closing `...` line yet) is left out, as HTCondor's own reader does."""
    events = []  # type: List[Dict[str, Any]]
    current = None  # type: Optional[Dict[str, Any]]
    for raw in text.splitlines():
        line = raw.rstrip("\r")
        if line.strip() == "...":
            if current is not None:
                events.append(current)
            current = None
            continue
        if current is None:
            match = _HEADER.match(line)
            if match is None:
                continue  # garbage before a header, or the tail of an event cut by a seek
            current = {
                "code": int(match.group(1)),
                "cluster": int(match.group(2)),
                "proc": int(match.group(3)),
                "subproc": int(match.group(4)),
                "time": line[match.start(10) - _DATE_WIDTH[match.group(5) is None]:match.end(11)],
                "text": (match.group(12) or "").strip(),
                "details": [],
            }
            current.update(_time_fields(match))
        elif line.strip():
            current["details"].append(line.strip())
    return events


def _meaningful(details: List[str], limit: int) -> List[str]:
    kept = []  # type: List[str]
    for line in details:
        if _NOISE.match(line) or line.startswith(("Trying to reconnect", "Can not reconnect")):
            continue
        kept.append(_FLAG_PREFIX.sub("", line))
    return kept[:limit]


def _join(parts: List[str]) -> str:
    """Sentences joined as the lines read: "Job was aborted. removed by ..." keeps one space,
    a line without closing punctuation gets a full stop before the next."""
    text = ""
    for part in parts:
        if not part:
            continue
        if text and not text.endswith((".", "!", "?", ":")):
            text += "."
        text = (text + " " + part) if text else part
    return text


def _is_reason(event: Dict[str, Any]) -> bool:
    return event["code"] in REASON_EVENTS


def _describe(event: Dict[str, Any], held_before: Optional[str]) -> Dict[str, Any]:
    code = event["code"]
    details = event["details"]  # type: List[str]
    out = {"event": code, "kind": REASON_EVENTS[code]}  # type: Dict[str, Any]
    if code == TERMINATED:
        first = _FLAG_PREFIX.sub("", details[0]) if details else ""
        value = _RETURN_VALUE.search(first)
        if value is not None:
            out["return_value"] = int(value.group(1))
            if out["return_value"] == 0:
                out["finished_ok"] = True
        kept = [first] if first else []
    else:
        kept = _meaningful(details, 3)
        for line in kept:
            codes = _CODE_SUBCODE.match(line)
            if codes is not None:
                out["hold_code" if code == HELD else "code"] = int(codes.group(1))
                out["hold_subcode" if code == HELD else "subcode"] = int(codes.group(2))
    reason = _join([event["text"], *kept])
    if held_before is not None:
        reason += " (while held: " + held_before + ")"
    out["reason"] = reason[:MAX_REASON_CHARS]
    return out


def reason_from_events(events: List[Dict[str, Any]]) -> Dict[str, Any]:
    """The last terminal or hold event, described; a disconnection followed by a reconnection
    no longer counts, and an abort of a job still held carries the hold's reason."""
    chosen = None  # type: Optional[int]
    for index, event in enumerate(events):
        if _is_reason(event):
            chosen = index
        elif (
            event["code"] == RECONNECTED
            and chosen is not None
            and events[chosen]["code"] == DISCONNECTED
        ):
            chosen = None
    if chosen is None:
        return {
            "reason": None,
            "last_event": events[-1]["code"] if events else None,
            "source": SOURCE_LOG,
        }
    event = events[chosen]
    held_before = None  # type: Optional[str]
    if event["code"] == ABORTED:
        for earlier in reversed(events[:chosen]):
            if earlier["code"] in (RELEASED, EXECUTE):
                break
            if earlier["code"] == HELD:
                held_before = " ".join(_meaningful(earlier["details"], 2)) or None
                break
    out = _describe(event, held_before)
    out["at_local"] = event["time_iso_local"]
    out["at_utc"] = event["time_iso_utc"]
    out["at_written"] = event["time"]
    out["year_known"] = event["year_known"]
    out["source"] = SOURCE_LOG
    return out


def _read_tail(path: str, max_bytes: int) -> str:
    # open_regular: a FIFO in a log's place must not hang the run holding the state lock.
    with open_regular(path) as handle:
        size = os.fstat(handle.fileno()).st_size
        start = max(0, size - max_bytes)
        handle.seek(start)
        data = handle.read(max_bytes)
    text = data.decode("utf-8", "replace")
    if start > 0:
        # Begin at the first event boundary so a cut event is not read as a whole one.
        cut = re.search(r"^\.\.\.\s*$", text, re.MULTILINE)
        text = text[cut.end():] if cut is not None else ""
    return text


def read_events(path: str, max_bytes: int = DEFAULT_MAX_BYTES) -> List[Dict[str, Any]]:
    """The complete events in the last `max_bytes` of the log at `path` (OSError if it
    cannot be read); the admission evidence reads slots and times from them."""
    return parse_events(_read_tail(path, max_bytes))


def worker_reason(path: str, max_bytes: int = DEFAULT_MAX_BYTES) -> Dict[str, Any]:
    """Why the condor job behind one worker ended, from the last `max_bytes` of its log."""
    try:
        text = _read_tail(path, max_bytes)
    except (OSError, ValueError) as exc:  # ValueError: a path with a NUL character
        return {"error": "cannot read condor event log: {}: {}".format(
            type(exc).__name__, getattr(exc, "strerror", None) or exc or "unknown error")}
    return reason_from_events(parse_events(text))


def _base_pattern(base_url: str) -> "re.Pattern[str]":
    parts = []  # type: List[str]
    position = 0
    for match in _PLACEHOLDER.finditer(base_url):
        parts.append(re.escape(base_url[position:match.start()]))
        name = match.group(1) or match.group(2)
        if name == "hostname" and "(?P<hostname>" not in "".join(parts):
            parts.append(r"(?P<hostname>[^/]+)")
        else:
            parts.append(r"[^/]+")
        position = match.end()
    parts.append(re.escape(base_url[position:].rstrip("/")))
    return re.compile("^" + "".join(parts) + "/(?P<rest>.+)$")


def log_path_for(
    batch_log_url: str,
    submitter: Mapping[str, Any],
    hostname: Optional[str] = None,
) -> Optional[str]:
    """The local file behind a worker's `batchLog` URL, through its queue's effective
    `submitter` section (`logBaseURL` and `logDir`, templates merged:
    `QueueConfigSet.submitters`); None when the queue has no such mapping or the URL does not
    match it. `$hostname` in `logDir` is taken from `hostname` or, failing that, from the
    same placeholder's value in the URL."""
    if not isinstance(batch_log_url, str) or not batch_log_url:
        return None
    base_url, log_dir = submitter.get("logBaseURL"), submitter.get("logDir")
    if not isinstance(base_url, str) or not isinstance(log_dir, str) or not base_url or not log_dir:
        return None
    match = _base_pattern(base_url).match(batch_log_url)
    if match is None:
        return None
    rest = match.group("rest").split("?", 1)[0].split("#", 1)[0]
    pieces = rest.split("/")
    if any(piece in ("", ".", "..") for piece in pieces):
        return None
    if "$hostname" in log_dir or "${hostname}" in log_dir:
        host = hostname or match.groupdict().get("hostname")
        if not host:
            return None
        log_dir = log_dir.replace("${hostname}", host).replace("$hostname", host)
    if "$" in log_dir or "[" in log_dir:
        return None
    return os.path.join(log_dir, *pieces)


def _batch_log(worker: Dict[str, Any]) -> Optional[str]:
    url = worker.get("batchLog")
    if isinstance(url, str) and url:
        return url
    attributes = worker.get("workAttributes")
    if isinstance(attributes, dict):
        url = attributes.get("batchLog")
        if isinstance(url, str) and url:
            return url
    return None


def _newest_first_key(worker: Dict[str, Any]) -> Tuple[str, int]:
    when = worker.get("endTime") or worker.get("submitTime") or ""
    try:
        worker_id = int(worker.get("workerID") or 0)
    except (TypeError, ValueError):
        worker_id = 0
    return (str(when).replace("T", " ").rstrip("Z"), worker_id)


def _from_diag(worker: Dict[str, Any], log: Dict[str, Any]) -> Dict[str, Any]:
    diag = worker.get("diagMessage")
    out = {}  # type: Dict[str, Any]
    if isinstance(diag, str) and diag.strip():
        out["reason"] = diag.strip()[:MAX_REASON_CHARS]
        out["source"] = SOURCE_DIAG
    else:
        out["reason"] = None
        out["source"] = SOURCE_NONE
    out.update(log)
    return out


def reasons_for_workers(
    workers: List[Dict[str, Any]],
    submitters: Mapping[str, Mapping[str, Any]],
    cache: Dict[str, Any],
    max_logs: int = 300,
    hostname: Optional[str] = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> Tuple[Dict[str, Dict[str, Any]], Dict[str, Any]]:
    """A reason per worker ID, and the new cache (JSON-ready, only for these workers).

    At most `max_logs` logs are opened per run: workers never read come first, newest first,
    then those whose log had no terminal event yet. A log is read once; its result is kept in
    the cache and the harvester diagnostic, which can still change, is consulted afresh."""
    old = cache if isinstance(cache, dict) else {}
    new_cache = {}  # type: Dict[str, Any]
    paths = {}  # type: Dict[str, str]
    for worker in workers:
        key = str(worker.get("workerID"))
        # computingSite is the configuration's queue name; queueName is the batch queue's
        queue = worker.get("computingSite") or worker.get("queueName") or ""
        url = _batch_log(worker)
        submitter = submitters.get(str(queue), {})
        path = log_path_for(url, submitter, hostname) if url else None
        if path is not None:
            paths[key] = path
        entry = old.get(key)
        if isinstance(entry, dict) and isinstance(entry.get("log"), dict):
            new_cache[key] = entry

    ordered = sorted(workers, key=_newest_first_key, reverse=True)
    keys = list(OrderedDict((str(w.get("workerID")), None) for w in ordered))
    unread = [key for key in keys if key in paths and key not in new_cache]
    retry = [key for key in keys
             if key in paths and key in new_cache and not new_cache[key].get("final")]
    budget = max(0, max_logs)
    for key in (unread + retry)[:budget]:
        log = worker_reason(paths[key], max_bytes)
        final = "error" in log or log.get("reason") is not None
        new_cache[key] = {"log": log, "final": final}

    results = {}  # type: Dict[str, Dict[str, Any]]
    for worker in workers:
        key = str(worker.get("workerID"))
        entry = new_cache.get(key)
        if entry is None:
            if key in paths:
                results[key] = _from_diag(worker, {"log_deferred": True})
            else:
                results[key] = _from_diag(worker, {"log_error": "no log path for this worker"})
        elif "error" in entry["log"]:
            results[key] = _from_diag(worker, {"log_error": entry["log"]["error"]})
        elif entry["log"].get("reason") is None:
            results[key] = _from_diag(worker, {"log_last_event": entry["log"].get("last_event")})
        else:
            results[key] = dict(entry["log"])
    return results, new_cache
