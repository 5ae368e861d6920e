"""The rotated generations of one log: which files they are, in which order, and how each is
known again on a later run.

Generations are the log's siblings named NAME.1, NAME.2.gz (logrotate, RotatingFileHandler),
NAME-20261002[.gz] (logrotate dateext) or NAME.2026-10-02_18 (TimedRotatingFileHandler). The
order comes from the names, not from modification times (compressing gives a file a new
time): a higher number is older, a later date is newer, and dated generations count as older
than numbered ones (a log does not mix the two unless its rotation was reconfigured).

A generation is known again by a hash of its first bytes, which a compressed copy keeps
(NAME.1 -> NAME.2.gz changes its inode and its name, not its content); one that cannot be
read is known by its inode.

Python 3.6 compatible, standard library only (see the package docstring).
"""

import bz2
import gzip
import hashlib
import os
import re
import stat
import zlib
from typing import IO, Any, Dict, List, Tuple, Type, cast

from clusterwatch.reporter.log_position import FileMark

_LZMA_ERRORS: Tuple[Type[BaseException], ...] = ()
try:  # a Python built without liblzma still reads plain, .gz and .bz2 logs
    import lzma

    _LZMA_ERRORS = (lzma.LZMAError,)
except ImportError:  # pragma: no cover - depends on the interpreter build
    lzma = None  # type: ignore[assignment]

FINGERPRINT_BYTES = 256
BLOCK = 1024 * 1024
IDENTITY_CHARS = 16  # of the hex hash: 64 bits tell a log's generations apart

# Errors a damaged or vanishing (compressed) file can raise while read.
READ_ERRORS: Tuple[Type[BaseException], ...] = (
    OSError,
    EOFError,
    ValueError,
    zlib.error,
    *_LZMA_ERRORS,
)

# After NAME: a separator, digits (a number or a date), an optional compression suffix.
_SUFFIX = re.compile(r"([.-])(\d[\d_-]*)(\.gz|\.bz2|\.xz)?\Z")
_NUMBER_DIGITS = 5  # NAME.1 to NAME.9999 are numbers; longer digit runs are dates


class Generation(object):
    """One rotated file of a log."""

    __slots__ = ("compressed", "order", "path", "st")

    def __init__(self, path: str, st: os.stat_result, order: Tuple[Any, ...],
                 compressed: bool) -> None:
        self.path = path
        self.st = st
        self.order = order
        self.compressed = compressed


def generations(path: str) -> List[Generation]:
    """The rotated files of the log at `path`, oldest first (a plain file before its
    compressed copy of the same age: while logrotate compresses, the plain one is whole)."""
    directory = os.path.dirname(path) or "."
    base = os.path.basename(path)
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    found = []  # type: List[Generation]
    for name in names:
        suffix = _SUFFIX.match(name, len(base)) if name.startswith(base) else None
        if suffix is None:
            continue
        full = os.path.join(directory, name)
        try:
            st = os.stat(full)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            found.append(Generation(full, st, _order(suffix), suffix.group(3) is not None))
    found.sort(key=lambda generation: generation.order)
    return found


def _order(suffix: Any) -> Tuple[Any, ...]:
    separator, digits, compression = suffix.groups()
    if separator == "." and digits.isdigit() and len(digits) < _NUMBER_DIGITS:
        age = (1, -int(digits), "")  # NAME.2 before NAME.1
    else:
        age = (0, 0, re.sub(r"\D", "", digits))  # NAME-20261001 before NAME-20261002
    return (*age, compression is not None)


def identities(found: List[Generation], cache: Dict[str, str]) -> Dict[str, str]:
    """Each generation's identity by path (`cache` keeps them for the rest of the run)."""
    for generation in found:
        if generation.path not in cache:
            cache[generation.path] = identity(generation)
    return {generation.path: cache[generation.path] for generation in found}


def identity(generation: Generation) -> str:
    try:
        with open_any(generation.path) as f:
            head = read_exact(f, FINGERPRINT_BYTES)
    except READ_ERRORS:
        return "inode:{}:{}".format(generation.st.st_dev, generation.st.st_ino)
    return fingerprint(head)[:IDENTITY_CHARS]


def fingerprint(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_exact(f: IO[bytes], n: int) -> bytes:
    """Read n bytes, or fewer only at end of file (compressed streams return short reads)."""
    parts = []  # type: List[bytes]
    while n > 0:
        part = f.read(min(n, BLOCK))
        if not part:
            break
        parts.append(part)
        n -= len(part)
    return b"".join(parts)


def open_any(path: str) -> IO[bytes]:
    if path.endswith(".gz"):
        return cast(IO[bytes], gzip.open(path, "rb"))
    if path.endswith(".bz2"):
        return cast(IO[bytes], bz2.open(path, "rb"))
    if path.endswith(".xz"):
        if lzma is None:  # pragma: no cover - depends on the interpreter build
            raise OSError("no lzma support in this Python")
        return cast(IO[bytes], lzma.open(path, "rb"))
    return open(path, "rb")


def head_matches(f: IO[bytes], mark: FileMark) -> bool:
    """Whether `f` starts with the bytes `mark` fingerprinted."""
    f.seek(0)
    head = read_exact(f, mark.fp_len)
    return len(head) == mark.fp_len and fingerprint(head) == mark.fp


def written_since(st: os.stat_result, mark: FileMark, strict: bool) -> bool:
    if mark.mtime_ns is None or st.st_size == 0:
        return False
    return st.st_mtime_ns > mark.mtime_ns if strict else st.st_mtime_ns >= mark.mtime_ns


def candidates(found: List[Generation], mark: FileMark,
               oldest_first: bool = False) -> List[Generation]:
    """Generations that may be the file last read: the one with the saved inode first, then
    newest first by modification time; or, when `found` holds only the generations the last
    run did not know, oldest first by name: the file it read is the oldest of those (and an
    inode is no proof: a newer generation may have got it back).

    When the file was shorter than a full fingerprint at the last run, its head does not set
    it apart from older rotated logs of the same day; then only its inode or a modification
    since the last run (older rotated files were last written before it was created or
    truncated) can point at it.
    """
    ranked = []  # type: List[Tuple[bool, int, Any, Generation]]
    weak = mark.fp_len < FINGERPRINT_BYTES
    for generation in found:
        st = generation.st
        same_inode = (st.st_dev, st.st_ino) == (mark.dev, mark.inode)
        # An empty file is only ours if written since; with a head, gzip may have kept the
        # mtime of the last run.
        if weak and not same_inode and not written_since(st, mark, mark.fp_len == 0):
            continue
        if oldest_first:
            ranked.append((False, 0, len(ranked), generation))
        else:
            ranked.append((not same_inode, -st.st_mtime_ns, generation.path, generation))
    ranked.sort(key=lambda r: (r[0], r[1], r[2]))
    return [generation for _, _, _, generation in ranked]
