"""Which state directory a report key uses by default, on a home that several hosts share.

The original design runs one copy of the reporter on harvester hosts whose home directory is
shared (pandaharvester01, pandaharvester02, ...): `~/.swf-harvester-reporter/` belonged to
pandaharvester01 and `~/.swf-harvester-reporter-<key>/` to every other key. A state holds log
positions, cached reasons, admission evidence and a delivery buffer that are one host's
alone, so two hosts must never use the same directory, whatever order they start in.

The unsuffixed directory therefore carries an owner mark (`owner`, the key that claimed it,
created with O_EXCL so that of two hosts claiming at once exactly one wins). Without a mark
(a directory from a reporter before the mark, or none yet) it is claimed by:

- the key whose own logs its log positions name (a host that already has its state there
  keeps it; positions that name other files belong to another host and are never taken);
- otherwise, when it holds no position that could tell (new, or never read a log), the key
  the original design gave it, `pandaharvester01`.

Every other key uses its suffixed directory. `--state DIR` bypasses all of this.

Python 3.6 compatible, standard library only (see the package docstring).
"""

import errno
import json
import os
import tempfile
from typing import Any, Dict, Optional

from clusterwatch.reporter.log_generations import (
    FINGERPRINT_BYTES,
    READ_ERRORS,
    generations,
    head_matches,
    open_any,
)
from clusterwatch.reporter.log_position import LogPosition
from clusterwatch.reporter.regular_read import open_regular

SHARED_NAME = ".swf-harvester-reporter"
ORIGINAL_KEY = "pandaharvester01"  # the key the original design gave the unsuffixed directory
OWNER_FILE = "owner"
MAX_OWNER_BYTES = 4096
MAX_STATE_BYTES = 64 * 1024 * 1024

MINE, OTHERS, UNKNOWN = "mine", "others", "unknown"


def suffixed(home: str, key: str) -> str:
    return os.path.join(home, "{}-{}".format(SHARED_NAME, key))


def choose(home: str, key: str, log_dir: str, claim: bool = True) -> str:
    """The state directory `key` uses under `home`. With `claim`, an unmarked unsuffixed
    directory this key may take is marked as its own first (a `--print` run claims
    nothing: it stores nothing)."""
    shared = os.path.join(home, SHARED_NAME)
    owner = read_owner(shared)
    if owner is not None:
        return shared if owner == key else suffixed(home, key)
    if not _may_take(shared, key, log_dir):
        return suffixed(home, key)
    if not claim:
        return shared
    return shared if _claim(shared, key) else suffixed(home, key)


def read_owner(shared: str) -> Optional[str]:
    """The key the owner mark names; None when there is no mark. A mark that cannot be
    read or names no key is someone's all the same: OSError, so no run takes it."""
    path = os.path.join(shared, OWNER_FILE)
    try:
        with open_regular(path) as handle:
            raw = handle.read(MAX_OWNER_BYTES)
    except FileNotFoundError:
        if os.path.lexists(path):
            # A link to nothing in the mark's place: the link defeats every claim (os.link
            # finds it there), so taken for "no mark" it would send the owner, unwarned,
            # to a fresh suffixed directory that reads its logs again.
            raise OSError(errno.ENOENT, "owner mark is a link to nothing", path) from None
        return None
    try:
        key = json.loads(raw.decode("utf-8")).get("key")
    except (ValueError, AttributeError, RecursionError):  # RecursionError: deep nesting
        key = None
    if not isinstance(key, str) or not key:
        raise OSError(errno.EINVAL, "owner mark names no key", path)
    return key


def _may_take(shared: str, key: str, log_dir: str) -> bool:
    whose = positions_owner(_state_logs(shared), log_dir)
    if whose == MINE:
        return True
    return whose == UNKNOWN and key == ORIGINAL_KEY


def _state_logs(shared: str) -> Dict[str, Any]:
    try:
        with open_regular(os.path.join(shared, "state.json")) as handle:
            state = json.loads(handle.read(MAX_STATE_BYTES).decode("utf-8", "replace"))
    except (OSError, ValueError, RecursionError):  # RecursionError: deep nesting
        return {}  # no state, or a damaged one: its positions cannot tell whose it is
    logs = state.get("logs") if isinstance(state, dict) else None
    return logs if isinstance(logs, dict) else {}


def positions_owner(logs: Dict[str, Any], log_dir: str) -> str:
    """MINE when a saved position names a log of `log_dir` (the live file or one of its
    rotated generations starts with the bytes it fingerprinted), OTHERS when positions that
    could tell name none of them, UNKNOWN when none could tell."""
    judged = False
    for name in sorted(logs):
        if os.path.basename(name) != name:
            continue
        position = LogPosition.from_json(logs[name])
        mark = position.file if position is not None else None
        # A head shorter than a full fingerprint ("2026-10-02 18:2") is shared by every
        # log of the day on every host: it tells nothing.
        if mark is None or mark.fp_len < FINGERPRINT_BYTES:
            continue
        judged = True
        path = os.path.join(log_dir, name)
        for candidate in [path] + [found.path for found in generations(path)]:
            try:
                with open_any(candidate) as handle:
                    if head_matches(handle, mark):
                        return MINE
            except READ_ERRORS:
                continue
    return OTHERS if judged else UNKNOWN


def _claim(shared: str, key: str) -> bool:
    """Mark `shared` as `key`'s; False when another key's mark got there first. The mark is
    written whole beside it and hard-linked into place: the link fails when a mark exists,
    and a mark that exists is always complete."""
    os.makedirs(shared, mode=0o700, exist_ok=True)
    os.chmod(shared, 0o700)
    fd, temp = tempfile.mkstemp(prefix="." + OWNER_FILE + ".", suffix=".tmp", dir=shared)
    try:
        with os.fdopen(fd, "w") as handle:
            json.dump({"key": key}, handle)
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(temp, os.path.join(shared, OWNER_FILE))
        except FileExistsError:
            return read_owner(shared) == key
        return True
    finally:
        os.unlink(temp)
