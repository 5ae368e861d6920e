"""The monitor tests' host records: the real reporter's example record, one copy, and the
variants of it a scenario needs.

`fixtures/record-example.json` was made by running the real reporter over
`src/clusterwatch/loopback/harvester_files/logs/new/` (no harvester database reachable, so
its `harvester_db` parts carry errors): what a reporter sends, not hand-written. The
variants change only what a scenario needs.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import re
from pathlib import Path
from typing import Any, Optional

EXAMPLE = Path(__file__).parent / "fixtures" / "record-example.json"
KEY = "pandaharvester01"
QUEUE = "BNL_PanDA_1"
UTC_TEXT = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")
LOG_TIME = re.compile(r"^(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})(,\d{3} )")
SSL_LINE = (
    "2026-10-02 18:24:05,412 panda.log.communicator: ERROR    get_jobs <siteName=BNL_PanDA_1> "
    "failed to POST with <class 'requests.exceptions.SSLError'>:HTTPSConnectionPool("
    "host='pandaserver01.sdcc.bnl.gov', port=25443): Max retries exceeded with url: "
    "/api/v1/pilot/acquire_jobs (Caused by SSLError(SSLCertVerificationError(1, '[SSL: "
    "CERTIFICATE_VERIFY_FAILED] certificate verify failed: unable to get local issuer "
    "certificate (_ssl.c:1129)'))) Traceback (most recent call last):"
)
SSL_MESSAGE = SSL_LINE[len("2026-10-02 18:24:05,412 "):]  # the line without its time


def example(key: str = KEY, collected_at: Optional[dt.datetime] = None) -> dict[str, Any]:
    """The example record, a fresh copy, as `key` posts it (collected at `collected_at`)."""
    record: dict[str, Any] = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    record["host"] = key
    if collected_at is not None:
        record["collected_at"] = utc(collected_at)
    return record


def utc(moment: dt.datetime) -> str:
    return moment.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse(text: str) -> dt.datetime:
    return dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.timezone.utc)


def _moved(value: Any, delta: dt.timedelta) -> Any:
    if isinstance(value, dict):
        return {key: _moved(item, delta) for key, item in value.items()}
    if isinstance(value, list):
        return [_moved(item, delta) for item in value]
    if isinstance(value, str) and UTC_TEXT.match(value):
        return utc(parse(value) + delta)
    if isinstance(value, str) and (logged := LOG_TIME.match(value)):  # a log line's own time
        moved = dt.datetime.strptime(logged.group(1), "%Y-%m-%d %H:%M:%S") + delta
        return f"{moved:%Y-%m-%d %H:%M:%S}{value[logged.end(1):]}"
    return value


LOG_SECTIONS = ("fetching", "submission", "adjustment", "failed_calls")


def recent(record: dict[str, Any], collected_at: dt.datetime,
           log_age: dt.timedelta = dt.timedelta(minutes=5)) -> dict[str, Any]:
    """The record as if collected at `collected_at`, its newest fetch `log_age` before.

    The example's log times (2026-10-02 18:2x) are weeks older than its collection time, so
    the log sections and the rest of the record move by different amounts."""
    collected = parse(record["collected_at"])
    newest_log = parse(record["fetching"]["queues"][QUEUE]["last"]["at"])
    log_delta = collected_at - log_age - newest_log
    moved: dict[str, Any] = {
        name: _moved(value, log_delta if name in LOG_SECTIONS else collected_at - collected)
        for name, value in record.items()}
    moved["interval"] = {"since": utc(collected_at - dt.timedelta(minutes=5)), "seconds": 300,
                         "first_run": False}
    return moved


def fresh(record: dict[str, Any], minutes_ago: float = 1) -> dict[str, Any]:
    """The record as if collected `minutes_ago` before now (`recent` at Django's clock)."""
    from django.utils import timezone

    return recent(record, timezone.now() - dt.timedelta(minutes=minutes_ago))


def as_key(record: dict[str, Any], key: str) -> dict[str, Any]:
    changed = copy.deepcopy(record)
    changed["host"] = key
    return changed


def all_fetches_failing(record: dict[str, Any], queue: str = QUEUE, cls: str = "SSLError",
                        line: str = SSL_LINE) -> dict[str, Any]:
    """The 2026-10-02 signature: every fetch of the interval failed with one error class."""
    changed = copy.deepcopy(record)
    entry = changed["fetching"]["queues"][queue]
    last_at = entry["last"]["at"]
    entry.update(attempts=6, failed=6, errors={cls: 6}, jobs_asked=210, jobs_got=0,
                 last_got_jobs_at=None)
    entry["last"] = {"at": last_at, "label": "managed", "asked": 35, "got": 0,
                     "outcome": f"failed to POST with <class 'requests.exceptions.{cls}'>:"
                                "HTTPSConnectionPool(...)", "error_class": cls}
    communicator = changed["failed_calls"]["communicator"]
    communicator.update(failed=7, by_call_and_class={f"/api/v1/pilot/acquire_jobs {cls}": 6,
                                                     f"/api/v1/pilot/update_jobs_bulk {cls}": 1})
    communicator["last"] = {"at": last_at, "line": line}
    changed["adjustment"]["queues"].pop(queue, None)
    return changed


def no_jobs(record: dict[str, Any], queue: str = QUEUE) -> dict[str, Any]:
    changed = copy.deepcopy(record)
    entry = changed["fetching"]["queues"][queue]
    entry.update(attempts=3, failed=0, errors={}, jobs_asked=60, jobs_got=0)
    entry["last"].update(got=0, asked=20, outcome="no jobs in PanDA", error_class=None)
    changed["adjustment"]["queues"].pop(queue, None)
    return changed


def with_database(record: dict[str, Any], queue: str = QUEUE,
                  reason: str = "Job was aborted. removed by SYSTEM_PERIODIC_REMOVE due to "
                                "job restarted undesirably.") -> dict[str, Any]:
    """`harvester_db` read successfully, in the shapes `reporter.harvester_db` builds."""
    changed = copy.deepcopy(record)
    at = changed["collected_at"]
    limits = {"nQueueLimitWorker": 50, "maxWorkers": 400, "nQueueLimitJob": None,
              "nNewWorkers": 0}
    changed["harvester_db"] = {
        "launch_limits": {queue: dict(limits, siteName=queue, jobFetchTime=at, submitTime=at,
                                      by_type={"ANY/ANY": limits,
                                               "managed/SCORE": dict(limits, maxWorkers=300)})},
        "workers_now": {queue: {"running": 412, "submitted": 5}},
        "workers_ended": {queue: {"by_status": {"finished": 30, "failed": 2},
                                  "finished_median_run_s": 5400}},
        "workers_not_finished": {queue: {"workers": 2, "reasons": {
            reason: {"count": 2, "source": "condor_event_log", "examples": [
                {"worker": 8812001, "batch_id": "1234.0", "node": "node042.example.org",
                 "ce": "gridgk01.example.org",
                 "log_url": "https://pandaharvester01/condor_logs/grid.1234.0.log"},
                {"worker": 8812002, "batch_id": "1235.0", "node": None, "ce": None,
                 "log_url": "javascript:alert(1)"}]}}}},
        "service_metrics": {"hostName": "pandaharvester01", "creationTime": at, "metrics": {}},
    }
    return changed


def with_queues(record: dict[str, Any], count: int) -> dict[str, Any]:
    """`record` with `count` more queues in fetching/submission/adjustment (a big harvester)."""
    grown = copy.deepcopy(record)
    fetch = record["fetching"]["queues"][QUEUE]
    submit = record["submission"]["queues"][QUEUE]
    adjust = record["adjustment"]["queues"][QUEUE]
    for number in range(count):
        name = f"SITE_{number:04d}_PanDA"
        grown["fetching"]["queues"][name] = copy.deepcopy(fetch)
        grown["submission"]["queues"][name] = copy.deepcopy(submit)
        grown["adjustment"]["queues"][name] = copy.deepcopy(adjust)
    return grown


def store(record: dict[str, Any], key: Optional[str] = None,
          received_at: Optional[dt.datetime] = None) -> Any:
    """Put a record in through ingest's own store (the indexes the pages read included)."""
    from clusterwatch.monitor.ingest.store import store_record

    body = json.dumps(record)
    report, _ = store_record(key or record["host"], record, len(body.encode()),
                             received_at=received_at)
    return report


def typed(value: Any, ordered: bool = True) -> Any:
    """`value` with JSON's types made visible (1 == 1.0 == True in Python) and, if
    `ordered`, its objects' key order (dict equality ignores it; jsonb does not keep it)."""
    if isinstance(value, dict):
        items = [(name, typed(item, ordered)) for name, item in value.items()]
        return ("object", items if ordered else sorted(items))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [typed(item, ordered) for item in value])
    return (type(value).__name__, value)
