"""Typed values from a parsed TOML table, and secret files: what every channel's settings use.

TOML has types, so `url = 9090` is a mistake, not a URL; a number of seconds has bounds; an
unknown key is a typo to refuse rather than ignore. Secret files (a webhook URL, an SMTP
password) are refused when others can read them, as ssh refuses a private key, and no
message quotes what they hold.
"""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

from clusterwatch.errors import ConfigError

MAX_SECONDS = 366 * 86400.0  # any longer duration is a typo


def reject_unknown(table: dict[str, Any], allowed: set[str], where: str) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}; "
                          f"known: {', '.join(sorted(allowed))}")


def positive(table: dict[str, Any], key: str, default: float = 0.0, where: str = "",
             maximum: float = MAX_SECONDS) -> float:
    """A number of seconds above 0 and at most `maximum`.

    TOML has `inf` and `1e300`: taken as they are, they end in an OverflowError deep in a
    socket or a subprocess call, long after the configuration was read.
    """
    value = table.get(key, default)
    if (isinstance(value, bool) or not isinstance(value, (int, float))
            or not 0 < value <= maximum):
        raise ConfigError(f"{key_name(where, key)} must be a positive number of seconds, "
                          f"at most {maximum:g}, not {value!r}")
    return float(value)


def string(table: dict[str, Any], key: str, where: str, default: str = "") -> str:
    value = table.get(key, default)
    if not isinstance(value, str):
        raise ConfigError(f"{key_name(where, key)} must be a string, not {value!r}")
    return value


def key_name(where: str, key: str) -> str:
    if not where:
        return key
    return f"{where} {key}" if where.startswith("[") else f"{where}.{key}"


def read_secret_text(path: Path) -> str:
    """The text of a secret file, refusing one that others can read (as ssh does).

    Every message names the file and never quotes what it holds.
    """
    try:
        info = path.stat()
    except FileNotFoundError:
        raise ConfigError(f"secret file {path} does not exist") from None
    except OSError as exc:
        raise ConfigError(f"cannot read secret file {path}: {exc.strerror}") from None
    if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ConfigError(
            f"secret file {path} is readable by group or others "
            f"(mode {stat.S_IMODE(info.st_mode):03o}); run: chmod 600 {path}"
        )
    if not stat.S_ISREG(info.st_mode):
        raise ConfigError(f"secret file {path} is not a regular file")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"secret file {path} is not UTF-8 text") from None
    except OSError as exc:
        raise ConfigError(f"cannot read secret file {path}: {exc.strerror}") from None


def read_password(path: Path) -> str:
    """A password alone on the first line of a secret file (its line end removed).

    Spaces inside are the password's own; a second line is refused, since which line was
    meant cannot be known.
    """
    value = read_secret_text(path).rstrip("\r\n")
    if not value or "\n" in value or "\r" in value:
        raise ConfigError(f"secret file {path} must hold the password alone, on one line")
    return value
