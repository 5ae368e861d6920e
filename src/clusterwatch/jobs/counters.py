"""Per-job counters over processes that come and go: I/O totals and processes seen.

/proc/<pid>/io disappears with its process, so a sum over live processes drops when one
exits. Each job keeps the last reading of every live process, keyed by (PID, start time) so
a reused PID is a new process, and adds a process's last reading to the job's departed
total when it is gone. The result is clamped to the previous total: a counter never goes
backwards, whatever a racing read returned. I/O between the last scrape and a process's
exit, and processes that live less than one scrape interval, are not seen.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Optional

from clusterwatch.jobs.procfs import IoCounters

ProcessKey = tuple[int, int]  # (pid, starttime)


class JobCounters:
    def __init__(self) -> None:
        self._live: dict[ProcessKey, Optional[IoCounters]] = {}
        self._departed = IoCounters()
        self._total = IoCounters()
        self.spawned = 0
        # False while every process seen so far had an unreadable io file: a total of 0
        # would then be a lie, so the I/O series are left out.
        self.io_known = True
        self._any_io = False

    def update(self, readings: Iterable[tuple[ProcessKey, Optional[IoCounters]]]) -> IoCounters:
        """Take this scrape's live processes and their io (None: unreadable); return totals."""
        before = self._live
        live: dict[ProcessKey, Optional[IoCounters]] = {}
        spawned = 0
        for key, io in readings:
            if key not in before:
                spawned += 1
            else:
                previous = before[key]
                if io is None:
                    io = previous  # unreadable this time: keep the last reading
                elif previous is not None and io != previous and (  # idle: equal
                        io[0] < previous[0] or io[1] < previous[1]
                        or io[2] < previous[2] or io[3] < previous[3]):
                    io = io.at_least(previous)
            live[key] = io
        self.spawned += spawned
        departed = self._departed
        for key in before.keys() - live.keys():
            gone = before[key]
            if gone is not None:
                departed = departed.plus(gone)
        self._departed = departed
        self._live = live
        read_bytes, write_bytes, read_operations, write_operations = departed
        readable = [io for io in live.values() if io is not None]
        if readable:  # summed by builtins, column by column
            self._any_io = True
            columns = zip(*readable)
            read_bytes += sum(next(columns))
            write_bytes += sum(next(columns))
            read_operations += sum(next(columns))
            write_operations += sum(next(columns))
        self._total = IoCounters(read_bytes, write_bytes, read_operations,
                                 write_operations).at_least(self._total)
        self.io_known = self._any_io or self.spawned == 0
        return self._total
