"""The harvester's queue configuration as the harvester sees it, from `panda_queueconfig.json`.

The raw document is not the configuration in force: its queues name templates, and the
harvester merges them (facts from HSF/harvester at d561b72f, package 0.7.5,
`QueueConfigMapper.load_data` in `harvestercore/queue_config_mapper.py`):

- an entry whose name ends in `_TEMPLATE`, or with `"isTemplateQueue": true`, is a template,
  never a queue; a template's own `templateQueueName` is dropped (templates do not chain);
- a queue naming a template that does not exist is skipped (`Invalid templateQueueName`);
- a queue starts as a copy of its template; each of its keys replaces the template's, except
  the plugin sections (`submitter`, `monitor`...), which are merged key by key;
- a plugin section naming its `module` and `name` gets each key of the merged `common`
  section it lacks (only `submitters` applies this: it holds the log locations);
- a queue missing one of the mandatory plugin sections is omitted;
- `queueStatus` unset is `online`, and lower-cased; an `offline` queue is inactive;
- the limits are sanitised (`queue_limits`).

What this module cannot see: the cacher's remote configuration and the CRIC resolver's
dynamic queues and statuses (the harvester merges them between template and local queue,
and with `autoBlacklist` an unset `queueStatus` comes from CRIC, not `online`), and whether
the plugin modules import. A problem that makes the harvester's reload fail (it raises on a
non-object entry, an unhashable template name or a non-text `queueStatus`) is marked fatal.

Used by the host reporter and by the monitor's remote harvester builder alike; `settings`
(the merged queue) may hold a plugin's credential, so it never goes into a record.

Python 3.6 compatible, standard library only (see the package docstring).
"""

import copy
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Tuple

from clusterwatch.reporter.queue_config_file import (
    MAX_BYTES,
    QueueConfigError,
    decode_queue_config,
    json_kind,
    load_queue_config,
)
from clusterwatch.reporter.queue_limits import (
    WORKER_LIMITS,
    LimitInForce,
    SanitisedLimits,
    limit_in_force,
    sanitise_limits,
    shown,
)

# One import point for both users: loading, parsing and the limit in force.
__all__ = ["MAX_BYTES", "EffectiveQueue", "LimitInForce", "QueueConfigError", "QueueConfigSet",
           "QueueProblem", "decode_queue_config", "limit_in_force", "load_queue_config",
           "parse_queue_config"]

MAP_TYPES = ("NoJob", "OneToOne", "ManyToOne", "OneToMany")
PLUGIN_SECTIONS = frozenset((
    "common", "messenger", "monitor", "preparator", "stager", "submitter", "sweeper",
    "workerMaker", "throttler", "zipper", "aux_preparator", "extractor"))
MANDATORY_SECTIONS = ("messenger", "monitor", "preparator", "stager", "submitter", "sweeper",
                      "workerMaker")
_FATAL = "harvester's reload fails on this file"


class QueueProblem(NamedTuple):
    """An entry the harvester does not take as a queue, and why (`fatal`: nor the file)."""

    queue: str
    message: str
    fatal: bool

    def to_record(self) -> Dict[str, Any]:
        return {"queue": self.queue, "message": self.message, "fatal": self.fatal}


class EffectiveQueue(NamedTuple):
    """One queue as the harvester runs it."""

    name: str
    template: Optional[str]
    status: str  # the effective queueStatus, lower case
    map_type: str
    run_mode: str
    limits: SanitisedLimits
    new_workers: Optional[int]  # nNewWorkers, not a limit the harvester sanitises
    notes: Tuple[str, ...]  # what sanitising changed or ignored, and odd values
    settings: Dict[str, Any]  # the merged queue: never put into a record

    @property
    def pull_mode(self) -> bool:
        """NoJob: the pilots fetch their own jobs; the harvester fetches none."""
        return self.map_type == "NoJob"

    @property
    def active(self) -> bool:
        return self.status != "offline"

    def limit_in_force(self, running_workers: Optional[int]) -> LimitInForce:
        return limit_in_force(self.limits, running_workers)

    def to_record(self, running_workers: Optional[int] = None) -> Dict[str, Any]:
        limits = {name: self.limits.values[name] for name in WORKER_LIMITS}
        limits.update((name, value) for name, value in sorted(self.limits.values.items())
                      if value is not None)
        limits["nNewWorkers"] = self.new_workers
        return {
            "template": self.template, "status": self.status, "active": self.active,
            "mapType": self.map_type, "pull_mode": self.pull_mode, "runMode": self.run_mode,
            "limits": limits,
            "limit_in_force": self.limit_in_force(running_workers).to_record(),
            "notes": list(self.notes),
        }


class QueueConfigSet(NamedTuple):
    """Every queue of one document, its template names and the entries it drops."""

    queues: Dict[str, EffectiveQueue]
    templates: Tuple[str, ...]
    problems: Tuple[QueueProblem, ...]
    # Each entry's merged `submitter` section, whose `logBaseURL` and `logDir` map a worker's
    # log URLs to local files; kept also for an entry omitted for a missing section or
    # skipped for its template, which the cacher's remote configuration (unseen here) may
    # give (then the entry's own section). Never for a record.
    submitters: Dict[str, Dict[str, Any]]

    @property
    def fatal(self) -> bool:
        return any(problem.fatal for problem in self.problems)

    def to_record(self, running_workers: Optional[Mapping[str, int]] = None) -> Dict[str, Any]:
        """JSON-able; `running_workers` by queue name, for the queues with a ratio."""
        counts = running_workers or {}
        return {
            "queues": {name: queue.to_record(counts.get(name))
                       for name, queue in sorted(self.queues.items())},
            "templates": list(self.templates),
            "problems": [problem.to_record() for problem in self.problems],
        }


def parse_queue_config(document: Any) -> QueueConfigSet:
    """The effective queues of a decoded `panda_queueconfig.json` document."""
    if not isinstance(document, dict):
        raise QueueConfigError(
            f"the queue configuration is {json_kind(document)}, not an object of queues")
    problems = []  # type: List[QueueProblem]
    templates = {}  # type: Dict[str, Dict[str, Any]]
    entries = []  # type: List[Tuple[str, Dict[str, Any]]]
    for name, entry in document.items():
        if not isinstance(entry, dict):
            problems.append(QueueProblem(name, f"{json_kind(entry)}, not an object: {_FATAL}",
                                         True))
        elif entry.get("isTemplateQueue") is True or name.endswith("_TEMPLATE"):
            templates[name] = {key: value for key, value in entry.items()
                               if key not in ("templateQueueName", "isTemplateQueue")}
        else:
            entries.append((name, entry))
    queues = {}  # type: Dict[str, EffectiveQueue]
    submitters = {}  # type: Dict[str, Dict[str, Any]]
    for name, entry in entries:
        merged = _merged(name, entry, templates, problems)
        # Skipped for its template, which may be the cacher's (unseen here), or fatal (the
        # harvester keeps its old configuration): its logs stay where its own section says.
        submitters[name] = _submitter(merged if merged is not None else entry)
        if merged is None:
            continue
        if _has_mandatory_sections(name, merged, problems):
            queue = _effective(name, entry.get("templateQueueName"), merged, problems)
            if queue is not None:
                queues[name] = queue
    return QueueConfigSet(queues, tuple(sorted(templates)), tuple(problems), submitters)


def _submitter(merged: Dict[str, Any]) -> Dict[str, Any]:
    """The queue's submitter section as its plugin gets it: one naming its `module` and
    `name` also gets each key of the `common` section it lacks, as harvester fills every
    plugin section (its `middleware` override is not applied)."""
    submitter = merged.get("submitter")
    if not isinstance(submitter, dict):
        return {}
    submitter = copy.deepcopy(submitter)
    common = merged.get("common")
    if "module" in submitter and "name" in submitter and isinstance(common, dict):
        for key, value in common.items():
            if key not in submitter and key not in ("module", "name"):
                submitter[key] = copy.deepcopy(value)
    return submitter


def _merged(name: str, entry: Dict[str, Any], templates: Dict[str, Dict[str, Any]],
            problems: List[QueueProblem]) -> Optional[Dict[str, Any]]:
    """The queue over its template; None (and the problem) when the harvester skips it."""
    template = entry.get("templateQueueName")
    if isinstance(template, (list, dict)):
        problems.append(QueueProblem(
            name, f"templateQueueName {shown(template)} is not a name: {_FATAL}", True))
        return None
    if template is not None and template not in templates:
        problems.append(QueueProblem(
            name, f"templateQueueName {shown(template)} names no template: "
                  "harvester skips this queue", False))
        return None
    merged = copy.deepcopy(templates[template]) if template is not None else {}
    for key, value in entry.items():
        value = copy.deepcopy(value)
        if key in PLUGIN_SECTIONS and isinstance(merged.get(key), dict) \
                and isinstance(value, dict):
            merged[key].update(value)  # the queue's plugin keys over the template's
        else:
            merged[key] = value
    merged.pop("isTemplateQueue", None)
    return merged


def _has_mandatory_sections(name: str, merged: Dict[str, Any],
                            problems: List[QueueProblem]) -> bool:
    missing = [section for section in MANDATORY_SECTIONS if section not in merged]
    if missing:
        problems.append(QueueProblem(
            name, f"no {', '.join(missing)} section (harvester requires "
                  f"{', '.join(MANDATORY_SECTIONS)}): harvester omits this queue", False))
    return not missing


def _effective(name: str, template: Optional[str], merged: Dict[str, Any],
               problems: List[QueueProblem]) -> Optional[EffectiveQueue]:
    status = merged.get("queueStatus")
    if status is None:
        status = "online"
    elif not isinstance(status, str):
        problems.append(QueueProblem(
            name, f"queueStatus {shown(status)} is not text: {_FATAL}", True))
        return None
    notes = []  # type: List[str]
    map_type = merged.get("mapType", "OneToOne")
    if map_type not in MAP_TYPES:
        notes.append(f"mapType {shown(map_type)} is not one of {', '.join(MAP_TYPES)}: "
                     "harvester treats the queue as push (not NoJob)")
        map_type = map_type if isinstance(map_type, str) else shown(map_type)
    run_mode = merged.get("runMode", "self")
    limits = sanitise_limits(merged, map_type == "NoJob", map_type)
    notes.extend(limits.notes)
    new_workers = merged.get("nNewWorkers", 0)
    if isinstance(new_workers, bool) or not isinstance(new_workers, int):
        notes.append(f"nNewWorkers {shown(new_workers)} is not an integer: not shown")
        new_workers = None
    return EffectiveQueue(
        name, template, status.lower(), map_type,
        run_mode if isinstance(run_mode, str) else shown(run_mode), limits, new_workers,
        tuple(notes), merged)
