"""The two inventories of expected targets, in the seed-compatible one-name-a-line format."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from pathlib import Path

from clusterwatch.atomic_write import write_atomically
from clusterwatch.errors import ConfigError

log = logging.getLogger(__name__)

NODES_FILE = "expected_nodes"  # exact HTCondor Machine names
GPUS_FILE = "gpu_instances"  # exact Prometheus instance labels, port included

NODE_PREFIX = "node:"
GPU_PREFIX = "gpu:"


def read_inventory(path: Path) -> list[str]:
    """Entries in file order, de-duplicated; blank lines and `#` lines are ignored.

    The file must exist: an empty file disables that check, a missing one is a mistake.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(
            f"inventory {path} does not exist (create it; an empty file disables the check)"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read inventory {path}: {exc}") from None
    entries: dict[str, None] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        entry = line.strip()
        if not entry or entry.startswith("#"):
            continue
        if len(entry.split()) != 1:  # split() breaks at exactly what isspace() matches
            raise ConfigError(f"{path}:{number}: one name a line, without spaces: {entry!r}")
        if entry in entries:
            log.warning("%s:%d: %s is listed twice", path, number, entry)
        entries[entry] = None
    return list(entries)


def add_entries(path: Path, names: Iterable[str], now: float) -> list[str]:
    """Append the names not yet listed (never removes any); return those added."""
    known = set(read_inventory(path))
    new = sorted({name for name in names if name and name not in known})
    if not new:
        return []
    text = path.read_text(encoding="utf-8")
    if text and not text.endswith("\n"):
        text += "\n"
    stamp = time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(now))
    text += f"# added by clusterwatch watch discover at {stamp}\n"
    text += "".join(f"{name}\n" for name in new)
    try:
        mode = path.stat().st_mode & 0o777
        write_atomically(path, text.encode("utf-8"), mode=mode)
    except OSError as exc:
        raise ConfigError(f"cannot update inventory {path}: {exc.strerror}") from None
    return new
