"""Assemble one record (schema_version 1) from every source, each failure kept as a field.

`collect` never raises for a source that cannot be read: that source's field becomes
`{"error": "..."}` and the rest of the record is still built.
"""

import json
import os
import socket
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from clusterwatch.reporter import REPORTER_VERSION, SCHEMA_VERSION, utc_text
from clusterwatch.reporter.image_policy import DEFAULT_MAX_AGE_S
from clusterwatch.reporter.log_position import LogPosition, position_json
from clusterwatch.reporter.state_repair import usable_parts
from clusterwatch.reporter.storable import make_storable

# Log file names, relative to the log directory, per record section.
FETCHER_LOG = "panda-job_fetcher.log"
SUBMITTER_LOG = "panda-submitter.log"
ADJUSTER_LOG = "panda-worker_adjuster.log"
CALL_LOGS = {"communicator": "panda-communicator.log", "propagator": "panda-propagator.log"}
SCHEMA_FILE = "record-v1.schema.json"
EXAMPLES_PER_REASON = 3


class Sources(object):
    """Where one run reads from (all paths are parameters, so tests use fixture trees)."""

    def __init__(self, log_dir: str, harvester_cfg: str, queue_config: str,
                 volumes: List[str], mysql: str = "mysql", proc_root: str = "/proc",
                 environ: Optional[Dict[str, str]] = None, interval_s: int = 300) -> None:
        self.log_dir = log_dir
        self.harvester_cfg = harvester_cfg
        self.queue_config = queue_config
        self.image_state_max_age_s = DEFAULT_MAX_AGE_S  # --image-state-max-age-s
        self.volumes = volumes
        self.mysql = mysql
        self.proc_root = proc_root
        self.environ = dict(environ or {})
        self.admission = None  # type: Any  # AdmissionSettings from main's options
        self.interval_s = interval_s  # how often cron runs the reporter (--interval-s)


def schema_path() -> str:
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), SCHEMA_FILE)


def load_schema() -> Dict[str, Any]:
    """The record's JSON Schema; read through the loader so it works inside the zipapp."""
    import pkgutil

    data = pkgutil.get_data("clusterwatch.reporter", SCHEMA_FILE)
    if data is None:  # pragma: no cover - only if the file was left out of a build
        raise OSError("record schema missing from the package")
    loaded = json.loads(data.decode("utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def _guarded(build: Callable[[], Any]) -> Any:
    """Run one source's collection; an unexpected failure becomes its error field."""
    try:
        return build()
    except Exception as exc:  # one broken source must not lose the whole record
        return {"error": "{}: {}".format(type(exc).__name__, exc)}


def collect(key: str, sources: Sources, previous: Dict[str, Any], now: float,
            buffer: Any = None, state_damage: Optional[Dict[str, Any]] = None
            ) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """Build the record for the interval since the previous run; return (record, state).

    `state_damage` (what `state.load` found wrong with the previous state) goes into the
    record as its `state` field."""
    from clusterwatch.reporter import harvester_log, harvester_regulation, host, queue_status, tail

    started = time.monotonic()
    previous = usable_parts(previous)[0]  # a damaged part must not stop every later run
    first_run = "last_run" not in previous
    since = previous.get("last_run", now)
    logs_state = dict(previous.get("logs", {}))

    def read(name: str) -> Tuple[List[bytes], Dict[str, Any]]:
        path = os.path.join(sources.log_dir, name)
        saved = LogPosition.from_json(logs_state.get(name))
        chunks, position, info = tail.read_new(path, saved)
        logs_state[name] = position_json(position)
        return chunks, info

    def keep_unparsed(name: str, built: Dict[str, Any]) -> None:
        # Lines a parser failed on are read again next run rather than silently skipped.
        if "error" in built:
            logs_state[name] = previous.get("logs", {}).get(name)

    def section(name: str, parse: Callable[[List[bytes]], Dict[str, Any]]) -> Dict[str, Any]:
        chunks, info = read(name)
        built = dict(_guarded(lambda: parse(chunks)))
        keep_unparsed(name, built)
        built["read"] = info
        return built

    new_state = dict(previous)
    fetching = section(FETCHER_LOG, harvester_log.fetching_section)
    fetching, new_state["fetching"] = _fetch_streaks(fetching, previous, now)
    submission = section(SUBMITTER_LOG, harvester_log.submission_section)
    adjuster_chunks, adjuster_info = read(ADJUSTER_LOG)
    try:
        adjustment, new_state["adjustment"] = harvester_log.adjustment_section(
            adjuster_chunks, previous.get("adjustment", {}))
    except Exception as exc:
        adjustment = {"error": "{}: {}".format(type(exc).__name__, exc)}
        keep_unparsed(ADJUSTER_LOG, adjustment)
    adjustment["read"] = adjuster_info
    failed_calls = {daemon: section(name, harvester_log.failed_calls_section)
                    for daemon, name in sorted(CALL_LOGS.items())}
    # Read once, as the harvester merges it, for every section that needs it.
    try:
        config_set, config_error = queue_status.read_effective(sources.queue_config)
    except Exception as exc:  # an unexpected fault here must not lose the record
        config_set, config_error = None, "{}: {}".format(type(exc).__name__, exc)
    submitters = config_set.submitters if config_set is not None else {}
    try:
        harvester_db, new_state["reasons"] = _harvester_db(
            sources, now, since, previous.get("reasons", {}), submitters, config_error)
        harvester_regulation.add_limits_in_force(harvester_db, config_set, config_error)
    except Exception as exc:  # the record goes out without it, the cache stays
        harvester_db = {"error": "{}: {}".format(type(exc).__name__, exc)}

    admission, new_state["admission"] = _admission(sources, now, previous.get("admission"),
                                                   submitters, config_error)

    record = {
        "schema_version": SCHEMA_VERSION,
        "host": key,
        "hostname": socket.getfqdn(),
        "collected_at": utc_text(now),
        "reporter_version": REPORTER_VERSION,
        "interval": {"since": utc_text(since), "seconds": round(now - since),
                     "first_run": first_run, "expected_s": sources.interval_s},
        "fetching": fetching,
        "submission": submission,
        "adjustment": adjustment,
        "failed_calls": failed_calls,
        "daemons": _guarded(lambda: host.daemon_logs(sources.log_dir, now)),
        "processes": _guarded(lambda: host.harvester_processes(sources.proc_root)),
        "harvester_db": harvester_db,
        "admission": admission,
        "health": {"volumes": _guarded(lambda: host.volumes(sources.volumes))},
        "delivery": _guarded(buffer.section) if buffer is not None else {"backlog": 0},
        "queue_status": _guarded(lambda: queue_status.host_section(
            config_set, config_error, sources.queue_config, harvester_db)),
    }
    _guarded(lambda: _add_pilot_dispatch(record["queue_status"], config_set, sources, now))
    if state_damage is not None:
        record["state"] = state_damage
    record = make_storable(record)  # log text is data: NULs must not make it unstorable
    record["collect_seconds"] = round(time.monotonic() - started, 3)
    new_state["logs"] = logs_state
    new_state["last_run"] = now
    return record, new_state


def _fetch_streaks(fetching: Dict[str, Any], previous: Dict[str, Any], now: float
                   ) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """Each queue's failing streak joined to earlier runs' (telemetry 1.9), and the state.

    The streaks carry on only from the run just before (the part says which run wrote
    it): a part another reporter left behind (a downgrade to 1.8 keeps it untouched while
    it runs) knows nothing of what was logged since, so the streaks start afresh from this
    interval. Should the join fail, the queues go without the streak (the monitor then
    reads the record as an older reporter's, by its interval's counts) and the streaks
    start afresh next run."""
    from clusterwatch.reporter import harvester_log

    saved = previous.get("fetching")
    if not isinstance(saved, dict) or saved.get("written_at") != previous.get("last_run"):
        saved = {}
    try:
        fetching, state = harvester_log.carry_fetch_streaks(fetching, saved)
    except Exception:  # the record goes out without the streak fields
        for entry in (fetching.get("queues") or {}).values():
            for key in harvester_log.STREAK_FIELDS:
                entry.pop(key, None)
        return fetching, {}
    state["written_at"] = now
    return fetching, state


def _harvester_db(sources: Sources, now: float, since: float, reasons_cache: Dict[str, Any],
                  submitters: Dict[str, Dict[str, Any]], config_error: Optional[str]
                  ) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    from clusterwatch.reporter import condor_events, harvester_db

    section = dict(harvester_db.collect_with_config(
        sources.harvester_cfg, sources.environ, now, since, mysql=sources.mysql))
    candidates = section.pop("workers_not_finished_candidates", None)
    if not isinstance(candidates, list):
        # The database part failed: its error stands for the reasons too.
        errors = [part["error"] for part in section.values()
                  if isinstance(part, dict) and "error" in part]
        section["workers_not_finished"] = candidates or {
            "error": errors[0] if errors else "no worker list"}
        return section, reasons_cache
    if config_error is not None:
        section["queue_config_error"] = config_error
    candidates, section["workers_not_finished_read"] = harvester_db.capped_candidates(
        candidates)
    reasons, new_cache = condor_events.reasons_for_workers(candidates, submitters,
                                                           reasons_cache)
    section["workers_not_finished"] = group_not_finished(candidates, reasons)
    return section, new_cache


def _admission(sources: Sources, now: float, cache: Any, submitters: Dict[str, Dict[str, Any]],
               config_error: Optional[str]) -> Tuple[Dict[str, Any], Any]:
    from clusterwatch.reporter import admission_collect

    return admission_collect.collect(sources.harvester_cfg, submitters, config_error,
                                     sources.environ, now, cache, sources.admission,
                                     mysql=sources.mysql)


def _add_pilot_dispatch(section: Any, config_set: Any, sources: Sources, now: float) -> None:
    """Each queue's pilot dispatch, read from its template (telemetry 1.6 and 1.7)."""
    from clusterwatch.reporter import pilot_dispatch
    from clusterwatch.reporter.regular_read import read_regular

    if isinstance(section, dict) and config_set is not None:
        pilot_dispatch.add_pilot_dispatch(
            section, config_set,
            lambda path: read_regular(path, pilot_dispatch.MAX_TEMPLATE_BYTES), now,
            sources.image_state_max_age_s)


def group_not_finished(workers: List[Dict[str, Any]],
                       reasons: Dict[str, Dict[str, Any]]) -> Dict[str, Any]:
    """Per site, workers grouped by the batch system's reason, with up to three examples."""
    sites = {}  # type: Dict[str, Dict[str, Any]]
    for worker in workers:
        worker_id = str(worker.get("workerID"))
        reason = reasons.get(worker_id) or {}
        text = reason.get("reason") or "no reason found"
        site = sites.setdefault(str(worker.get("computingSite")), {"workers": 0, "reasons": {}})
        site["workers"] += 1
        group = site["reasons"].setdefault(text, {"count": 0,
                                                 "source": reason.get("source", "none"),
                                                 "examples": []})
        group["count"] += 1
        if len(group["examples"]) < EXAMPLES_PER_REASON:
            group["examples"].append({
                "worker": worker.get("workerID"),
                "batch_id": worker.get("batchID"),
                "node": worker.get("nodeID"),
                "ce": worker.get("computingElement"),
                "log_url": worker.get("batchLog"),
            })
    return sites
