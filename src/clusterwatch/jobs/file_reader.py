"""Reading cgroup and /proc files so that no single failure stops a collection.

Every read is one `open().read()`. What can go wrong is normal on a busy node (a process
exits between listing and reading, a job's cgroup is removed while we read it, a file is
unreadable to a non-root exporter), so failures become `None` and a count per kind, which
the exporter exports as `jobs_exporter_errors_total{kind}`.
"""

from __future__ import annotations

import errno
import logging
import os
from typing import Callable, Optional

log = logging.getLogger(__name__)

PROCESS_VANISHED = "process_vanished"
PERMISSION_DENIED = "permission_denied"
UNREADABLE = "unreadable"
MALFORMED = "malformed"
JOB_FAILED = "job_failed"
GPU = "gpu"
DUPLICATE_JOB = "duplicate_job"
ERROR_KINDS = (
    PROCESS_VANISHED, PERMISSION_DENIED, UNREADABLE, MALFORMED, JOB_FAILED, GPU, DUPLICATE_JOB,
)

# A cgroup file that is absent (layout, kernel version) or whose cgroup was just removed
# (the job ended: reads then fail with ENODEV) is not an error.
_ABSENT = (errno.ENOENT, errno.ENODEV, errno.ENOTDIR)
# A /proc file of a process that exited: absent, or ESRCH when it died after the open.
_GONE = (errno.ENOENT, errno.ESRCH, errno.ENOTDIR)

_CHUNK = 65536
Opener = Callable[[str], bytes]
Lister = Callable[[str], list[str]]


def read_file(path: str) -> bytes:
    """The whole file; the default opener, replaced in tests.

    os.open/os.read rather than open(): no file object per read, which is most of the cost
    for the thousands of small /proc and cgroup files a collection reads. The kernel's
    seq_file-backed files (/proc/<pid>/*, cgroup files) and regular files fill the buffer
    unless at the end, so only a full buffer needs another read.
    """
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        data = os.read(fd, _CHUNK)
        if len(data) < _CHUNK:
            return data
        chunks = [data]
        while True:
            chunk = os.read(fd, _CHUNK)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
    finally:
        os.close(fd)


class ProcessVanished(Exception):
    """The process exited while it was being read."""


class ErrorCounts:
    """Cumulative error counts per kind, every kind present from the start (at 0)."""

    def __init__(self) -> None:
        self._counts = dict.fromkeys(ERROR_KINDS, 0)

    def add(self, kind: str, count: int = 1) -> None:
        self._counts[kind] = self._counts.get(kind, 0) + count

    def snapshot(self) -> dict[str, int]:
        return dict(self._counts)


class FileReader:
    """Reads through `opener` and turns failures into `None` plus an error count."""

    def __init__(self, errors: ErrorCounts, opener: Opener = read_file,
                 lister: Lister = os.listdir) -> None:
        self.errors = errors
        self._opener = opener
        self._lister = lister

    def cgroup_text(self, path: str) -> Optional[str]:
        """A cgroup file's text; `None` when absent (not counted) or unreadable (counted)."""
        try:
            return self._opener(path).decode("ascii", "replace")
        except OSError as exc:
            if exc.errno not in _ABSENT:
                self._count_failure(path, exc)
            return None

    def proc_bytes(self, path: str) -> Optional[bytes]:
        """A /proc file's bytes; `None` when unreadable (counted).

        Raises ProcessVanished when the process is gone, so that the caller counts one
        vanished process, not one per file.
        """
        try:
            return self._opener(path)
        except OSError as exc:
            if exc.errno in _GONE:
                raise ProcessVanished(path) from None
            self._count_failure(path, exc)
            return None

    def proc_listdir(self, path: str) -> Optional[list[str]]:
        """A /proc directory's names (e.g. fd/); like `proc_bytes` for failures."""
        try:
            return self._lister(path)
        except OSError as exc:
            if exc.errno in _GONE:
                raise ProcessVanished(path) from None
            self._count_failure(path, exc)
            return None

    def proc_size(self, path: str) -> Optional[int]:
        """st_size of a /proc path; like `proc_bytes` for failures."""
        try:
            return os.stat(path).st_size
        except OSError as exc:
            if exc.errno in _GONE:
                raise ProcessVanished(path) from None
            self._count_failure(path, exc)
            return None

    def malformed(self, path: str, detail: object) -> None:
        self.errors.add(MALFORMED)
        log.debug("malformed %s: %s", path, detail)

    def _count_failure(self, path: str, exc: OSError) -> None:
        if isinstance(exc, PermissionError):
            self.errors.add(PERMISSION_DENIED)
        else:
            self.errors.add(UNREADABLE)
        log.debug("cannot read %s: %s", path, exc)
