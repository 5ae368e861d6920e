"""`CLUSTERWATCH_DATABASE_URL` to Django's DATABASES entry.

Two forms: `sqlite:///absolute/path.sqlite3` and
`postgresql://user@host:port/name?sslmode=require` (also `postgres://`). The password may be
in the URL, but better in a mode-600 file named by `CLUSTERWATCH_DATABASE_PASSWORD_FILE`, so
it is not in the environment of every process. Error messages never repeat the password.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any, Optional
from urllib.parse import parse_qsl, quote, unquote, urlsplit


class DatabaseUrlError(ValueError):
    pass


def parse(url: str, password_file: Optional[str] = None) -> dict[str, Any]:
    try:
        parts = urlsplit(url.strip())
    except ValueError:  # e.g. an unclosed [ in the host; the URL may hold a password
        raise DatabaseUrlError("CLUSTERWATCH_DATABASE_URL is not a valid URL") from None
    scheme = parts.scheme.lower()
    if scheme == "sqlite":
        path = unquote(parts.path)
        if parts.netloc or not path.startswith("/") or path.endswith("/"):
            raise DatabaseUrlError(
                "CLUSTERWATCH_DATABASE_URL: a SQLite URL is sqlite:///absolute/path.sqlite3")
        return sqlite(Path(path))
    if scheme in ("postgres", "postgresql"):
        name = unquote(parts.path.lstrip("/"))
        if not name:
            raise DatabaseUrlError(
                "CLUSTERWATCH_DATABASE_URL: a PostgreSQL URL names the database: "
                "postgresql://user@host:5432/clusterwatch")
        try:
            port = parts.port
        except ValueError:
            raise DatabaseUrlError("CLUSTERWATCH_DATABASE_URL: the port is not a number") from None
        password = unquote(parts.password) if parts.password else ""
        if password_file:
            password = read_password_file(password_file)
        options = dict(parse_qsl(parts.query))
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": name,
            "USER": unquote(parts.username or ""),
            "PASSWORD": password,
            "HOST": unquote(parts.hostname or ""),  # empty: the local Unix socket
            "PORT": str(port or ""),
            "OPTIONS": options,
            "CONN_MAX_AGE": 60,
            "CONN_HEALTH_CHECKS": True,
        }
    raise DatabaseUrlError(
        f"CLUSTERWATCH_DATABASE_URL: unsupported scheme {scheme!r} (use sqlite or postgresql)")


def _is_credential(path: str) -> bool:
    directory = os.environ.get("CREDENTIALS_DIRECTORY", "")
    return bool(directory) and os.path.dirname(os.path.realpath(path)) == os.path.realpath(
        directory)


def sqlite(path: Path) -> dict[str, Any]:
    """The entry for a SQLite file (the default, without any URL to parse)."""
    return {"ENGINE": "django.db.backends.sqlite3", "NAME": str(path),
            "OPTIONS": {"timeout": 20}}


def sqlite_url(path: Path) -> str:
    """`sqlite:///...` for an absolute `path`, quoted so that `#`, `?` or `%` survive."""
    return "sqlite://" + quote(str(path))


def read_password_file(path: str, setting: str = "CLUSTERWATCH_DATABASE_PASSWORD_FILE") -> str:
    """The password alone on the file's one line; the file must be private (mode 600).
    `setting` is the variable that named the file, for the messages (LDAP's uses it too).

    A systemd credential (a file in $CREDENTIALS_DIRECTORY, e.g. LoadCredential=) is private
    to the unit by construction, and systemd may grant its user access through an ACL that
    shows as group bits; its mode is not checked.
    """
    try:
        mode = os.stat(path).st_mode
        if mode & (stat.S_IRWXG | stat.S_IRWXO) and not _is_credential(path):
            raise DatabaseUrlError(
                f"{setting} {path} is readable by others "
                f"(mode {stat.S_IMODE(mode):o}); chmod 600 it")
        password = Path(path).read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise DatabaseUrlError(
            f"{setting}: cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise DatabaseUrlError(
            f"{setting}: {path} is not UTF-8 text") from None
    if not password:
        raise DatabaseUrlError(f"{setting}: {path} is empty")
    if "\n" in password:
        raise DatabaseUrlError(
            f"{setting}: {path} holds more than one line")
    return password
