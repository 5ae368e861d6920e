"""A job's processes: PIDs from every `cgroup.procs` below the job, details from /proc.

Per process and collection, four reads, each of a file held open between collections (see
file_reader.HeldFiles): `statm` (resident pages), `io`, the stat of `fd/` (its size is the
number of open files) and of `task/` (its link count is 2 + the number of threads). `stat`
(start time, command name) is read when a process is first seen: a held file stays tied to
its process, so while `statm` is read through the same opening (its serial number), the
PID still names that process and its start time is known. A process that exits while it
is read is dropped and counted once as vanished.
"""

from __future__ import annotations

import os
import stat as stat_module
from typing import NamedTuple, Optional

from clusterwatch.jobs import cgroup_parse
from clusterwatch.jobs.cgroup_procs import CgroupProcs
from clusterwatch.jobs.file_reader import (
    PROCESS_VANISHED,
    FileReader,
    HeldFile,
    ProcessVanished,
    count_failure,
)
from clusterwatch.jobs.layout import JobCgroup
from clusterwatch.jobs.scratch import ScratchPaths

PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_IO_KEYS = [b"syscr:", b"syscw:", b"read_bytes:", b"write_bytes:"]
# What the common case reads of statm (7 numbers) and io (7 lines): both stay far below
# this, and a buffer this small comes from Python's small-object allocator. A read that
# fills it is read again whole (`ProcReader.sample`).
_SHORT = 512
MAX_SIDE_FILE = 1 << 20  # bytes read at most from a file a job's environment points to
_MAX_REMEMBERED = 65536  # processes whose uid is remembered; then forgotten all at once


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


class _Known(NamedTuple):
    """What `stat` said of a process when it was first seen."""

    serial: Optional[int]  # of the held statm it was seen through (None: not held)
    starttime: int
    daemon: bool


class _Record(NamedTuple):
    """A process's held statm, io, fd/ and task/ and its start time (see ProcReader._record)."""

    statm: HeldFile
    io: HeldFile
    fds: HeldFile
    task: HeldFile
    starttime: int


class ProcessSample(NamedTuple):
    pid: int
    starttime: int  # clock ticks after boot: with the PID, identifies the process
    threads: int
    rss_bytes: int
    io: Optional[IoCounters]  # None when unreadable (another user's process, no root)
    open_files: Optional[int]
    # The scheduler's daemon (slurmstepd), not a job process: io and open_files not read.
    daemon: bool = False


class JobPids(NamedTuple):
    pids: list[int]
    steps: int
    # False when a cgroup.procs or a directory below the job could not be read (counted):
    # the PIDs are then some of the job's, and what is summed over them is left out.
    complete: bool


def job_pids(job: JobCgroup, cgroups: CgroupProcs) -> JobPids:
    """PIDs in every cgroup below the job (daemon cgroups skipped) and the number of steps.

    Symbolic links are not followed (see layout). What cannot be read is counted and
    makes the list incomplete. A directory that surely has no subdirectory is not listed
    (see cgroup_procs)."""
    files = cgroups.files
    pids: list[int] = []
    steps = 0
    complete = True
    top = job.procs_dir
    if top is None:
        return JobPids(pids, steps, complete)
    daemon_dirs = job.daemon_dirs
    count_steps = job.has_steps
    pending = [top]
    while pending:
        directory = pending.pop()
        reading = cgroups.read(directory)
        text = reading.text
        if reading.unreadable:
            complete = False
        elif text:
            try:
                pids.extend(cgroup_parse.parse_procs(text))
            except ValueError as exc:
                files.malformed(directory + "/cgroup.procs", exc)
                complete = False
        if reading.leaf:
            continue
        try:
            with os.scandir(directory) as entries:
                children = [entry for entry in entries if entry.is_dir(follow_symlinks=False)]
        except (FileNotFoundError, NotADirectoryError):  # removed meanwhile: it ended
            continue
        except OSError as exc:
            count_failure(files.errors, directory, exc)
            complete = False
            continue
        cgroups.listed(reading, len(children))
        for child in children:
            name = child.name
            if name in daemon_dirs:
                continue
            if count_steps and directory == top and name.startswith("step_"):
                steps += 1
            pending.append(child.path)
    if len(pids) > 1:
        pids = sorted(set(pids))
    return JobPids(pids, steps, complete)


class ProcReader:
    def __init__(self, proc_root: str, files: FileReader) -> None:
        self.proc_root = proc_root
        self.files = files
        self._fd_count_in_size = _fd_count_in_size(proc_root)
        self._root_processes: dict[tuple[int, int], bool] = {}
        self._known: dict[int, _Known] = {}
        # pid -> its held files and start time, in the common case of sample_job.
        self._records: dict[int, _Record] = {}
        self._sampled: set[int] = set()

    def end_collection(self) -> None:
        """Forget the processes this collection did not read."""
        sampled = self._sampled
        self._known = {pid: known for pid, known in self._known.items() if pid in sampled}
        self._records = {pid: record for pid, record in self._records.items()
                         if pid in sampled}
        self._sampled = set()

    def sample_job(self, pids: list[int], daemon_comm: bytes = b"") -> list[ProcessSample]:
        """The readings of a job's processes, the scheduler's daemon left out: `sample` for
        each PID, with its common case written out here.

        The common case is a process seen through the same held `statm` at the previous
        collection, its `io`, `fd/` and `task/` held too: four system calls on open files and
        a few lines of Python. Anything else (a new process, a file not held, an error, a
        kernel thread's empty fd/) goes through `sample`, which reads the same files again
        and handles it."""
        held = self.files.held
        if held is None or not self._fd_count_in_size:
            samples = [self.sample(pid, daemon_comm) for pid in pids]
            return [s for s in samples if s is not None and not s.daemon]
        entries = held.entries
        generation = held.generation
        records = self._records
        self._sampled.update(pids)
        pread, fstat, new_tuple = os.pread, os.fstat, tuple.__new__
        found: list[ProcessSample] = []
        for pid in pids:
            record = records.get(pid)
            if record is None:
                record = self._record(pid, entries)
            if record is None:
                process = self.sample(pid, daemon_comm)
            else:
                statm, io, fds, task, starttime = record
                try:
                    statm_bytes = pread(statm.fd, _SHORT, 0)
                    io_bytes = pread(io.fd, _SHORT, 0)
                    threads = fstat(task.fd).st_nlink - 2
                    open_files = fstat(fds.fd).st_size
                    io_fields = io_bytes.split()
                    # A full buffer may have been cut short: `sample` reads all of it.
                    if (io_fields[4:12:2] != _IO_KEYS or not open_files
                            or len(statm_bytes) == _SHORT or len(io_bytes) == _SHORT):
                        raise ValueError("not the common case")
                    rss_pages = int(statm_bytes.split(None, 2)[1])
                    counters = new_tuple(IoCounters, (int(io_fields[9]), int(io_fields[11]),
                                                      int(io_fields[5]), int(io_fields[7])))
                    # Negative or past 64 bits: damage, which `sample` counts as malformed.
                    if (rss_pages | counters[0] | counters[1] | counters[2] | counters[3]) >> 64:
                        raise ValueError("not the common case")
                except (OSError, ValueError, IndexError):
                    process = self.sample(pid, daemon_comm)  # says what went wrong
                else:
                    statm.generation = io.generation = fds.generation = task.generation = generation
                    found.append(new_tuple(ProcessSample, (
                        pid, starttime, threads, rss_pages * PAGE_SIZE, counters, open_files,
                        False)))
                    continue
            if process is not None and not process.daemon:
                found.append(process)
        return found

    def _record(self, pid: int, entries: dict[str, HeldFile]) -> Optional[_Record]:
        """The held files of a process in the common case (see `sample_job`), remembered for
        the next collections; None when it is not the common case.

        A remembered record stays right while its files stay held: `sample`, the only place
        a process's start time or files change, forgets it, and a file closed since
        (HeldFiles.release) has the descriptor -1, which fails the read and sends the
        process through `sample` too."""
        base = f"{self.proc_root}/{pid}"
        known = self._known.get(pid)
        statm = entries.get(base + "/statm")
        io = entries.get(base + "/io")
        fds = entries.get(base + "/fd")
        task = entries.get(base + "/task")
        if (known is None or known.daemon or statm is None or io is None or fds is None
                or task is None or known.serial != statm.serial):
            return None
        record = self._records[pid] = _Record(statm, io, fds, task, known.starttime)
        return record

    def sample(self, pid: int, daemon_comm: bytes = b"") -> Optional[ProcessSample]:
        """The process's readings, or None when it vanished (counted) or a file is bad.

        A process named `daemon_comm` whose real uid is root is the scheduler's daemon: it is
        returned with `daemon` set, without reading its io and fd."""
        base = f"{self.proc_root}/{pid}"
        files = self.files
        self._sampled.add(pid)
        self._records.pop(pid, None)  # its files or start time may change here
        try:
            statm = files.proc_bytes(base + "/statm")
            if statm is None:
                return None
            try:
                rss_bytes = _u64(statm.split(None, 2)[1]) * PAGE_SIZE
            except (ValueError, IndexError) as exc:
                files.malformed(base + "/statm", exc)
                return None
            serial = files.serial(base + "/statm")
            known = self._known.get(pid)
            if known is None or serial is None or known.serial != serial or known.daemon:
                # Not seen through this opening of statm: a new process (or one that reuses
                # the PID), or not recognisable (statm not held); or the scheduler's daemon,
                # whose child is named like it until it runs the job's program.
                identified = self._identify(pid, base, serial, daemon_comm,
                                            held=known is not None and known.daemon)
                if identified is None:
                    return None
                known, threads = identified
                if known.daemon:
                    return ProcessSample(pid, known.starttime, threads, rss_bytes, None, None,
                                         True)
            else:
                task = files.proc_stat(base + "/task")
                threads = task.st_nlink - 2 if task is not None else 0
            io = self._io(base + "/io")
            open_files = self._open_files(base + "/fd")
        except ProcessVanished:
            files.errors.add(PROCESS_VANISHED)
            return None
        return ProcessSample(pid, known.starttime, threads, rss_bytes, io, open_files)

    def _identify(self, pid: int, base: str, serial: Optional[int], daemon_comm: bytes,
                  held: bool) -> Optional[tuple[_Known, int]]:
        """Read `stat`: the process's start time and command name, remembered, and its
        threads; None when stat is bad (counted). `held`: read it through a held file (the
        daemon's, read at every collection)."""
        path = base + "/stat"
        raw = self.files.proc_bytes(path) if held else self.files.proc_bytes_once(path)
        if raw is None:
            return None
        try:
            # The command name may hold spaces and ")": fields start after the last ")".
            end = raw.rindex(b")")
            fields = raw[end + 2:].split(None, 20)
            threads, starttime = _u64(fields[17]), _u64(fields[19])
        except (ValueError, IndexError) as exc:
            self.files.malformed(path, exc)
            return None
        # A held task/ may belong to a process that had this PID before: open it again.
        self.files.release(base + "/task")
        daemon = bool(daemon_comm) and raw[raw.find(b"(") + 1:end] == daemon_comm and (
            self._run_by_root(pid, starttime))
        known = self._known[pid] = _Known(serial, starttime, daemon)
        return known, threads

    def _run_by_root(self, pid: int, starttime: int) -> bool:
        """Whether the process's real uid is root; looked up once per process (its status
        file costs as much as its stat, io and fd together)."""
        key = (pid, starttime)
        verdict = self._root_processes.get(key)
        if verdict is None:
            if len(self._root_processes) >= _MAX_REMEMBERED:
                self._root_processes.clear()
            verdict = self._root_processes[key] = self.real_uid(pid) == 0
        return verdict

    def _open_files(self, path: str) -> Optional[int]:
        if self._fd_count_in_size:
            stat = self.files.proc_stat(path)
            if stat is not None and stat.st_size:
                return stat.st_size  # 0: a kernel thread, or the size was not filled in
        names = self.files.proc_listdir(path)
        return None if names is None else len(names)

    def _io(self, path: str) -> Optional[IoCounters]:
        raw = self.files.proc_bytes(path)
        if raw is None:
            return None
        fields = raw.split()
        try:
            if fields[4:12:2] == _IO_KEYS:  # the kernel's fixed order: no dict needed
                return IoCounters(_u64(fields[9]), _u64(fields[11]), _u64(fields[5]),
                                  _u64(fields[7]))
            values = {key.rstrip(b":"): value for key, value in zip(fields[::2], fields[1::2])}
            return IoCounters(_u64(values[b"read_bytes"]), _u64(values[b"write_bytes"]),
                              _u64(values[b"syscr"]), _u64(values[b"syscw"]))
        except (ValueError, KeyError) as exc:
            self.files.malformed(path, exc)
            return None

    def real_uid(self, pid: int) -> Optional[int]:
        try:
            raw = self.files.proc_bytes_once(f"{self.proc_root}/{pid}/status")
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
            raw = self.files.proc_bytes_once(f"{self.proc_root}/{pid}/environ")
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


def _u64(field: bytes) -> int:
    """A number of a /proc file: an unsigned 64-bit integer, else ValueError (malformed)."""
    value = int(field)
    if value >> 64:  # negative values shift to -1
        raise ValueError(f"not an unsigned 64-bit integer: {field[:80]!r}")
    return value


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
