"""The remote record's worker counts, from the PanDA server's `harvester_workers`.

The same parts, in the same shapes, as the reporter builds from the harvester's own
`work_table` (`workers_now`, `worker_starts`, `workers_ended`, `workers_not_finished` with
`workers_not_finished_read`, and `submission`'s per-queue counts), keyed by `computingsite`
(the PanDA queue), with one more part only the server's copy needs: `workers_overdue`.
Records built before `worker_starts` carried the starts as `workers_started` (`{site:
{status: n}}`); the monitor's record reading takes that too.

What the server's copy is (facts from PanDAWMS/panda-server 9cc36033, `updateWorkers`):

- It is what the harvester's propagator last sent, so it lags the harvester by a propagator
  cycle; a worker sent after a run is counted by the run whose window holds its time.
- Terminal statuses are sticky: while a worker's status is `finished`, `failed`, `cancelled`
  or `missed` and its row was updated less than 3 hours before, a new status is dropped
  (the row's other columns still change, and each update restarts the 3 hours). So a worker
  counted ended never comes back live, and the ended counts keep the first terminal status
  the server took, even when the harvester later sent another.
- A worker whose final status never arrived would stay live for ever: one still not terminal
  seven days after its submission (its last update when it has no submission time) is not
  counted in `workers_now` but in `workers_overdue`.
- `missed` is the status harvester's submitter gives a worker it failed to submit (0.7.5:
  nothing else sets it), with the submission time set: so `submit_failures`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Optional

from clusterwatch.monitor.panda.remote.times import latest_per, server_time, utc_text, within
from clusterwatch.monitor.panda.server_rows import Rows, SourceFailed, WorkerRow
from clusterwatch.reporter.monitor_surface import (
    CANDIDATE_LIMIT,
    CANDIDATE_WINDOW_S,
    FINAL_STATUSES,
    LIVE_STATUSES,
    MAX_REASON_CHARS,
    SOURCE_DIAG,
    SOURCE_NONE,
    group_not_finished,
    not_finished_read,
)
from clusterwatch.reporter.monitor_surface import workers_ended_part as reporter_workers_ended

LIVE_FOR = dt.timedelta(days=7)
PARTS = ("workers_now", "workers_overdue", "worker_starts", "workers_ended",
         "workers_not_finished")
SUBMIT_FAILED = "missed"
NO_SITE = "(null)"  # as the reporter names a NULL computingSite


@dataclass(frozen=True)
class Workers:
    """What the worker rows gave: the `harvester_db` parts, the `submission` section, and what
    the launch limits need (None when the rows could not be read)."""

    parts: dict[str, Any]
    submission: dict[str, Any]
    running: Optional[dict[str, int]] = None  # live workers in status running, by site
    last_submitted: dict[str, str] = field(default_factory=dict)  # by site


def summarise_workers(harvester_id: str, rows: Rows[WorkerRow], queues: Iterable[str],
                      now: dt.datetime, since: dt.datetime) -> Workers:
    """Every worker part for the window `(since, now]`; `queues` get a submission entry even
    without workers."""
    if isinstance(rows, SourceFailed):
        error = {"error": f"harvester_workers: {rows.reason}"}
        return Workers({part: dict(error) for part in PARTS}, dict(error))
    now, since = server_time(now), server_time(since)
    workers = list(latest_per((row for row in rows if row["harvesterid"] == harvester_id),
                              lambda row: row["workerid"], lambda row: row["lastupdate"]).values())
    live: dict[str, dict[str, int]] = {}
    overdue: dict[str, dict[str, int]] = {}
    started: dict[str, dict[str, int]] = {}
    submission = {name: _submit_entry() for name in queues}
    last_submitted: dict[str, dt.datetime] = {}
    for worker in workers:
        site, status = worker["computingsite"] or NO_SITE, worker["status"]
        if status in LIVE_STATUSES:
            since_when = worker["submittime"] or worker["lastupdate"]
            counts = live if now - server_time(since_when) <= LIVE_FOR else overdue
            _add(counts, site, status)
        if within(worker["starttime"], since, now):
            _add(started, site, status)
        submitted = worker["submittime"]
        if submitted is not None:
            if site not in last_submitted or server_time(submitted) > last_submitted[site]:
                last_submitted[site] = server_time(submitted)
            if within(submitted, since, now):
                entry = submission.setdefault(site, _submit_entry())
                entry["submit_failures" if status == SUBMIT_FAILED
                      else "workers_submitted"] += 1
    parts = {
        "workers_now": live,
        "workers_overdue": overdue,
        "worker_starts": _starts(started),
        "workers_ended": _ended(workers, since, now),
    }
    parts["workers_not_finished"], parts["workers_not_finished_read"] = _not_finished(
        workers, now)
    return Workers(
        parts, {"queues": dict(sorted(submission.items()))},
        running={site: counts.get("running", 0) for site, counts in live.items()},
        last_submitted={site: utc_text(at) or "" for site, at in last_submitted.items()})


def _add(counts: dict[str, dict[str, int]], site: str, status: str) -> None:
    by_status = counts.setdefault(site, {})
    by_status[status] = by_status.get(status, 0) + 1


def _starts(started: dict[str, dict[str, int]]) -> dict[str, Any]:
    # The reporter's `worker_starts` shape, so one reader (and /panda/worker-starts/) takes both.
    return {site: {"started": sum(by_status.values()), "by_status": by_status}
            for site, by_status in started.items()}


def _submit_entry() -> dict[str, Any]:
    # What only the submitter's log says (the worker counts it read, job chunks) is null.
    return {"workers_submitted": 0, "submit_failures": 0, "workers_status": None,
            "workers_status_at": None, "job_chunks": None, "job_chunks_at": None}


def _ended(workers: Sequence[WorkerRow], since: dt.datetime, now: dt.datetime) -> Any:
    # The reporter's own rule (counts by status, the median run of the finished ones), so a
    # remote record and a host's record say the same thing the same way.
    return reporter_workers_ended([
        {"computingSite": worker["computingsite"], "status": worker["status"],
         "startTime": utc_text(worker["starttime"]), "endTime": utc_text(worker["endtime"])}
        for worker in workers
        if worker["status"] in FINAL_STATUSES and within(worker["endtime"], since, now)])


def _did_not_finish(worker: WorkerRow) -> bool:
    status, code = worker["status"], worker["nativeexitcode"]
    return status in FINAL_STATUSES[1:] or (status == "finished" and code not in (None, 0))


def _not_finished(workers: Sequence[WorkerRow], now: dt.datetime) -> tuple[Any, Any]:
    """The reporter's `workers_not_finished` over 24 hours, the reason being the harvester's
    diagnostic (`diagmessage`): no batch log is readable from here; and, as the reporter
    says it, how many of them were read under the same limit."""
    day = now - dt.timedelta(seconds=CANDIDATE_WINDOW_S)
    ranked = sorted(
        (worker for worker in workers
         if _did_not_finish(worker) and within(worker["endtime"], day, now)),
        key=lambda worker: (server_time(worker["endtime"] or now), worker["workerid"]),
        reverse=True)
    candidates = ranked[:CANDIDATE_LIMIT]
    reasons = {}
    for worker in candidates:
        diag = (worker["diagmessage"] or "").strip()
        reasons[str(worker["workerid"])] = (
            {"reason": diag[:MAX_REASON_CHARS], "source": SOURCE_DIAG} if diag
            else {"reason": None, "source": SOURCE_NONE})
    grouped = group_not_finished([
        {"workerID": worker["workerid"], "computingSite": worker["computingsite"] or NO_SITE,
         "batchID": worker["batchid"], "nodeID": worker["nodeid"],
         "computingElement": worker["computingelement"], "batchLog": worker["batchlog"]}
        for worker in candidates], reasons)
    return grouped, not_finished_read(len(candidates), len(ranked) > len(candidates))
