"""Read the complete lines appended to a log since the previous run, across rotation.

The caller keeps, per log path, the dict this module returns (`saved`) and hands it back on
the next run. It identifies the file being read by device, inode *and* a fingerprint (a hash
of its first bytes), because an inode alone is not an identity: logrotate's `compress` gives
the rotated file a new inode (NAME.1 -> NAME.1.gz) and the freed inode is often reused by the
new log.

saved = {"dev", "inode", "offset", "fp", "fp_len", "mtime_ns", "size", "known"}: the file
being read, the position after the last complete line delivered, the hash and length of its
first (up to 256) bytes, its modification time and size, and the identities of the log's
rotated generations that are read or older (see log_generations). {"offset": 0} (with
"known") means "the log did not exist at the previous run: read whatever appears from the
start". Plain JSON types only.

When the log was rotated since (a new inode, a different head, a size below the offset), the
log may have been rotated more than once: the rest of the file read last is read, then every
generation the previous run did not know, oldest first, then the live log from its start.
When the file read last cannot be found, the info says what was lost and why.
"""

# typing.List/Dict/Tuple rather than list[...]: the reporter must run on Python 3.6.

import os
from typing import IO, Any, Dict, List, Optional, Tuple

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
    read_exact,
    written_since,
)

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
MAX_KNOWN = 1000  # generation identities kept per log: far above any rotation count
# How far back from the end the first run looks for the last line boundary.
_FIRST_RUN_LOOKBACK = 1024 * 1024

Info = Dict[str, Any]
Read = Tuple[List[bytes], Dict[str, Any], Info]


def _info(nbytes: int = 0, rotated: bool = False, truncated: bool = False) -> Info:
    return {"bytes": nbytes, "rotated": rotated, "truncated": truncated}


def _valid_saved(saved: Optional[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """The saved position if it is usable, else None (treated as a first run)."""
    if not isinstance(saved, dict) or not saved:
        return None
    offset = saved.get("offset")
    if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
        return None
    if "inode" not in saved:
        return {"offset": 0, "known": saved.get("known")}
    for key in ("dev", "inode", "fp_len"):
        value = saved.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            return None
    if not isinstance(saved.get("fp"), str):
        return None
    if offset > 0 and saved["fp_len"] == 0:
        return None
    return saved


def is_position(saved: Any) -> bool:
    """Whether `saved` is a `saved` this module gave out ({} when it had none to give)."""
    return saved == {} or _valid_saved(saved) is not None


def _state(f: IO[bytes], st: os.stat_result, offset: int, known: Any) -> Dict[str, Any]:
    f.seek(0)
    head = f.read(FINGERPRINT_BYTES)
    state = {
        "dev": st.st_dev,
        "inode": st.st_ino,
        "offset": offset,
        "fp": fingerprint(head),
        "fp_len": len(head),
        "mtime_ns": st.st_mtime_ns,
        "size": st.st_size,
    }
    if isinstance(known, list):
        state["known"] = known[-MAX_KNOWN:]
    return state


def _is_same_file(path: str, f: IO[bytes], st: os.stat_result, saved: Dict[str, Any]) -> bool:
    """Still the file read last time, and not shrunk (copytruncate) below the saved offset."""
    if not (
        st.st_dev == saved["dev"]
        and st.st_ino == saved["inode"]
        and st.st_size >= saved["offset"]
        and head_matches(f, saved)
    ):
        return False
    if saved["fp_len"] >= FINGERPRINT_BYTES:
        return True
    # A short head ("2026-10-02 18:2", or nothing) is shared by every log of the day: a
    # rotated file with that head written since the last run means this file is a new one
    # that got the inode back (or a copytruncate), not the old one grown.
    for generation in candidates(generations(path), saved):
        same_inode = (generation.st.st_dev, generation.st.st_ino) == (st.st_dev, st.st_ino)
        if not same_inode and written_since(generation.st, saved, strict=True):
            try:
                with open_any(generation.path) as rotated:
                    if head_matches(rotated, saved):
                        return False
            except READ_ERRORS:
                continue  # unreadable: cannot be the file we read
    return True


def _last_line_end(f: IO[bytes], size: int) -> int:
    """Offset just after the last newline, so a line still being written is read next run."""
    start = max(0, size - _FIRST_RUN_LOOKBACK)
    f.seek(start)
    tail = read_exact(f, size - start)
    cut = tail.rfind(b"\n")
    if cut >= 0:
        return start + cut + 1
    # No line boundary in the window: a small file holds one unfinished line (read it when it
    # is finished); a huge one without newlines is not a log worth replaying.
    return 0 if start == 0 else size


def _take_lines(
    f: IO[bytes], budget: int, final: bool, may_split: bool
) -> Tuple[Optional[bytes], int, bool]:
    """Read complete lines from f's position, at most budget bytes.

    Returns (chunk or None, bytes consumed, cap_hit). In a final (rotated) file the
    unterminated last line is delivered with a newline added: nothing will ever finish it.
    A line longer than a whole run's cap (may_split) is split at the cap so that the reader
    always moves on; a shorter one that does not fit the rest of a budget waits for next run.
    """
    data = read_exact(f, budget + 1)
    cap_hit = len(data) > budget
    if cap_hit:
        data = data[:budget]
    if not data:
        return None, 0, cap_hit
    if final and not cap_hit:
        return (data if data.endswith(b"\n") else data + b"\n"), len(data), False
    cut = data.rfind(b"\n") + 1
    if cut > 0:
        return data[:cut], cut, cap_hit
    if cap_hit and may_split:
        return data + b"\n", len(data), True
    return None, 0, cap_hit


def _seek_within(f: IO[bytes], offset: int) -> bool:
    """Move to offset; False if the file is shorter (compressed streams seek by reading)."""
    if offset == 0:
        f.seek(0)
        return True
    f.seek(offset - 1)
    return f.read(1) != b""


def _locate(found: List[Generation], saved: Dict[str, Any]) -> Optional[Generation]:
    """The generation that is the file last read (its head, and at least `offset` bytes)."""
    for generation in candidates(found, saved):
        try:
            with open_any(generation.path) as f:
                if head_matches(f, saved) and _seek_within(f, saved["offset"]):
                    return generation
        except READ_ERRORS:
            continue  # unreadable or damaged: look at the other candidates
    return None


def read_new(path: str, saved: Optional[Dict[str, Any]],
             max_bytes: int = DEFAULT_MAX_BYTES) -> Read:
    """Complete lines appended to path since `saved`: (chunks, new_saved, info). Never raises.

    info: `bytes` read, `rotated`, `truncated` (the cap stopped the run: the rest waits),
    `first_run`; after a rotation `rotated_files` (rotated generations read from); `error`
    and `lost_bytes` (None when unknown) when lines could not be read.
    """
    previous = _valid_saved(saved)
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed on every path below
    except OSError as exc:
        info = _info()
        info["error"] = f"cannot open {path}: {exc.strerror or type(exc).__name__}"
        if previous is None and isinstance(exc, FileNotFoundError):
            # Absent at the first run: lines it gets later are all new (not skipped as the
            # replaced reporter did), and so are generations rotated from it meanwhile.
            return [], {"offset": 0, "known": _known(generations(path), {})}, info
        return [], _copy(saved), info
    try:
        with f:
            return _read_open(path, f, previous, max(1, max_bytes))
    except READ_ERRORS as exc:
        info = _info()
        info["error"] = f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}"
        return [], _copy(saved), info


def _copy(saved: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    return dict(saved) if isinstance(saved, dict) else {}


def _known(found: List[Generation], cache: Dict[str, str]) -> List[str]:
    return sorted(set(identities(found, cache).values()))


def _read_open(path: str, f: IO[bytes], previous: Optional[Dict[str, Any]],
               max_bytes: int) -> Read:
    st = os.fstat(f.fileno())
    if previous is None:
        info = _info()
        info["first_run"] = True
        known = _known(generations(path), {})
        return [], _state(f, st, _last_line_end(f, st.st_size), known), info
    if "inode" in previous and _is_same_file(path, f, st, previous):
        known = previous.get("known")
        if not isinstance(known, list):  # a state from before generations were known
            known = _known(generations(path), {})
        start = previous["offset"]
        f.seek(start)
        chunk, used, cap_hit = _take_lines(f, max_bytes, final=False, may_split=True)
        return ([chunk] if chunk else []), _state(f, st, start + used, known), _info(
            used, False, cap_hit)
    return _RotatedRead(path, f, st, previous, max_bytes).run()


class _RotatedRead(object):
    """One run's read of a log rotated since the last run (or absent at it)."""

    def __init__(self, path: str, f: IO[bytes], st: os.stat_result,
                 previous: Dict[str, Any], max_bytes: int) -> None:
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
                # reads the generations after it (not known yet), then the live log.
                waiting = set(self.ids[g.path] for g, _ in pieces[n + 1:])
                known = sorted(set(self.ids.values()) - waiting)
                return self.chunks, dict(resume, known=known[-MAX_KNOWN:]), self._info(True)
        self.f.seek(0)
        may_split = self.budget == self.max_bytes
        chunk, used, cap_hit = _take_lines(self.f, self.budget, final=False,
                                           may_split=may_split)
        self._took(chunk, used)
        state = _state(self.f, self.st, used, sorted(set(self.ids.values())))
        return self.chunks, state, self._info(cap_hit)

    def _pieces(self) -> List[Tuple[Generation, int]]:
        """(generation, where to start) to read before the live log, in order."""
        previous = self.previous
        pieces = []  # type: List[Tuple[Generation, int]]
        last = None  # type: Optional[Generation]
        if "inode" in previous:
            last = _locate(self.found, previous)
            if last is not None:
                pieces.append((last, previous["offset"]))
            elif previous["fp_len"] > 0:
                self._lost_file()
        known = previous.get("known")
        if isinstance(known, list):
            newer = [g for g in self.found if self.ids[g.path] not in set(known)]
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

    def _read(self, generation: Generation, start: int) -> Optional[Dict[str, Any]]:
        """Read one rotated generation from `start`; its resume state if the cap hit."""
        may_split = self.budget == self.max_bytes
        try:
            with open_any(generation.path) as g:
                if not _seek_within(g, start):
                    raise EOFError("shorter than the {} bytes read from it".format(start))
                chunk, used, cap_hit = _take_lines(g, self.budget, final=True,
                                                   may_split=may_split)
                resume = _state(g, generation.st, start + used, None) if cap_hit else None
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

    def _lost_file(self) -> None:
        previous = self.previous
        offset = previous["offset"]
        size = previous.get("size")
        unread = size - offset if isinstance(size, int) and size > offset else 0
        self.lost = None  # what the file got after the last run is gone with it
        how_many = ("at least {} bytes; the rest it got after the last run is unknown".format(
            unread) if unread else "how many is unknown: the file is gone")
        self.errors.append("rotated file not found: lines after byte {} of the previous file "
                           "are lost ({})".format(offset, how_many))

    def _info(self, truncated: bool) -> Info:
        info = _info(self.max_bytes - self.budget, "inode" in self.previous or self.files > 0,
                     truncated)
        if info["rotated"]:
            info["rotated_files"] = self.files
        if self.errors:
            info["error"] = "; ".join(self.errors)
            info["lost_bytes"] = self.lost
        return info
