"""Secrets and the settings that lead to them: one error type, secret files, systemd
credentials, and database URLs whose password stays out of every message and repr.

A secret comes from a file, never from the environment or the command line, which other
processes can read: a private file (mode 600) named by a setting, else the unit's systemd
credential `$CREDENTIALS_DIRECTORY/<name>` (LoadCredential=). Every refusal is a SettingError
in one line that starts with what named the secret (the variable, the option, or "the
systemd credential NAME") and never holds the secret. A path is named only when something is
there: a secret typed where its file's path belongs names no file, and must not be echoed.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional
from urllib.parse import unquote, urlsplit

from clusterwatch.errors import ConfigError
from clusterwatch.regular_file import NotRegularFile, read_regular

CREDENTIALS_DIRECTORY = "CREDENTIALS_DIRECTORY"  # set by systemd for a unit with credentials


class SettingError(ConfigError, ValueError):
    """A setting that cannot be used: exit 78 for a command. Also a ValueError, the way
    settings.py (read before Django's apps) and its callers have always signalled a bad
    setting. The message starts with the setting's name and holds no secret."""


@dataclass(frozen=True)
class SecretFile:
    """Where a secret is read from, and what to call it in a message."""

    path: str
    setting: str  # the variable or option that named it, or "the systemd credential NAME"
    credentials_dir: str  # $CREDENTIALS_DIRECTORY as the reader saw it ("" when unset)


def secret_file(named: str, setting: str, *, credential: str,
                credentials_dir: str) -> Optional[SecretFile]:
    """The file named by `setting` (its value `named`), else the systemd credential
    `credential` when one is there, else None (the caller decides whether that is allowed)."""
    named, credentials_dir = named.strip(), credentials_dir.strip()
    if named:
        return SecretFile(named, setting, credentials_dir)
    if credentials_dir:
        path = os.path.join(credentials_dir, credential)
        if os.path.lexists(path):  # present but unreadable says so, instead of going without
            return SecretFile(path, f"the systemd credential {credential}", credentials_dir)
    return None


def secret_file_in(environ: Mapping[str, str], setting: str, *,
                   credential: str) -> Optional[SecretFile]:
    """secret_file with the file's variable `setting` and the credentials from `environ`."""
    return secret_file(environ.get(setting, ""), setting, credential=credential,
                       credentials_dir=environ.get(CREDENTIALS_DIRECTORY, ""))


def read_secret(found: SecretFile) -> str:
    return read_secret_file(found.path, found.setting, credentials_dir=found.credentials_dir)


def read_secret_file(path: str, setting: str, *, credentials_dir: Optional[str] = None,
                     if_empty: str = "") -> str:
    """The secret alone on the file's one line (surrounding white space dropped).

    The file must be a regular one (a FIFO would block the reader for good) and private:
    no group or other bits. A systemd credential (a file directly in `credentials_dir`,
    default $CREDENTIALS_DIRECTORY) is private to the unit by construction, and systemd may
    grant its user access through an ACL that shows as group bits; its mode is not checked.
    `if_empty` is appended to the message about an empty file (what to do about it).
    """
    if credentials_dir is None:
        credentials_dir = os.environ.get(CREDENTIALS_DIRECTORY, "")
    try:
        mode = os.stat(path).st_mode
        if (stat.S_ISREG(mode) and mode & (stat.S_IRWXG | stat.S_IRWXO)
                and not _is_credential(path, credentials_dir)):
            raise SettingError(f"{setting}: {path} is readable by others "
                               f"(mode {stat.S_IMODE(mode):o}); chmod 600 it")
        if stat.S_ISSOCK(mode):  # opening one fails (ENXIO) before read_regular can tell
            raise NotRegularFile("socket")
        data = read_regular(Path(path))
    except NotRegularFile as exc:
        raise SettingError(f"{setting}: {path} is {exc}") from None
    except OSError as exc:
        if not os.path.lexists(path):
            raise _no_such_file(setting) from None
        raise SettingError(f"{setting}: cannot read {path}: "
                           f"{exc.strerror or type(exc).__name__}") from None
    if data is None:  # gone between the two looks
        raise _no_such_file(setting)
    try:
        secret = data.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise SettingError(f"{setting}: {path} is not UTF-8 text") from None
    if not secret:
        raise SettingError(f"{setting}: {path} is empty{if_empty}")
    if "\n" in secret:
        raise SettingError(f"{setting}: {path} holds more than one line")
    if "\0" in secret:
        # C libraries (libpq, libldap) end a string there: the secret used would be cut.
        raise SettingError(f"{setting}: {path} holds a NUL byte")
    return secret


def _no_such_file(setting: str) -> SettingError:
    return SettingError(f"{setting}: no such file (it names a mode-600 file holding the "
                        "secret, never the secret itself)")


def _is_credential(path: str, credentials_dir: str) -> bool:
    return bool(credentials_dir) and os.path.dirname(os.path.realpath(path)) == (
        os.path.realpath(credentials_dir))


@dataclass(frozen=True)
class DatabaseUrl:
    """A database URL's parts, unquoted; `repr` leaves the password out."""

    scheme: str  # lower case
    user: str
    host: str  # "" when the URL names none (a local socket)
    port: Optional[int]
    name: str  # the path without its leading slash: the database or schema
    query: str  # as written; each source decides which options it takes
    fragment: str
    password: str = field(default="", repr=False)  # "" when the URL holds none


def split_database_url(url: str, setting: str, *, example: str,
                       password_file_setting: Optional[str],
                       required: Sequence[str] = ()) -> DatabaseUrl:
    """The parts of the URL in `setting`. SettingError, never quoting the URL (it may hold a
    password), when it does not parse, when its port is no port, when it holds a password
    while `password_file_setting` names where the password goes instead (None: the URL may
    hold one), or when one of the `required` parts ("user", "host", "database") is empty.
    The scheme, the options and the fragment are the caller's to check."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:  # e.g. an unclosed [ in the host
        raise SettingError(f"{setting} is not a valid URL (e.g. {example})") from None
    try:
        port = parts.port
    except ValueError:
        raise SettingError(f"{setting} is not a valid URL: the port is not a number up to "
                           f"65535 (e.g. {example})") from None
    if password_file_setting is not None and parts.password is not None:
        raise SettingError(f"{setting} must not hold the password: put it in a mode-600 file "
                           f"named by {password_file_setting}")
    found = DatabaseUrl(
        scheme=parts.scheme.lower(), user=unquote(parts.username or ""),
        host=unquote(parts.hostname or ""), port=port, name=unquote(parts.path.lstrip("/")),
        query=parts.query, fragment=parts.fragment, password=unquote(parts.password or ""))
    present = {"user": found.user, "host": found.host, "database": found.name}
    if not all(present[part] for part in required):
        raise SettingError(f"{setting} must name the {_listed(required)}: {example}")
    return found


def _listed(words: Sequence[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"
