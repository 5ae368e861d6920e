"""The slurmdb accounting source's settings, from the environment.

CLUSTERWATCH_SLURMDB_URL            mysql://USER@HOST[:PORT]/SCHEMA: the read-only user and
                                    the schema holding the view (create_slurmdb_view prints it)
CLUSTERWATCH_SLURMDB_PASSWORD_FILE  the user's password, alone in a mode-600 file; else the
                                    systemd credential `slurmdb-password`
CLUSTERWATCH_SLURMDB_TIMEOUT_S      connect and read timeout in seconds (default 10)

Every problem is an AccountingConfigError (exit 78) whose message never quotes the URL (a
password someone put there anyway) or the password.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional
from urllib.parse import unquote, urlsplit

from clusterwatch.monitor.core import prefixed_settings
from clusterwatch.monitor.core.database_url import DatabaseUrlError, read_password_file
from clusterwatch.monitor.usage.accounting.interface import AccountingConfigError
from clusterwatch.monitor.usage.accounting.slurmdb_sql_view import identifier

URL = "CLUSTERWATCH_SLURMDB_URL"
PASSWORD_FILE = "CLUSTERWATCH_SLURMDB_PASSWORD_FILE"  # noqa: S105 (a variable name)
TIMEOUT = "CLUSTERWATCH_SLURMDB_TIMEOUT_S"
CREDENTIAL = "slurmdb-password"
DEFAULT_PORT = 3306
DEFAULT_TIMEOUT_S = 10.0
_EXAMPLE = "mysql://clusterwatch_usage@dbhost:3306/clusterwatch_usage"


@dataclass(frozen=True)
class SlurmDbSettings:
    host: str
    port: int
    user: str
    schema: str
    password: str = field(repr=False)  # a repr reaches tracebacks and test reports
    timeout_s: float


def read_settings(environ: Mapping[str, str]) -> SlurmDbSettings:
    host, port, user, schema = parse_url(environ.get(URL, "").strip())
    return SlurmDbSettings(host=host, port=port, user=user, schema=schema,
                           password=_password(environ), timeout_s=_timeout(environ))


def parse_url(url: str) -> tuple[str, int, str, str]:
    """(host, port, user, schema) of a mysql:// URL; AccountingConfigError otherwise."""
    if not url:
        raise AccountingConfigError(f"CLUSTERWATCH_ACCOUNTING=slurmdb needs {URL}, e.g. "
                                    f"{_EXAMPLE}")
    try:
        parts = urlsplit(url)
        port = parts.port or DEFAULT_PORT
    except ValueError:
        raise AccountingConfigError(f"{URL} is not a valid URL (e.g. {_EXAMPLE})") from None
    if parts.scheme not in ("mysql", "mariadb"):
        raise AccountingConfigError(f"{URL} must start with mysql:// (e.g. {_EXAMPLE})")
    if parts.password is not None:
        raise AccountingConfigError(f"{URL} must not hold the password: put it in a mode-600 "
                                    f"file named by {PASSWORD_FILE}")
    if not parts.username or not parts.hostname:
        raise AccountingConfigError(f"{URL} names the user and the host: {_EXAMPLE}")
    if parts.query or parts.fragment:
        raise AccountingConfigError(f"{URL} takes no ?options or #fragment")
    schema = unquote(parts.path.lstrip("/"))
    try:
        identifier(schema, f"{URL}'s schema (its path)")
    except ValueError as exc:
        raise AccountingConfigError(str(exc)) from None
    return parts.hostname, port, unquote(parts.username), schema


def _password(environ: Mapping[str, str]) -> str:
    path: Optional[str] = environ.get(PASSWORD_FILE, "").strip() or None
    credentials = environ.get("CREDENTIALS_DIRECTORY", "").strip()
    if path is None and credentials and (Path(credentials) / CREDENTIAL).is_file():
        path = os.path.join(credentials, CREDENTIAL)
    if path is None:
        raise AccountingConfigError(f"{URL}'s user needs its password: a mode-600 file named by "
                                    f"{PASSWORD_FILE}, or the systemd credential {CREDENTIAL}")
    if not os.path.exists(path):
        # Not named: a password put where its file's path belongs would be shown.
        raise AccountingConfigError(f"{PASSWORD_FILE}: no such file (it names a mode-600 file "
                                    "holding the password, never the password itself)")
    try:
        return read_password_file(path, setting=PASSWORD_FILE)
    except DatabaseUrlError as exc:
        raise AccountingConfigError(str(exc)) from None


def _timeout(environ: Mapping[str, str]) -> float:
    try:
        return prefixed_settings.seconds(environ, TIMEOUT, DEFAULT_TIMEOUT_S, most=300)
    except ValueError as exc:
        raise AccountingConfigError(str(exc)) from None
