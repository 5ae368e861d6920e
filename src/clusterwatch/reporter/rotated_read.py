"""One run's read of a log rotated since the previous run: the rest of the file read last,
then every generation the previous run did not know, oldest first, then the live log from its
start; what could not be read is said, with the bytes lost.

Python 3.6 compatible, standard library only (see the package docstring).
"""

import os
from typing import IO, Any, Dict, List, Optional, Tuple

from clusterwatch.reporter.line_chunks import seek_within, take_lines
from clusterwatch.reporter.log_generations import (
    FINGERPRINT_BYTES,
    READ_ERRORS,
    Generation,
    candidates,
    fingerprint,
    generations,
    head_matches,
    identities,
    open_any,
)
from clusterwatch.reporter.log_position import FileMark, LogPosition

MAX_KNOWN = 1000  # generation identities kept per log: far above any rotation count

Info = Dict[str, Any]
# (chunks of complete lines, the position after them, info); no position only when there
# was none to keep (see tail.read_new).
Read = Tuple[List[bytes], Optional[LogPosition], Info]


def new_info(nbytes: int = 0, rotated: bool = False, truncated: bool = False) -> Info:
    return {"bytes": nbytes, "rotated": rotated, "truncated": truncated}


def position(f: IO[bytes], st: os.stat_result, offset: int,
             known: Optional[List[str]]) -> LogPosition:
    """The position in file `f` at `offset`, with `known` (the newest MAX_KNOWN of it)."""
    f.seek(0)
    head = f.read(FINGERPRINT_BYTES)
    mark = FileMark(st.st_dev, st.st_ino, fingerprint(head), len(head), st.st_mtime_ns,
                    st.st_size)
    return LogPosition(offset, known[-MAX_KNOWN:] if known is not None else None, mark)


def not_known(found: List[Generation], saved: LogPosition,
              cache: Dict[str, str]) -> List[Generation]:
    """The generations the last run did not know: only those can be the file it read (a
    known one was read to its end, or is older; with a short head, and compressed after the
    new log was created, it would otherwise pass for the file last read)."""
    if saved.known is None:
        return found  # a state from before generations were known
    ids = identities(found, cache)
    seen = set(saved.known)
    return [generation for generation in found if ids[generation.path] not in seen]


def locate(found: List[Generation], saved: LogPosition, mark: FileMark,
           cache: Dict[str, str]) -> Optional[Generation]:
    """The generation that is the file last read, `mark` (its head, and at least the saved
    offset's bytes)."""
    knows = saved.known is not None
    for generation in candidates(not_known(found, saved, cache), mark, oldest_first=knows):
        try:
            with open_any(generation.path) as f:
                if head_matches(f, mark) and seek_within(f, saved.offset):
                    return generation
        except READ_ERRORS:
            continue  # unreadable or damaged: look at the other candidates
    return None


class RotatedRead(object):
    """One run's read of a log rotated since the last run (or absent at it): `run()`."""

    def __init__(self, path: str, f: IO[bytes], st: os.stat_result,
                 previous: LogPosition, max_bytes: int) -> None:
        self.path, self.f, self.st, self.previous = path, f, st, previous
        self.max_bytes = budget = max_bytes
        self.budget = budget
        self.chunks = []  # type: List[bytes]
        self.files = 0
        self.errors = []  # type: List[str]
        self.lost = 0  # type: Optional[int]
        self.cache = {}  # type: Dict[str, str]
        self.found = generations(path)
        self.ids = identities(self.found, self.cache)

    def run(self) -> Read:
        pieces = self._pieces()
        for n, (generation, start) in enumerate(pieces):
            resume = self._read(generation, start)
            if resume is not None:
                # The cap stopped the run inside a rotated file: next run resumes it, then
                # reads the generations after it (none of them known yet), then the live log.
                waiting = set(self.ids[g.path] for g, _ in pieces[n:])
                known = sorted(set(self.ids.values()) - waiting)
                return self.chunks, resume.with_known(known[-MAX_KNOWN:]), self._summary(True)
        self.f.seek(0)
        may_split = self.budget == self.max_bytes
        chunk, used, cap_hit = take_lines(self.f, self.budget, final=False,
                                           may_split=may_split)
        self._took(chunk, used)
        state = position(self.f, self.st, used, sorted(set(self.ids.values())))
        return self.chunks, state, self._summary(cap_hit)

    def _pieces(self) -> List[Tuple[Generation, int]]:
        """(generation, where to start) to read before the live log, in order."""
        previous = self.previous
        pieces = []  # type: List[Tuple[Generation, int]]
        last = None  # type: Optional[Generation]
        if previous.file is not None:
            last = locate(self.found, previous, previous.file, self.cache)
            if last is not None:
                pieces.append((last, previous.offset))
            elif previous.file.fp_len > 0:
                self._lost_file(previous.file.size)
        if previous.known is not None:
            newer = not_known(self.found, previous, self.cache)
        elif last is not None:  # a state from before generations were known: by order
            newer = self.found[self.found.index(last) + 1:]
        else:
            newer = []
        seen = set(self.ids[g.path] for g, _ in pieces)
        for generation in newer:
            if self.ids[generation.path] not in seen:  # a plain file and its .gz copy
                seen.add(self.ids[generation.path])
                pieces.append((generation, 0))
        return pieces

    def _read(self, generation: Generation, start: int) -> Optional[LogPosition]:
        """Read one rotated generation from `start`; its resume state if the cap hit."""
        may_split = self.budget == self.max_bytes
        try:
            with open_any(generation.path) as g:
                if not seek_within(g, start):
                    raise EOFError("shorter than the {} bytes read from it".format(start))
                chunk, used, cap_hit = take_lines(g, self.budget, final=True,
                                                   may_split=may_split)
                resume = position(g, generation.st, start + used, None) if cap_hit else None
        except READ_ERRORS as exc:
            self.errors.append("cannot read {}: {}".format(
                generation.path, getattr(exc, "strerror", None) or exc))
            if generation.compressed or self.lost is None:
                self.lost = None  # how much a damaged compressed file held is unknown
            else:
                self.lost += max(0, generation.st.st_size - start)
            return None
        self.files += 1
        self._took(chunk, used)
        return resume

    def _took(self, chunk: Optional[bytes], used: int) -> None:
        if chunk is not None:
            self.chunks.append(chunk)
        self.budget -= used

    def _lost_file(self, size: Optional[int]) -> None:
        offset = self.previous.offset
        unread = size - offset if size is not None and size > offset else 0
        self.lost = None  # what the file got after the last run is gone with it
        how_many = ("at least {} bytes; the rest it got after the last run is unknown".format(
            unread) if unread else "how many is unknown: the file is gone")
        self.errors.append("rotated file not found: lines after byte {} of the previous file "
                           "are lost ({})".format(offset, how_many))

    def _summary(self, truncated: bool) -> Info:
        info = new_info(self.max_bytes - self.budget,
                        self.previous.file is not None or self.files > 0, truncated)
        if info["rotated"]:
            info["rotated_files"] = self.files
        if self.errors:
            info["error"] = "; ".join(self.errors)
            info["lost_bytes"] = self.lost
        return info
