"""The thresholds of the warning rules: typed, with defaults from the field reference
(docs/usage.md names the source of each), loadable from the `[thresholds]` table of a TOML file.

Every ratio is a fraction from 0 to 1, and a value above 1 is refused: the original compared
a percentage with a fraction in its memory rule, and a threshold written as 80 for 80 %
would repeat that fault silently.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

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

_FRACTIONS = frozenset({"cpu_efficiency_min", "core_balance_min", "burst_ratio_min",
                        "memory_efficiency_min", "gpu_utilization_min"})
_TABLE = "thresholds"


def load_thresholds(path: Optional[Path]) -> Thresholds:
    """The defaults with the file's `[thresholds]` values; no path: the defaults.

    ConfigError (one line naming the file and key) for a file that is missing or unreadable,
    an unknown key, a value of the wrong type, a negative value, or a fraction above 1.
    """
    if path is None:
        return DEFAULTS
    document = read_toml(path)
    if document is None:
        raise ConfigError(f"{path} does not exist")
    unknown = sorted(set(document) - {_TABLE})
    if unknown:
        raise ConfigError(f"{path}: unknown table or key {unknown[0]!r}")
    table = document.get(_TABLE, {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: {_TABLE} must be a table")
    fields = {f.name: f for f in dataclasses.fields(Thresholds)}
    values: dict[str, Any] = {}
    for key, value in table.items():
        if key not in fields:
            raise ConfigError(f"{path}: unknown key {_TABLE}.{key}")
        values[key] = _checked(path, key, value, fields[key].type)
    return Thresholds(**values)


def _checked(path: Path, key: str, value: object, kind: object) -> float:
    name = f"{path}: {_TABLE}.{key}"
    wants_int = kind in (int, "int")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (
            wants_int and not isinstance(value, int)):
        raise ConfigError(f"{name} must be {'an integer' if wants_int else 'a number'}")
    if value < 0 or value != value:  # NaN compares unequal to itself
        raise ConfigError(f"{name} must not be negative")
    if key in _FRACTIONS and value > 1:
        raise ConfigError(f"{name} is a fraction from 0 to 1 (write 0.8 for 80 %, not 80)")
    if key == "min_samples" and value < 1:
        raise ConfigError(f"{name} must be at least 1")
    return value
