"""Read the complete lines appended to a log since the previous run, across rotation.

The caller keeps, per log path, the dict this module returns (`saved`) and hands it back on
the next run. It identifies the file being read by device, inode *and* a fingerprint (a hash
of its first bytes), because an inode alone is not an identity: logrotate's `compress` gives
the rotated file a new inode (NAME.1 -> NAME.1.gz) and the freed inode is often reused by the
new log.

saved = {"dev", "inode", "offset", "fp", "fp_len", "mtime_ns"}: the file being read, the position
after the last complete line delivered, the hash and length of its first (up to 256) bytes and
its modification time; {"offset": 0} alone means "the log did not exist at the previous run:
read whatever appears from the start". Plain JSON types only.
"""

# typing.List/Dict/Tuple rather than list[...]: the reporter must run on Python 3.6.

import bz2
import gzip
import hashlib
import os
import re
import zlib
from typing import IO, Any, Dict, List, Optional, Tuple, Type, cast

_LZMA_ERRORS: Tuple[Type[BaseException], ...] = ()
try:  # a Python built without liblzma still reads plain, .gz and .bz2 logs
    import lzma

    _LZMA_ERRORS = (lzma.LZMAError,)
except ImportError:  # pragma: no cover - depends on the interpreter build
    lzma = None  # type: ignore[assignment]

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
FINGERPRINT_BYTES = 256
_BLOCK = 1024 * 1024
# How far back from the end the first run looks for the last line boundary.
_FIRST_RUN_LOOKBACK = 1024 * 1024

# Errors a damaged or vanishing (compressed) file can raise while read.
_READ_ERRORS: Tuple[Type[BaseException], ...] = (
    OSError,
    EOFError,
    ValueError,
    zlib.error,
    *_LZMA_ERRORS,
)

# NAME.1, NAME.2.gz (logrotate, RotatingFileHandler), NAME-20261002[.gz] (logrotate dateext),
# NAME.2026-10-02_18 (TimedRotatingFileHandler, panda-common rotating_policy=time).
_ROTATED_SUFFIX = r"[.-]\d[\d_-]*(?:\.gz|\.bz2|\.xz)?"


def _info(nbytes: int = 0, rotated: bool = False, truncated: bool = False) -> Dict[str, Any]:
    return {"bytes": nbytes, "rotated": rotated, "truncated": truncated}


def _fingerprint(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read_exact(f: IO[bytes], n: int) -> bytes:
    """Read n bytes, or fewer only at end of file (compressed streams return short reads)."""
    parts = []  # type: List[bytes]
    while n > 0:
        part = f.read(min(n, _BLOCK))
        if not part:
            break
        parts.append(part)
        n -= len(part)
    return b"".join(parts)


def _valid_saved(saved: Optional[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """The saved position if it is usable, else None (treated as a first run)."""
    if not isinstance(saved, dict) or not saved:
        return None
    offset = saved.get("offset")
    if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
        return None
    if "inode" not in saved:
        return {"offset": 0}
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


def _state(f: IO[bytes], st: os.stat_result, offset: int) -> Dict[str, Any]:
    f.seek(0)
    head = f.read(FINGERPRINT_BYTES)
    return {
        "dev": st.st_dev,
        "inode": st.st_ino,
        "offset": offset,
        "fp": _fingerprint(head),
        "fp_len": len(head),
        "mtime_ns": st.st_mtime_ns,
    }


def _head_matches(f: IO[bytes], saved: Dict[str, Any]) -> bool:
    f.seek(0)
    head = _read_exact(f, saved["fp_len"])
    return len(head) == saved["fp_len"] and _fingerprint(head) == str(saved["fp"])


def _is_same_file(path: str, f: IO[bytes], st: os.stat_result, saved: Dict[str, Any]) -> bool:
    """Still the file read last time, and not shrunk (copytruncate) below the saved offset."""
    if not (
        st.st_dev == saved["dev"]
        and st.st_ino == saved["inode"]
        and st.st_size >= saved["offset"]
        and _head_matches(f, saved)
    ):
        return False
    if saved["fp_len"] >= FINGERPRINT_BYTES:
        return True
    # A short head ("2026-10-02 18:2", or nothing) is shared by every log of the day: a
    # rotated file with that head written since the last run means this file is a new one
    # that got the inode back (or a copytruncate), not the old one grown.
    for candidate, same_inode, cst in _candidates(path, saved):
        if not same_inode and _written_since(cst, saved, strict=True):
            try:
                with _open_any(candidate) as rotated:
                    if _head_matches(rotated, saved):
                        return False
            except _READ_ERRORS:
                continue  # unreadable: cannot be the file we read
    return True


def _last_line_end(f: IO[bytes], size: int) -> int:
    """Offset just after the last newline, so a line still being written is read next run."""
    start = max(0, size - _FIRST_RUN_LOOKBACK)
    f.seek(start)
    tail = _read_exact(f, size - start)
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
    data = _read_exact(f, budget + 1)
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


def _candidates(path: str, saved: Dict[str, Any]) -> List[Tuple[str, bool, os.stat_result]]:
    """Rotated siblings of path that may be the file last read, as (path, has the saved
    inode, stat): the one with the saved inode first, then newest first.

    When the file was shorter than a full fingerprint at the last run, its head does not set
    it apart from older rotated logs of the same day; then only its inode or a modification
    since the last run (older rotated files were last written before it was created or
    truncated) can point at it.
    """
    directory = os.path.dirname(path) or "."
    pattern = re.compile(re.escape(os.path.basename(path)) + _ROTATED_SUFFIX + r"\Z")
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    ranked = []  # type: List[Tuple[bool, int, str, os.stat_result]]
    for name in names:
        if not pattern.match(name):
            continue
        full = os.path.join(directory, name)
        try:
            st = os.stat(full)
        except OSError:
            continue
        same_inode = (st.st_dev, st.st_ino) == (saved["dev"], saved["inode"])
        weak = saved["fp_len"] < FINGERPRINT_BYTES
        # An empty file is only ours if written since; with a head, gzip may have kept the
        # mtime of the last run.
        if weak and not same_inode and not _written_since(st, saved, saved["fp_len"] == 0):
            continue
        ranked.append((not same_inode, -st.st_mtime_ns, full, st))
    ranked.sort(key=lambda r: (r[0], r[1], r[2]))
    return [(full, not other, st) for other, _, full, st in ranked]


def _written_since(st: os.stat_result, saved: Dict[str, Any], strict: bool) -> bool:
    mtime_ns = saved.get("mtime_ns")
    if not isinstance(mtime_ns, int) or st.st_size == 0:
        return False
    return st.st_mtime_ns > mtime_ns if strict else st.st_mtime_ns >= mtime_ns


def _open_any(path: str) -> IO[bytes]:
    if path.endswith(".gz"):
        return cast(IO[bytes], gzip.open(path, "rb"))
    if path.endswith(".bz2"):
        return cast(IO[bytes], bz2.open(path, "rb"))
    if path.endswith(".xz"):
        if lzma is None:  # pragma: no cover - depends on the interpreter build
            raise OSError("no lzma support in this Python")
        return cast(IO[bytes], lzma.open(path, "rb"))
    return open(path, "rb")


def _seek_within(f: IO[bytes], offset: int) -> bool:
    """Move to offset; False if the file is shorter (compressed streams seek by reading)."""
    if offset == 0:
        f.seek(0)
        return True
    f.seek(offset - 1)
    return f.read(1) != b""


def _finish_rotated(
    path: str, saved: Dict[str, Any], budget: int, max_bytes: int
) -> Optional[Tuple[Optional[bytes], int, Optional[Dict[str, Any]]]]:
    """Read the rest of the file last read, now rotated away; None if it cannot be found.

    Returns (chunk, bytes consumed, where to resume it if the cap stopped the read).
    """
    for candidate, _, st in _candidates(path, saved):
        try:
            with _open_any(candidate) as f:
                if not _head_matches(f, saved):
                    continue
                if not _seek_within(f, saved["offset"]):
                    continue  # same first bytes, but not the file we had read this far
                chunk, used, cap_hit = _take_lines(
                    f, budget, final=True, may_split=budget == max_bytes
                )
                resume = _state(f, st, saved["offset"] + used) if cap_hit else None
                return chunk, used, resume
        except _READ_ERRORS:
            continue  # unreadable or damaged: look at the other candidates
    return None


def read_new(
    path: str, saved: Optional[Dict[str, Any]], max_bytes: int = DEFAULT_MAX_BYTES
) -> Tuple[List[bytes], Dict[str, Any], Dict[str, Any]]:
    """Complete lines appended to path since `saved`: (chunks, new_saved, info). Never raises."""
    previous = _valid_saved(saved)
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed on every path below
    except OSError as exc:
        info = _info()
        info["error"] = f"cannot open {path}: {exc.strerror or type(exc).__name__}"
        if previous is None and isinstance(exc, FileNotFoundError):
            # Absent at the first run: lines it gets later are all new (not skipped as the
            # replaced reporter did).
            return [], {"offset": 0}, info
        return [], _copy(saved), info
    try:
        with f:
            return _read_open(path, f, previous, max(1, max_bytes))
    except _READ_ERRORS as exc:
        info = _info()
        info["error"] = f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}"
        return [], _copy(saved), info


def _copy(saved: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    return dict(saved) if isinstance(saved, dict) else {}


def _read_open(
    path: str, f: IO[bytes], previous: Optional[Dict[str, Any]], max_bytes: int
) -> Tuple[List[bytes], Dict[str, Any], Dict[str, Any]]:
    st = os.fstat(f.fileno())
    if previous is None:
        info = _info()
        info["first_run"] = True
        return [], _state(f, st, _last_line_end(f, st.st_size)), info

    chunks = []  # type: List[bytes]
    budget = max_bytes
    consumed = 0
    rotated = False
    error = None  # type: Optional[str]
    start = 0
    if "inode" in previous:
        if _is_same_file(path, f, st, previous):
            start = previous["offset"]
        else:
            rotated = True
            found = _finish_rotated(path, previous, budget, max_bytes)
            if found is None and previous["fp_len"] > 0:
                error = (
                    f"rotated file not found: lines after byte {previous['offset']} "
                    "of the previous file are lost"
                )
            elif found is not None:
                chunk, used, resume = found
                if chunk is not None:
                    chunks.append(chunk)
                consumed += used
                budget -= used
                if resume is not None:
                    # Resume the rotated file next run; the new one waits its turn.
                    return chunks, resume, _info(consumed, True, True)

    f.seek(start)
    chunk, used, cap_hit = _take_lines(f, budget, final=False, may_split=budget == max_bytes)
    if chunk is not None:
        chunks.append(chunk)
    consumed += used
    info = _info(consumed, rotated, cap_hit)
    if error is not None:
        info["error"] = error
    return chunks, _state(f, st, start + used), info
