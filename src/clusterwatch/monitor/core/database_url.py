"""`CLUSTERWATCH_DATABASE_URL` to Django's DATABASES entry.

Two forms: `sqlite:///absolute/path.sqlite3` and
`postgresql://user@host:port/name?sslmode=require` (also `postgres://`). The password may be
in the URL, but better in a mode-600 file named by `CLUSTERWATCH_DATABASE_PASSWORD_FILE` or
the systemd credential `db-password`, so it is not in the environment of every process.
Every refusal is a SettingError (core.secrets) that never repeats the password.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Optional, Union
from urllib.parse import parse_qsl, quote, unquote, urlsplit

from clusterwatch.monitor.core.secrets import (
    SecretFile,
    SettingError,
    read_secret,
    read_secret_file,
    secret_file_in,
    split_database_url,
)

SETTING = "CLUSTERWATCH_DATABASE_URL"
PASSWORD_SETTING = "CLUSTERWATCH_DATABASE_PASSWORD_FILE"  # noqa: S105 (a variable name)
CREDENTIAL = "db-password"  # the systemd credential read when no file is named
_EXAMPLE = "postgresql://user@host:5432/clusterwatch"
# Seconds a worker keeps its connection between requests (Django's CONN_MAX_AGE), on both
# databases. SQLite too: a new connection per request ran three PRAGMAs, and the last one to
# close folded the WAL back into the database, 17-18 -> 11-13 ms of CPU per 200 KB post
# (benchmarks/README.md, issue 23). So the newest writes stay in the `-wal` file between
# checkpoints: a backup is SQLite's online copy, never a copy of the file (docs/monitor.md
# "Backup and space"). A request that leaves a transaction open does not keep its
# connection (sqlite_tuning), and the age bounds what a kept one could hold.
KEPT_S = 60


def parse(url: str, password_file: Union[SecretFile, str, None] = None) -> dict[str, Any]:
    """The entry for `url`; the password from `password_file` (a path: named by
    CLUSTERWATCH_DATABASE_PASSWORD_FILE) rather than the URL when given."""
    found = split_database_url(url, SETTING, example=_EXAMPLE, password_file_setting=None)
    if found.scheme == "sqlite":
        parts = urlsplit(url.strip())  # it split above
        path = unquote(parts.path)
        if parts.netloc or not path.startswith("/") or path.endswith("/"):
            raise SettingError(f"{SETTING}: a SQLite URL is sqlite:///absolute/path.sqlite3")
        return sqlite(Path(path))
    if found.scheme in ("postgres", "postgresql"):
        if not found.name:
            raise SettingError(f"{SETTING} must name the database: {_EXAMPLE}")
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": found.name,
            "USER": found.user,
            "PASSWORD": _password(password_file) if password_file else found.password,
            "HOST": found.host,  # empty: the local Unix socket
            "PORT": str(found.port or ""),
            "OPTIONS": dict(parse_qsl(found.query)),
            "CONN_MAX_AGE": KEPT_S,
            "CONN_HEALTH_CHECKS": True,  # a server that went away: reconnect, not a 503
        }
    raise SettingError(
        f"{SETTING}: unsupported scheme {found.scheme!r} (use sqlite or postgresql)")


def _password(password_file: Union[SecretFile, str]) -> str:
    if isinstance(password_file, SecretFile):
        return read_secret(password_file)
    return read_secret_file(password_file, PASSWORD_SETTING)


def password_file(environ: Mapping[str, str]) -> Optional[SecretFile]:
    """CLUSTERWATCH_DATABASE_PASSWORD_FILE, else the systemd credential `db-password`."""
    return secret_file_in(environ, PASSWORD_SETTING, credential=CREDENTIAL)


def sqlite(path: Path) -> dict[str, Any]:
    """The entry for a SQLite file (the default, without any URL to parse). No health
    checks: a file has no server to lose (Django's SQLite connection is always usable)."""
    return {"ENGINE": "django.db.backends.sqlite3", "NAME": str(path),
            "OPTIONS": {"timeout": 20}, "CONN_MAX_AGE": KEPT_S}


def sqlite_url(path: Path) -> str:
    """`sqlite:///...` for an absolute `path`, quoted so that `#`, `?` or `%` survive."""
    return "sqlite://" + quote(str(path))
