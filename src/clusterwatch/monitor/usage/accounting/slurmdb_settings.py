"""The slurmdb accounting source's settings, from the environment.

CLUSTERWATCH_SLURMDB_URL            mysql://USER@HOST[:PORT]/SCHEMA: the read-only user and
                                    the schema holding the view (create_slurmdb_view prints it)
CLUSTERWATCH_SLURMDB_PASSWORD_FILE  the user's password, alone in a mode-600 file; else the
                                    systemd credential `slurmdb-password`
CLUSTERWATCH_SLURMDB_TIMEOUT_S      connect and read timeout in seconds (default 10)

Every problem is an AccountingConfigError (exit 78), the kernel's SettingError
(clusterwatch.monitor.core.secrets) turned into the accounting sources' own error, whose
message never quotes the URL (a password someone put there anyway) or the password.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from clusterwatch.monitor.core import prefixed_settings
from clusterwatch.monitor.core.secrets import (
    SettingError,
    read_secret,
    secret_file_in,
    split_database_url,
)
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
        found = split_database_url(url, URL, example=_EXAMPLE,
                                   password_file_setting=PASSWORD_FILE,
                                   required=("user", "host"))
    except SettingError as exc:
        raise AccountingConfigError(str(exc)) from None
    if found.scheme not in ("mysql", "mariadb"):
        raise AccountingConfigError(f"{URL} must start with mysql:// (e.g. {_EXAMPLE})")
    if found.query or found.fragment:
        raise AccountingConfigError(f"{URL} takes no ?options or #fragment")
    try:
        identifier(found.name, f"{URL}'s schema (its path)")
    except ValueError as exc:
        raise AccountingConfigError(str(exc)) from None
    return found.host, found.port or DEFAULT_PORT, found.user, found.name


def _password(environ: Mapping[str, str]) -> str:
    found = secret_file_in(environ, PASSWORD_FILE, credential=CREDENTIAL)
    if found is None:
        raise AccountingConfigError(f"{URL}'s user needs its password: a mode-600 file named by "
                                    f"{PASSWORD_FILE}, or the systemd credential {CREDENTIAL}")
    try:
        return read_secret(found)
    except SettingError as exc:
        raise AccountingConfigError(str(exc)) from None


def _timeout(environ: Mapping[str, str]) -> float:
    try:
        return prefixed_settings.seconds(environ, TIMEOUT, DEFAULT_TIMEOUT_S, most=300)
    except SettingError as exc:
        raise AccountingConfigError(str(exc)) from None
