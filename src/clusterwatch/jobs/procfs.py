"""A job's processes: PIDs from every `cgroup.procs` below the job, details from /proc.

Per process, three reads: `stat` (threads, RSS, start time), `io` and the `fd` directory.
A process that exits while it is read is dropped and counted once as vanished.
"""

from __future__ import annotations

import os
import stat as stat_module
from typing import NamedTuple, Optional

from clusterwatch.jobs import cgroup_parse
from clusterwatch.jobs.discovery import JobCgroup, subdirectories
from clusterwatch.jobs.file_reader import PROCESS_VANISHED, FileReader, ProcessVanished
from clusterwatch.jobs.scratch import ScratchPaths

PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_IO_KEYS = [b"syscr:", b"syscw:", b"read_bytes:", b"write_bytes:"]
MAX_SIDE_FILE = 1 << 20  # bytes read at most from a file a job's environment points to


class IoCounters(NamedTuple):
    """/proc/<pid>/io: storage-layer bytes (read_bytes, write_bytes) and read/write calls."""

    read_bytes: int = 0
    write_bytes: int = 0
    read_operations: int = 0
    write_operations: int = 0

    def plus(self, other: IoCounters) -> IoCounters:
        return IoCounters(
            self.read_bytes + other.read_bytes, self.write_bytes + other.write_bytes,
            self.read_operations + other.read_operations,
            self.write_operations + other.write_operations,
        )

    def at_least(self, floor: IoCounters) -> IoCounters:
        """Field by field, never below `floor`."""
        return IoCounters(
            max(self.read_bytes, floor.read_bytes), max(self.write_bytes, floor.write_bytes),
            max(self.read_operations, floor.read_operations),
            max(self.write_operations, floor.write_operations),
        )


class ProcessSample(NamedTuple):
    pid: int
    starttime: int  # clock ticks after boot: with the PID, identifies the process
    threads: int
    rss_bytes: int
    io: Optional[IoCounters]  # None when unreadable (another user's process, no root)
    open_files: Optional[int]


def job_pids(job: JobCgroup, files: FileReader) -> tuple[list[int], int]:
    """PIDs in every cgroup below the job (daemon cgroups skipped) and the number of steps."""
    pids: list[int] = []
    steps = 0
    if job.procs_dir is None:
        return pids, steps
    pending = [job.procs_dir]
    while pending:
        directory = pending.pop()
        path = os.path.join(directory, "cgroup.procs")
        text = files.cgroup_text(path)
        if text:
            try:
                pids.extend(cgroup_parse.parse_procs(text))
            except ValueError as exc:
                files.malformed(path, exc)
        for child in subdirectories(directory):
            if child.name in job.daemon_dirs:
                continue
            if job.has_steps and directory == job.procs_dir and child.name.startswith("step_"):
                steps += 1
            pending.append(child.path)
    return sorted(set(pids)), steps


class ProcReader:
    def __init__(self, proc_root: str, files: FileReader) -> None:
        self.proc_root = proc_root
        self.files = files
        self._fd_count_in_size = _fd_count_in_size(proc_root)

    def sample(self, pid: int) -> Optional[ProcessSample]:
        """The process's readings, or None when it vanished (counted) or its stat is bad."""
        base = f"{self.proc_root}/{pid}"
        try:
            raw = self.files.proc_bytes(base + "/stat")
            if raw is None:
                return None
            try:
                # The command name may hold spaces and ")": fields start after the last ")".
                fields = raw[raw.rindex(b")") + 2:].split()
                threads, starttime, rss_pages = int(fields[17]), int(fields[19]), int(fields[21])
            except (ValueError, IndexError) as exc:
                self.files.malformed(base + "/stat", exc)
                return None
            io = self._io(base + "/io")
            open_files = self._open_files(base + "/fd")
        except ProcessVanished:
            self.files.errors.add(PROCESS_VANISHED)
            return None
        return ProcessSample(pid, starttime, threads, rss_pages * PAGE_SIZE, io, open_files)

    def _open_files(self, path: str) -> Optional[int]:
        if self._fd_count_in_size:
            size = self.files.proc_size(path)
            if size:  # 0: a kernel thread, or a moment the size was not filled in
                return size
        names = self.files.proc_listdir(path)
        return None if names is None else len(names)

    def _io(self, path: str) -> Optional[IoCounters]:
        raw = self.files.proc_bytes(path)
        if raw is None:
            return None
        fields = raw.split()
        try:
            if fields[4:12:2] == _IO_KEYS:  # the kernel's fixed order: no dict needed
                return IoCounters(int(fields[9]), int(fields[11]), int(fields[5]),
                                  int(fields[7]))
            values = {key.rstrip(b":"): value for key, value in zip(fields[::2], fields[1::2])}
            return IoCounters(int(values[b"read_bytes"]), int(values[b"write_bytes"]),
                              int(values[b"syscr"]), int(values[b"syscw"]))
        except (ValueError, KeyError) as exc:
            self.files.malformed(path, exc)
            return None

    def real_uid(self, pid: int) -> Optional[int]:
        try:
            raw = self.files.proc_bytes(f"{self.proc_root}/{pid}/status")
        except ProcessVanished:
            return None
        for line in (raw or b"").splitlines():
            if line.startswith(b"Uid:"):
                fields = line.split()
                return int(fields[1]) if len(fields) > 1 and fields[1].isdigit() else None
        return None

    def environ(self, pid: int, prefixes: tuple[bytes, ...]) -> Optional[dict[str, str]]:
        """The variables whose `NAME=value` starts with one of `prefixes` (others are not
        decoded: environments can be large); None when unreadable or empty."""
        try:
            raw = self.files.proc_bytes(f"{self.proc_root}/{pid}/environ")
        except ProcessVanished:
            return None
        if not raw:
            return None  # kernel threads and processes that cleared their environment
        environ: dict[str, str] = {}
        for item in raw.split(b"\0"):
            if not item.startswith(prefixes):
                continue
            key, sep, value = item.partition(b"=")
            if sep:
                environ[key.decode("utf-8", "replace")] = value.decode("utf-8", "replace")
        return environ

    def uses_scratch(self, pid: int, scratch: ScratchPaths) -> bool:
        """Whether the process's working directory or an open file is under a scratch path."""
        base = f"{self.proc_root}/{pid}"
        if scratch.contains(_readlink(base + "/cwd")):
            return True
        try:
            fds = os.listdir(base + "/fd")
        except OSError:
            return False
        return any(scratch.contains(_readlink(f"{base}/fd/{fd}")) for fd in fds)

    def read_in_root(self, pid: int, path: str) -> Optional[str]:
        """A small regular file at `path` as the process sees it (its root, its mounts).

        The path comes from the job's environment, which the user controls: only a regular
        file is read (never a FIFO or device that would block), at most MAX_SIDE_FILE bytes.
        """
        if not path.startswith("/"):
            return None
        path = os.path.normpath(path)  # no ".." climbing out of the process's root
        try:
            fd = os.open(f"{self.proc_root}/{pid}/root{path}", os.O_RDONLY | os.O_NONBLOCK)
        except OSError:
            return None
        try:
            if not stat_module.S_ISREG(os.fstat(fd).st_mode):
                return None
            return os.read(fd, MAX_SIDE_FILE).decode("utf-8", "replace")
        except OSError:
            return None
        finally:
            os.close(fd)


def _fd_count_in_size(proc_root: str) -> bool:
    """Whether stat() of /proc/<pid>/fd gives the number of open files (Linux >= 6.2), a
    third of the cost of listing the directory; older kernels give 0. Tried on our own fd
    directory, which always holds a few open files."""
    try:
        return os.stat(f"{proc_root}/self/fd").st_size > 0
    except OSError:
        return False


def _readlink(path: str) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return ""
