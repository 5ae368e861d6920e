"""Reading a file that must be a regular one: whole, and never blocking on what it is.

Opening a FIFO for reading waits for a writer (under a timer: forever, holding whatever the
run holds); a device may never end. The file is opened without blocking and checked before
a byte is read, so the caller can say what is there instead.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Optional


class NotRegularFile(Exception):
    """The path is a directory, a FIFO, a socket or a device; `kind` says which."""

    def __init__(self, kind: str) -> None:
        super().__init__(f"not a regular file but a {kind}")
        self.kind = kind


def read_regular(path: Path) -> Optional[bytes]:
    """The file's bytes, None if it does not exist; OSError as the system raises it."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(_file_kind(mode))
        with os.fdopen(os.dup(fd), "rb") as handle:
            return handle.read()
    finally:
        os.close(fd)


def _file_kind(mode: int) -> str:
    for test, kind in ((stat.S_ISDIR, "directory"), (stat.S_ISFIFO, "FIFO"),
                       (stat.S_ISSOCK, "socket")):
        if test(mode):
            return kind
    return "device"
