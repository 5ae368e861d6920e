"""The `admission` section of one run: the workers that ended in the last hour (from the
harvester's work_table, through the reporter's mysql client), their files' evidence read
within a per-run budget and cached in the state until they leave the hour.

A startup record is one worker's files (its launcher stderr and its condor event log); at
most `max_records` of them are read per run, never-read workers newest first, then those
whose files could not be read yet. Python 3.6, standard library only.
"""

from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from clusterwatch.reporter import (
    admission,
    admission_evidence,
    condor_events,
    launcher_stderr,
    mysql_client,
)
from clusterwatch.reporter.harvester_cfg import HarvesterConfigError, read_db_settings

MAX_RECORDS = 4000
WORKER_LIMIT = 20000  # rows of the hour, newest first; more is said in the section
_FINAL = "('finished', 'failed', 'cancelled', 'missed')"  # the harvester's final statuses
_COLUMNS = (("workerID", "int"), ("computingSite", "text"), ("status", "text"),
            ("nativeExitCode", "int"), ("workAttributes", "json"), ("startTime", "time"),
            ("endTime", "time"))


class AdmissionSettings(object):
    """The site's refusal exit codes and the launcher's line patterns (compiled)."""

    def __init__(self, refusal_codes: Sequence[int] = admission.DEFAULT_REFUSAL_EXIT_CODES,
                 startup: Sequence[str] = (launcher_stderr.DEFAULT_STARTUP_PATTERN,),
                 lifetime: Sequence[str] = (launcher_stderr.DEFAULT_LIFETIME_PATTERN,),
                 max_records: int = MAX_RECORDS) -> None:
        self.refusal_codes = tuple(sorted(set(refusal_codes)))
        self.startup = launcher_stderr.compile_patterns(
            startup, launcher_stderr.STARTUP_GROUPS, "--startup-pattern")
        self.lifetime = launcher_stderr.compile_patterns(
            lifetime, launcher_stderr.LIFETIME_GROUPS, "--lifetime-pattern")
        self.max_records = max_records


def ended_workers(settings: Dict[str, Any], now: float, mysql: str = "mysql",
                  timeout: float = 30) -> Any:
    """The workers that reached a final status in (now - 1 h, now], or `{"error": ...}`."""
    rest = ("FROM work_table WHERE endTime > {} AND endTime <= {} AND status IN {}"
            " ORDER BY endTime DESC, workerID DESC LIMIT {}".format(
                mysql_client.sql_time(now - admission.WINDOW_S), mysql_client.sql_time(now),
                _FINAL, WORKER_LIMIT))
    rows = mysql_client.select_part(settings, "workers_admission", _COLUMNS, rest, mysql,
                                    timeout)
    if isinstance(rows, dict):
        return rows
    for row in rows:
        attributes = row.pop("workAttributes")
        attributes = attributes if isinstance(attributes, dict) else {}
        for name in ("batchLog", "stdErr"):
            value = attributes.get(name)
            row[name] = value if isinstance(value, str) and value else None
    return rows


def _path(worker: Dict[str, Any], name: str,
          submitters: Mapping[str, Mapping[str, Any]]) -> Optional[str]:
    url = worker.get(name)
    submitter = submitters.get(str(worker.get("computingSite") or ""), {})
    return condor_events.log_path_for(url, submitter) if url else None


def _well_formed(entry: Any) -> bool:
    """A cached entry the section can count; any other (a damaged or hand-edited state) is
    read again instead of failing the section for the hour its worker stays in it."""
    evidence = entry.get("evidence") if isinstance(entry, dict) else None
    return isinstance(evidence, dict) and isinstance(evidence.get("missing"), dict) \
        and isinstance(evidence.get("errors"), list)


def evidence_for_workers(workers: List[Dict[str, Any]],
                         submitters: Mapping[str, Mapping[str, Any]],
                         cache: Any, settings: AdmissionSettings
                         ) -> Tuple[Dict[str, Dict[str, Any]], Dict[str, str],
                                    Dict[str, Any], Dict[str, int]]:
    """(evidence by worker ID, why each worker without it has none, the new cache holding
    only these workers, what this run read)."""
    old = cache if isinstance(cache, dict) else {}
    new_cache = {}  # type: Dict[str, Any]
    why = {}  # type: Dict[str, str]
    wanted = []  # type: List[Tuple[str, Dict[str, Any]]]
    for worker in workers:
        key = str(worker.get("workerID"))
        if _well_formed(old.get(key)):
            new_cache[key] = old[key]
        if key not in new_cache or not new_cache[key].get("complete"):
            wanted.append((key, worker))
    # Never read first, then incomplete ones; newest first within each (the list is).
    wanted.sort(key=lambda pair: pair[0] in new_cache)
    read = built = 0
    for key, worker in wanted:
        event_log = _path(worker, "batchLog", submitters)
        stderr = _path(worker, "stdErr", submitters)
        has_files = event_log is not None or stderr is not None
        if has_files and read >= settings.max_records:
            if key not in new_cache:
                why[key] = "not read yet: the per-run cap of {} startup records".format(
                    settings.max_records)
            continue
        read += 1 if has_files else 0  # a worker without files costs no read
        built += 1
        new_cache[key] = {"evidence": admission_evidence.worker_evidence(
            event_log, stderr, settings.startup, settings.lifetime)}
        new_cache[key]["complete"] = new_cache[key]["evidence"].pop("complete")
    evidence = {key: entry["evidence"] for key, entry in new_cache.items()}
    info = {"records_read": read, "from_cache": len(workers) - built - len(why),
            "deferred": len(why), "cap": settings.max_records}
    return evidence, why, new_cache, info


def build_section(workers: List[Dict[str, Any]], submitters: Mapping[str, Mapping[str, Any]],
                  cache: Any, settings: AdmissionSettings
                  ) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """The section and the new cache for `workers` (those of the hour); `submitters`: each
    queue's effective submitter section, where its workers' log URLs map to files."""
    evidence, why, new_cache, info = evidence_for_workers(workers, submitters, cache,
                                                          settings)
    section = {
        "window_s": admission.WINDOW_S,
        "refusal_exit_codes": list(settings.refusal_codes),
        "workers": len(workers),
        "workers_limit_reached": len(workers) >= WORKER_LIMIT,
        "read": info,
        "queues": admission.queues_section(workers, evidence, settings.refusal_codes, why),
    }
    return section, new_cache


def collect(harvester_cfg: str, submitters: Mapping[str, Mapping[str, Any]],
            queue_config_error: Optional[str], environ: Dict[str, str], now: float,
            cache: Any, settings: Optional[AdmissionSettings], mysql: str = "mysql"
            ) -> Tuple[Dict[str, Any], Any]:
    """(the section, the new cache); a failure is the section's error and keeps the cache.
    `submitters` come from the queue configuration read once for the record (empty, with
    `queue_config_error` saying why, when it could not be read)."""
    settings = settings or AdmissionSettings()
    try:
        db_settings = read_db_settings(harvester_cfg, environ)
    except HarvesterConfigError as exc:
        return {"error": str(exc)}, cache
    try:
        if db_settings.get("engine") != "mariadb":
            return {"error": "engine {}: only MariaDB is read (through mysql)".format(
                db_settings.get("engine"))}, cache
        workers = ended_workers(db_settings, now, mysql)
        if isinstance(workers, dict):
            return workers, cache
        section, new_cache = build_section(workers, submitters, cache, settings)
        if queue_config_error is not None:
            section["queue_config_error"] = queue_config_error
        return section, new_cache
    except Exception as exc:  # one broken source must not lose the whole record
        return {"error": "{}: {}".format(type(exc).__name__, exc)}, cache
