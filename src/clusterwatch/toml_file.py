"""The TOML file of an alert engine (`watch.toml`, `alarms.toml`), read the same way by both.

Every way the file can fail to be read is one ConfigError line naming it, never a traceback:
the system refuses it, it is not a regular file (a FIFO would hold the run until a writer
came), its bytes are not UTF-8, or they are not TOML. A missing file is not an error: each
engine says what its absence means.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Optional

from clusterwatch.errors import ConfigError
from clusterwatch.regular_file import NotRegularFile, read_regular

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.9/3.10 only
    import tomli as tomllib


def read_toml(path: Path) -> Optional[dict[str, Any]]:
    """The parsed file; None when it does not exist."""
    try:
        raw = read_regular(path)
    except NotRegularFile as exc:
        raise ConfigError(f"{path} is a {exc.kind}, not a TOML file") from None
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    if raw is None:
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start + 1})") from None
    try:
        data: dict[str, Any] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    return data
