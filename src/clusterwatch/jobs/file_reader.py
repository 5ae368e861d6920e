"""Reading cgroup and /proc files so that no single failure stops a collection.

What can go wrong is normal on a busy node (a process exits between listing and reading, a
job's cgroup is removed while we read it, a file is unreadable to a non-root exporter), so
failures become `None` and a count per kind, which the exporter exports as
`jobs_exporter_errors_total{kind}`.

The files read at every collection (a job's cgroup files, each process's `stat` and `io`,
its `fd/` directory) are opened once and kept open between collections (`HeldFiles`): a
`pread` at offset 0 makes the kernel generate the file again, and costs a fifth to a third
of an `open`, `read` and `close` (no path walk, no file allocation). A held file always
refers to the object it was opened on: a /proc file to one process (the kernel ties it to
the process, not to the PID number, so a reused PID can never be read through it), a cgroup
file to one cgroup. When that object is gone the read fails (`ESRCH` for /proc, `ENODEV`
for a removed cgroup, `ENOENT` for a dead process's `fd/`) and the path is opened again,
which reaches the new process or cgroup of that name, if any.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import resource
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
# What a held file answers once the process or cgroup it was opened on is gone.
_STALE = (errno.ESRCH, errno.ENODEV, errno.ENOENT)
_OUT_OF_FILES = (errno.EMFILE, errno.ENFILE)

_CHUNK = 65536
# A held cgroup file's first read: room for every common one (memory.stat, per-CPU usage of
# a few hundred CPUs) without allocating _CHUNK bytes per read; a longer one is read whole.
_FIRST = 4096
Opener = Callable[[str], bytes]
Lister = Callable[[str], list[str]]

# Held files: at most this many (each readable one holds about 4 KiB of kernel memory, its
# seq_file buffer, charged to the exporter's cgroup), and never closer than RESERVED_FDS to
# the open-files limit (sockets, NVML, logging need their own).
HELD_FILES_MAX = 16384
RESERVED_FDS = 256
_O_READ = os.O_RDONLY | os.O_CLOEXEC
_O_DIR = getattr(os, "O_PATH", 0) | os.O_DIRECTORY | os.O_CLOEXEC


def read_file(path: str, dir_fd: Optional[int] = None) -> bytes:
    """The whole file (`path` relative to the directory `dir_fd` when given); the reader of
    files read once (environments, cgroup.procs), and the default opener of tests that
    replace it.

    os.open/os.read rather than open(): no file object per read, which is most of the cost
    for the thousands of small /proc and cgroup files a collection reads. The kernel's
    seq_file-backed files (/proc/<pid>/*, cgroup files) and regular files fill the buffer
    unless at the end, so only a full buffer needs another read.
    """
    fd = os.open(path, _O_READ, dir_fd=dir_fd)
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


def _pread_all(fd: int) -> bytes:
    data = os.pread(fd, _CHUNK, 0)
    if len(data) < _CHUNK:
        return data
    chunks = [data]
    offset = len(data)
    while True:
        chunk = os.pread(fd, _CHUNK, offset)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        offset += len(chunk)


def open_files_limit() -> int:
    """The soft limit on open files (RLIMIT_NOFILE)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return HELD_FILES_MAX + RESERVED_FDS if soft == resource.RLIM_INFINITY else soft


def raise_open_files_limit() -> int:
    """Raise the soft open-files limit to the hard one (what a service may do without
    privileges; systemd's default soft limit is 1024, its hard one 524288); the new limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and (hard == resource.RLIM_INFINITY or hard > soft):
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (ValueError, OSError) as exc:
            log.debug("cannot raise the open-files limit from %s to %s: %s", soft, hard, exc)
    return open_files_limit()


class HeldFile:
    """One file held open: its descriptor, the collection that last read it, and the serial
    number of its opening.

    Mutable, with slots rather than a NamedTuple or a frozen dataclass: every read marks its
    entry in place (`generation`), on the exporter's hot path, where building a new record
    per file per collection would cost more than the read."""

    __slots__ = ("fd", "generation", "serial")

    def __init__(self, fd: int, generation: int, serial: int) -> None:
        self.fd = fd
        self.generation = generation  # the last collection that read it (see sweep)
        self.serial = serial  # unchanged while reads reach the same process or cgroup


class HeldFiles:
    """Files kept open between collections and re-read with `pread`, by path.

    A file not read during a collection is closed at its end (`sweep`): the processes and
    cgroups that are gone. Beyond `max_open` files, or when the process runs out of file
    descriptors, files are read as `read_file` does (open, read, close). Every opening gets
    a new serial number: while a path's serial stays the same, reads reach the same process
    or cgroup.
    """

    def __init__(self, max_open: Optional[int] = None) -> None:
        if max_open is None:
            max_open = min(HELD_FILES_MAX, open_files_limit() - RESERVED_FDS)
        self.max_open = max(0, max_open)
        # path -> its held file; FileReader and ProcReader read it directly (their hot
        # paths), marking each entry read with `generation`.
        self.entries: dict[str, HeldFile] = {}
        self.generation = 0
        self._serial = 0

    def __len__(self) -> int:
        return len(self.entries)

    def read(self, path: str) -> bytes:
        """The file's bytes now; OSError as a plain read would raise it."""
        entry = self.entries.get(path)
        if entry is not None:
            entry.generation = self.generation
            try:
                return _pread_all(entry.fd)
            except OSError as exc:
                if exc.errno not in _STALE:
                    raise
                self.release(path)  # its process or cgroup is gone: open the path again
        fd = self._open(path, _O_READ)
        if fd is None:
            return read_file(path)
        return _pread_all(fd)

    def stat(self, path: str) -> os.stat_result:
        """The stat of a /proc directory (`fd/`: st_size is its number of open files;
        `task/`: st_nlink is 2 + its number of threads), held open without being readable
        (O_PATH)."""
        entry = self.entries.get(path)
        if entry is not None:
            entry.generation = self.generation
            try:
                return os.fstat(entry.fd)
            except OSError as exc:
                if exc.errno not in _STALE:
                    raise
                self.release(path)
        fd = self._open(path, _O_DIR)
        if fd is None:
            return os.stat(path)
        return os.fstat(fd)

    def directory(self, path: str) -> Optional[int]:
        """The descriptor of the directory at `path`, held open without being readable
        (O_PATH: for files opened relative to it and for its stat), marked read; None where
        no more may be held. OSError as opening the path raises it."""
        entry = self.entries.get(path)
        if entry is not None:
            entry.generation = self.generation
            return entry.fd
        return self._open(path, _O_DIR)

    def serial(self, path: str) -> Optional[int]:
        """The serial number of the held file at `path`; None when it is not held."""
        entry = self.entries.get(path)
        return None if entry is None else entry.serial

    def release(self, path: str, _close: Callable[[int], None] = os.close) -> None:
        """Close the held file at `path`, if any: the next read opens the path again."""
        entry = self.entries.pop(path, None)
        if entry is not None:
            fd, entry.fd = entry.fd, -1  # a read through a kept reference fails (EBADF)
            with contextlib.suppress(OSError):
                _close(fd)  # bound early: also from __del__ at interpreter exit

    def sweep(self) -> None:
        """End of a collection: close the files it did not read."""
        generation = self.generation
        stale = [path for path, entry in self.entries.items() if entry.generation != generation]
        for path in stale:
            self.release(path)
        self.generation = generation + 1

    def close(self) -> None:
        for path in list(self.entries):
            self.release(path)

    def __del__(self) -> None:
        if hasattr(self, "entries"):
            self.close()

    def _open(self, path: str, flags: int) -> Optional[int]:
        """A new held file, or None where no more may be held (then read it plainly)."""
        if len(self.entries) >= self.max_open:
            return None
        try:
            fd = os.open(path, flags)
        except OSError as exc:
            if exc.errno not in _OUT_OF_FILES:
                raise
            # Other parts of the process need descriptors too: hold half as many from now.
            self.max_open = len(self.entries) // 2
            for victim in list(self.entries)[self.max_open:]:
                self.release(victim)
            log.warning("out of file descriptors (%s); holding at most %d files open",
                        exc.strerror, self.max_open)
            return None
        self._serial += 1
        self.entries[path] = HeldFile(fd, self.generation, self._serial)
        return fd


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
    """Reads files and turns failures into `None` plus an error count.

    Files read at every collection go through `held` (kept open); with an `opener` (tests
    inject failures with one), every read goes through it instead, by path.
    """

    def __init__(self, errors: ErrorCounts, opener: Optional[Opener] = None,
                 lister: Lister = os.listdir, held: Optional[HeldFiles] = None) -> None:
        self.errors = errors
        self.held: Optional[HeldFiles] = None
        if opener is None:
            self.held = held if held is not None else HeldFiles()
            self._opener: Opener = self.held.read
            self._stat: Callable[[str], os.stat_result] = self.held.stat
        else:
            self._opener = opener
            self._stat = os.stat
        self._read_once = read_file if opener is None else opener
        self._lister = lister

    def end_collection(self) -> None:
        """Close the held files this collection did not read (processes, cgroups gone)."""
        if self.held is not None:
            self.held.sweep()

    def cgroup_text(self, path: str) -> Optional[str]:
        """A cgroup file's text; `None` when absent (not counted) or unreadable (counted)."""
        held = self.held
        if held is not None:  # the hot path, HeldFiles.read's first half inline
            entry = held.entries.get(path)
            if entry is not None:
                entry.generation = held.generation
                try:
                    data = os.pread(entry.fd, _FIRST, 0)
                    if len(data) < _FIRST:
                        return data.decode("ascii", "replace")
                except OSError:
                    pass  # gone, replaced or failing: HeldFiles.read sorts it out
        try:
            return self._opener(path).decode("ascii", "replace")
        except OSError as exc:
            if exc.errno not in _ABSENT:
                self._count_failure(path, exc)
            return None

    def cgroup_text_once(self, path: str) -> tuple[Optional[str], bool]:
        """Like `cgroup_text`, but opened for this read only, and with whether the file
        could not be read (counted) as opposed to absent. For `cgroup.procs`: on cgroup
        v1 an open `cgroup.procs` (or `tasks`) keeps the list of PIDs it made at its first
        read and serves it again to reads less than a second apart, however the cgroup
        changed since (kernel/cgroup/cgroup-v1.c, cgroup_pidlist_start); a new opening
        lists the cgroup's processes now."""
        try:
            return self._read_once(path).decode("ascii", "replace"), False
        except OSError as exc:
            if exc.errno in _ABSENT:
                return None, False
            self._count_failure(path, exc)
            return None, True

    def proc_bytes(self, path: str) -> Optional[bytes]:
        """A /proc file read at every collection; `None` when unreadable (counted).

        Raises ProcessVanished when the process is gone, so that the caller counts one
        vanished process, not one per file.
        """
        held = self.held
        if held is not None:
            entry = held.entries.get(path)
            if entry is not None:
                entry.generation = held.generation
                try:
                    data = os.pread(entry.fd, _CHUNK, 0)
                    if len(data) < _CHUNK:
                        return data
                except OSError:
                    pass
        try:
            return self._opener(path)
        except OSError as exc:
            self._proc_failure(path, exc)
            return None

    def proc_bytes_once(self, path: str) -> Optional[bytes]:
        """A /proc file read once in a while (environ, status): not held open."""
        try:
            return self._read_once(path)
        except OSError as exc:
            self._proc_failure(path, exc)
            return None

    def proc_listdir(self, path: str) -> Optional[list[str]]:
        """A /proc directory's names (e.g. fd/); like `proc_bytes` for failures."""
        try:
            return self._lister(path)
        except OSError as exc:
            self._proc_failure(path, exc)
            return None

    def proc_stat(self, path: str) -> Optional[os.stat_result]:
        """The stat of a /proc directory read at every collection (held open); like
        `proc_bytes` for failures."""
        held = self.held
        if held is not None:
            entry = held.entries.get(path)
            if entry is not None:
                entry.generation = held.generation
                try:
                    return os.fstat(entry.fd)
                except OSError:
                    pass
        try:
            return self._stat(path)
        except OSError as exc:
            self._proc_failure(path, exc)
            return None

    def _proc_failure(self, path: str, exc: OSError) -> None:
        """A /proc read failed: the process is gone (raised, counted once by the caller),
        the file does not exist for a live process (not counted: a kernel built without
        it, like `io` without task I/O accounting), or it is unreadable (counted here)."""
        if exc.errno in _GONE:
            # Only a failure to find the file itself needs a second look: the process's own
            # directory tells whether the process or just this file is missing. The check
            # comes after the failure, so a process that dies in between is seen as gone.
            if exc.errno == errno.ENOENT and os.path.isdir(os.path.dirname(path)):
                return
            raise ProcessVanished(path) from None
        self._count_failure(path, exc)

    def serial(self, path: str) -> Optional[int]:
        """The held file's serial number (see HeldFiles); None when not held."""
        return None if self.held is None else self.held.serial(path)

    def release(self, path: str) -> None:
        """Stop holding the file at `path` (the next read opens it again)."""
        if self.held is not None:
            self.held.release(path)

    def malformed(self, path: str, detail: object) -> None:
        self.errors.add(MALFORMED)
        log.debug("malformed %s: %s", path, detail)

    def _count_failure(self, path: str, exc: OSError) -> None:
        count_failure(self.errors, path, exc)


def count_failure(errors: ErrorCounts, path: str, exc: OSError) -> None:
    """A file or directory that is there but cannot be read: `permission_denied` (an
    exporter without CAP_DAC_READ_SEARCH) or `unreadable`."""
    errors.add(PERMISSION_DENIED if isinstance(exc, PermissionError) else UNREADABLE)
    log.debug("cannot read %s: %s", path, exc)
