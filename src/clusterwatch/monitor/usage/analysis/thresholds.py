"""The thresholds of the warning rules: typed, with defaults from the field reference
(docs/usage.md names the source of each), loadable from the `[thresholds]` table of a TOML file;
those of the alerts while a job runs (usage_watch) from its `[running]` table.

Every ratio is a fraction from 0 to 1, and a value above 1 is refused: the original compared
a percentage with a fraction in its memory rule, and a threshold written as 80 for 80 %
would repeat that fault silently.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, TypeVar

from clusterwatch.errors import ConfigError
from clusterwatch.toml_file import read_toml

GiB = 1024**3
MiB = 1024**2


@dataclass(frozen=True)
class Thresholds:
    min_samples: int = 10  # fewer scrapes: accounting figures only, no advice (jobstats)
    cpu_efficiency_min: float = 0.80  # petricore "< 80 %", jobstats CPU_UTIL_BLACK
    core_balance_min: float = 0.90  # a core below 0.9 x the mean core (petricore)
    burst_ratio_min: float = 0.75  # mean / peak cores in use (petricore)
    memory_efficiency_min: float = 0.50  # TrailblazingTurtle's warning band
    memory_unused_min_bytes: int = 2 * GiB  # ours: a small job's default request is no waste
    threads_per_cpu_max: float = 2.0  # a process with > 2 x the CPUs in threads (petricore)
    many_files_min: int = 1000  # open files (petricore)
    bytes_per_file_min: int = 5 * MiB  # I/O per open file (petricore "5 MB")
    scratch_io_min_bytes: int = 1 * GiB  # ours: petricore warned for every job
    gpu_utilization_min: float = 0.15  # jobstats GPU_UTIL_RED (15 %)


DEFAULTS = Thresholds()


@dataclass(frozen=True)
class RunningThresholds:
    """usage_watch's rules (analysis/running_rules.py), read over the last `idle_for_s`."""

    idle_for_s: int = 3600  # a job is judged after this long, over this window (the issue)
    gpu_idle_utilization_max: float = 0.0  # a GPU never busier than this in the window: idle
    cpu_efficiency_min: float = 0.25  # ours: under a quarter of its CPUs busy for the window
    cpu_min_cpus: int = 4  # "several cores": fewer is a small waste, not worth an email
    memory_near_limit: float = 0.90  # ours: 90 % of the cgroup's limit on a node


RUNNING_DEFAULTS = RunningThresholds()

_FRACTIONS = frozenset({"cpu_efficiency_min", "core_balance_min", "burst_ratio_min",
                        "memory_efficiency_min", "gpu_utilization_min",
                        "gpu_idle_utilization_max", "memory_near_limit"})
_AT_LEAST_ONE = frozenset({"min_samples", "idle_for_s", "cpu_min_cpus"})
# usage_watch's window is a PromQL range: over about 292 years Prometheus refuses it ("duration
# out of range") at every run; past a month it reaches beyond any usual retention.
_AT_MOST = {"idle_for_s": 30 * 24 * 3600}
_TABLE = "thresholds"
_RUNNING = "running"


def load_thresholds(path: Optional[Path]) -> Thresholds:
    """The defaults with the file's `[thresholds]` values; no path: the defaults.

    ConfigError (one line naming the file and key) for a file that is missing or unreadable,
    an unknown key, a value of the wrong type, a negative value, or a fraction above 1.
    """
    if path is None:
        return DEFAULTS
    document = _document(path)
    _read_table(path, document, _RUNNING, RunningThresholds)  # a bad value fails everywhere
    return _read_table(path, document, _TABLE, Thresholds)


def load_running_thresholds(path: Optional[Path]) -> RunningThresholds:
    """The defaults with the file's `[running]` values (the same file, the same checks)."""
    if path is None:
        return RUNNING_DEFAULTS
    document = _document(path)
    _read_table(path, document, _TABLE, Thresholds)
    return _read_table(path, document, _RUNNING, RunningThresholds)


def _document(path: Path) -> dict[str, Any]:
    document = read_toml(path)
    if document is None:
        raise ConfigError(f"{path} does not exist")
    unknown = sorted(set(document) - {_TABLE, _RUNNING})
    if unknown:
        raise ConfigError(f"{path}: unknown table or key {unknown[0]!r}")
    return document


_Kind = TypeVar("_Kind", Thresholds, RunningThresholds)


def _read_table(path: Path, document: dict[str, Any], name: str, kind: type[_Kind]) -> _Kind:
    table = document.get(name, {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: {name} must be a table")
    fields = {f.name: f for f in dataclasses.fields(kind)}
    values: dict[str, Any] = {}
    for key, value in table.items():
        if key not in fields:
            raise ConfigError(f"{path}: unknown key {name}.{key}")
        values[key] = _checked(path, f"{name}.{key}", key, value, fields[key].type)
    return kind(**values)


def _checked(path: Path, where: str, key: str, value: object, kind: object) -> float:
    name = f"{path}: {where}"
    wants_int = kind in (int, "int")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (
            wants_int and not isinstance(value, int)):
        raise ConfigError(f"{name} must be {'an integer' if wants_int else 'a number'}")
    if value < 0 or value != value:  # NaN compares unequal to itself
        raise ConfigError(f"{name} must not be negative")
    if key in _FRACTIONS and value > 1:
        raise ConfigError(f"{name} is a fraction from 0 to 1 (write 0.8 for 80 %, not 80)")
    if key in _AT_LEAST_ONE and value < 1:
        raise ConfigError(f"{name} must be at least 1")
    if key in _AT_MOST and value > _AT_MOST[key]:
        raise ConfigError(f"{name} must be at most {_AT_MOST[key]}")
    return value
