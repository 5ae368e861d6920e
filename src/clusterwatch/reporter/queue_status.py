"""The record's `queue_status` section: each queue's effective `queueStatus`.

Built from the effective queue configuration (`queue_config.parse_queue_config`: templates
merged, an unset status `online`, lower-cased) by the host reporter, which reads the file on
the harvester's host, and by the monitor's remote builder, which reads it through the NERSC
IRI API; both call this one function, so the two records cannot drift apart.

Other readings of a queue (its pilot dispatch) are added into each queue's entry by their
own modules; an entry is a fresh dict per call, so they may do so freely.

Python 3.6 compatible, standard library only (see the package docstring).
"""

from typing import Any, Dict, Iterable, Optional, Tuple

from clusterwatch.reporter.queue_config import (
    QueueConfigError,
    QueueConfigSet,
    load_queue_config,
    parse_queue_config,
)

FATAL = ("queue configuration: harvester's reload fails on this file (see dropped), so it "
         "runs the configuration it had before, which is not known here")


def queue_status_section(config_set: QueueConfigSet, source: Optional[str] = None,
                         seen: Iterable[str] = ()) -> Dict[str, Any]:
    """`queue_status` for one parsed configuration. `source`: where it was read (a path or
    URL, or None); `seen`: queue names other sources (database rows, the PanDA server's
    rows) name, so those the configuration lacks are listed as `unconfigured`."""
    section = {
        "source": source,
        "queues": {name: {"status": queue.status, "active": queue.active}
                   for name, queue in sorted(config_set.queues.items())},
        "dropped": [problem.to_record() for problem in config_set.problems],
        "unconfigured": sorted(set(seen) - set(config_set.queues)),
    }  # type: Dict[str, Any]
    if config_set.fatal:
        section["error"] = FATAL
    return section


def unreadable_section(reason: str, source: Optional[str] = None) -> Dict[str, Any]:
    """`queue_status` when the configuration could not be read or parsed at all."""
    return {"error": "queue configuration: {}".format(reason), "source": source}


def read_effective(path: str) -> Tuple[Optional[QueueConfigSet], Optional[str]]:
    """The effective configuration in the file at `path`, or None and why not (one line,
    never quoting the file: a plugin section may hold a credential)."""
    try:
        return parse_queue_config(load_queue_config(path)), None
    except QueueConfigError as error:
        return None, str(error)


def host_section(config_set: Optional[QueueConfigSet], error: Optional[str], source: str,
                 harvester_db: Any) -> Dict[str, Any]:
    """The host reporter's `queue_status`: `seen` are the queues of the harvester's own
    `pq_table` (`harvester_db.launch_limits`), when it could be read."""
    if config_set is None:
        return unreadable_section(error or "not read", source)
    limits = harvester_db.get("launch_limits") if isinstance(harvester_db, dict) else None
    seen = limits if isinstance(limits, dict) and "error" not in limits else {}
    return queue_status_section(config_set, source, seen)
