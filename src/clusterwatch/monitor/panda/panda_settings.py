"""The PanDA server's database as the monitor reads it: `CLUSTERWATCH_PANDA_DATABASE_URL`,
its password and `CLUSTERWATCH_PANDA_SCHEMA`, checked before any connection.

The URL is `postgresql://user@host:port/dbname` (only `sslmode` and `sslrootcert` may follow
as a query). The password never comes from the URL, which would put it in the environment
of every process: it is in a mode-600 file named by
`CLUSTERWATCH_PANDA_DATABASE_PASSWORD_FILE`, or the systemd credential `panda-db-password`
(`LoadCredential=`), read as the monitor's own database password is. Without either the
connection goes without one (a `.pgpass` file or certificate authentication).

PostgreSQL only: the ePIC PanDA server runs on PostgreSQL; Oracle (ATLAS's) is out of scope.
Every problem is a SettingError (a ConfigError, clusterwatch.monitor.core.secrets) in one
line that never quotes a password.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Optional
from urllib.parse import parse_qsl

from clusterwatch.monitor.core.secrets import (
    SettingError,
    read_secret,
    secret_file_in,
    split_database_url,
)

URL_SETTING = "CLUSTERWATCH_PANDA_DATABASE_URL"
PASSWORD_SETTING = "CLUSTERWATCH_PANDA_DATABASE_PASSWORD_FILE"  # noqa: S105 (a name)
SCHEMA_SETTING = "CLUSTERWATCH_PANDA_SCHEMA"
CREDENTIAL = "panda-db-password"  # the credential's name, no secret
DEFAULT_SCHEMA = "doma_panda"
QUERY_OPTIONS = ("sslmode", "sslrootcert")
SSL_MODES = ("disable", "allow", "prefer", "require", "verify-ca", "verify-full")  # libpq's
# An unquoted SQL identifier; PostgreSQL folds it to lower case, as the DDL's DOMA_PANDA is.
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
_EXAMPLE = "postgresql://user@host:5432/dbname"


@dataclass(frozen=True)
class PandaDatabase:
    """Where and as whom to connect; `repr` leaves the password out."""

    host: str
    port: int
    dbname: str
    user: str
    schema: str
    password: Optional[str] = field(default=None, repr=False)
    options: Mapping[str, str] = field(default_factory=dict)


def panda_database(environ: Mapping[str, str]) -> Optional[PandaDatabase]:
    """The settings in `environ`, or None when the URL is not set (the PanDA view is off)."""
    url = environ.get(URL_SETTING, "").strip()
    if not url:
        return None
    host, port, dbname, user, options = _parse_url(url)
    return PandaDatabase(host=host, port=port, dbname=dbname, user=user,
                         schema=schema_name(environ.get(SCHEMA_SETTING, "")),
                         password=_password(environ), options=options)


def schema_name(value: str) -> str:
    """The schema, lower case as PostgreSQL folds an unquoted name; default doma_panda."""
    value = value.strip() or DEFAULT_SCHEMA
    if not _IDENTIFIER.fullmatch(value):
        raise SettingError(f"{SCHEMA_SETTING} must be a plain SQL name (letters, digits, _), "
                           f"not {value[:80]!r}")
    return value.lower()


def _parse_url(url: str) -> tuple[str, int, str, str, dict[str, str]]:
    found = split_database_url(url, URL_SETTING, example=_EXAMPLE,
                               password_file_setting=PASSWORD_SETTING,
                               required=("user", "host", "database"))
    if found.scheme not in ("postgresql", "postgres"):
        raise SettingError(f"{URL_SETTING}: only PostgreSQL is supported ({_EXAMPLE}); "
                           "an Oracle PanDA database is out of scope")
    if "/" in found.name or found.fragment:
        raise SettingError(f"{URL_SETTING} must name the user, host and database: {_EXAMPLE}")
    options = dict(parse_qsl(found.query, keep_blank_values=True))
    unknown = sorted(set(options) - set(QUERY_OPTIONS))
    if unknown:
        raise SettingError(f"{URL_SETTING}: unsupported option {unknown[0][:40]!r} "
                           f"(only {', '.join(QUERY_OPTIONS)})")
    if "sslmode" in options and options["sslmode"] not in SSL_MODES:
        # libpq refuses it only when connecting: every table would fail, not the setting.
        raise SettingError(f"{URL_SETTING}: sslmode must be one of {', '.join(SSL_MODES)}")
    return found.host, found.port or 5432, found.name, found.user, options


def _password(environ: Mapping[str, str]) -> Optional[str]:
    """The password file, else the credential, else None: no password (.pgpass, a
    certificate)."""
    found = secret_file_in(environ, PASSWORD_SETTING, credential=CREDENTIAL)
    return read_secret(found) if found is not None else None
