"""Who coordinates which Slurm account: the people who see its monthly report page and get
its monthly email (docs/usage.md, "Monthly account reports and peer ranks").

CLUSTERWATCH_USAGE_COORDINATORS names a TOML file of `account = ["user", ...]` lines:

    atlas = ["alice", "bob"]
    "lhcb-prod" = ["carol"]

A user name is the monitor's, compared exactly as everywhere (docs/usage.md, "Access"). The
file is read again when it changes (its size, time or inode), so an edit needs no restart.
Every fault is one ConfigError line naming the file (exit 78 for a command); the pages log
it and grant nothing by it (staff still see every account).
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from clusterwatch.errors import ConfigError
from clusterwatch.monitor.usage.accounting.interface import USER_NAME_PATTERN
from clusterwatch.toml_file import read_toml

VARIABLE = "CLUSTERWATCH_USAGE_COORDINATORS"
ACCOUNT_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
USER_RE = USER_NAME_PATTERN  # the API's user names

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Coordinators:
    by_account: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def of(self, account: str) -> tuple[str, ...]:
        return self.by_account.get(account, ())

    def accounts_of(self, user: str) -> frozenset[str]:
        return frozenset(account for account, users in self.by_account.items()
                         if user in users)


NONE = Coordinators()


def parse_coordinators(path: Path, document: Mapping[str, object]) -> Coordinators:
    """The file's mapping; ConfigError (one line) for anything but account = [user, ...]."""
    found: dict[str, tuple[str, ...]] = {}
    for account, users in document.items():
        if not ACCOUNT_RE.fullmatch(account):
            raise ConfigError(f"{path}: {account[:40]!r} is not an account name (letters, "
                              "digits, '.', '_', '-', at most 64)")
        if not isinstance(users, list) or not all(isinstance(u, str) for u in users):
            raise ConfigError(f"{path}: {account} must be a list of user names, like "
                              f'{account} = ["alice", "bob"]')
        for user in users:
            if not USER_RE.fullmatch(user):
                raise ConfigError(f"{path}: {account}: {user[:40]!r} is not a user name")
        found[account] = tuple(dict.fromkeys(users))
    return Coordinators(found)


def configured_path(environ: Optional[Mapping[str, str]] = None) -> Optional[Path]:
    text = (os.environ if environ is None else environ).get(VARIABLE, "").strip()
    return Path(text) if text else None


def coordinators(environ: Optional[Mapping[str, str]] = None) -> Coordinators:
    """The configured mapping (none without the variable); ConfigError for a bad file."""
    path = configured_path(environ)
    if path is None:
        return NONE
    try:
        stat = path.stat()
    except OSError as exc:
        raise ConfigError(f"{VARIABLE}: cannot read {path}: "
                          f"{exc.strerror or type(exc).__name__}") from None
    stamp = (str(path), stat.st_ino, stat.st_size, stat.st_mtime_ns)
    with _lock:
        cached = _cache.get("file")
        if cached is not None and cached[0] == stamp:
            return cached[1]
    document = read_toml(path)
    if document is None:
        raise ConfigError(f"{VARIABLE}: {path} does not exist")
    found = parse_coordinators(path, document)
    with _lock:
        _cache["file"] = (stamp, found)
    return found


def coordinators_or_none() -> Coordinators:
    """For the pages: a broken file is logged and grants nothing (fails closed)."""
    try:
        return coordinators()
    except ConfigError as exc:
        log.error("usage reports: the account coordinators are not read: %s", exc)
        return NONE


_lock = threading.Lock()
_cache: dict[str, tuple[tuple[str, int, int, int], Coordinators]] = {}
