"""Read the complete lines appended to a log since the previous run, across rotation.

The caller keeps, per log path, the position this module returns (a LogPosition, saved in
the state file in its JSON form: see log_position) and hands it back on the next run. It
identifies the file being read by device, inode *and* a fingerprint (a hash of its first
bytes), because an inode alone is not an identity: logrotate's `compress` gives the rotated
file a new inode (NAME.1 -> NAME.1.gz) and the freed inode is often reused by the new log.

When the log was rotated since (a new inode, a different head, a size below the offset), the
log may have been rotated more than once: the rest of the file read last is read, then every
generation the previous run did not know, oldest first, then the live log from its start.
When the file read last cannot be found, the info says what was lost and why.
"""

# typing.List/Dict/Tuple rather than list[...]: the reporter must run on Python 3.6.

import os
from typing import IO, Dict, List, Optional

from clusterwatch.reporter.line_chunks import last_line_end, take_lines
from clusterwatch.reporter.log_generations import (
    FINGERPRINT_BYTES,
    READ_ERRORS,
    Generation,
    candidates,
    generations,
    head_matches,
    identities,
    open_any,
    written_since,
)
from clusterwatch.reporter.log_position import FileMark, LogPosition
from clusterwatch.reporter.regular_read import open_regular
from clusterwatch.reporter.rotated_read import (
    Read,
    RotatedRead,
    new_info,
    not_known,
    position,
)

DEFAULT_MAX_BYTES = 64 * 1024 * 1024


def _is_same_file(path: str, f: IO[bytes], st: os.stat_result, saved: LogPosition,
                  mark: FileMark) -> bool:
    """Still the file read last time, `mark`, and not shrunk (copytruncate) below the saved
    offset."""
    if not (
        st.st_dev == mark.dev
        and st.st_ino == mark.inode
        and st.st_size >= saved.offset
        and head_matches(f, mark)
    ):
        return False
    if mark.fp_len >= FINGERPRINT_BYTES:
        return True
    # A short head ("2026-10-02 18:2", or nothing) is shared by every log of the day: a
    # rotated file with that head written since the last run means this file is a new one
    # that got the inode back (or a copytruncate), not the old one grown.
    for generation in candidates(not_known(generations(path), saved, {}), mark):
        same_inode = (generation.st.st_dev, generation.st.st_ino) == (st.st_dev, st.st_ino)
        if not same_inode and written_since(generation.st, mark, strict=True):
            try:
                with open_any(generation.path) as rotated:
                    if head_matches(rotated, mark):
                        return False
            except READ_ERRORS:
                continue  # unreadable: cannot be the file we read
    return True


def read_new(path: str, saved: Optional[LogPosition],
             max_bytes: int = DEFAULT_MAX_BYTES) -> Read:
    """Complete lines appended to path since `saved`: (chunks, new position, info). Never
    raises. The new position is None only when there was none and none could be taken.

    info: `bytes` read, `rotated`, `truncated` (the cap stopped the run: the rest waits),
    `first_run`; after a rotation `rotated_files` (rotated generations read from); `error`
    and `lost_bytes` (None when unknown) when lines could not be read.
    """
    try:
        f = open_regular(path)  # a FIFO in the log's place must not hang the run
    except OSError as exc:
        info = new_info()
        info["error"] = f"cannot open {path}: {exc.strerror or type(exc).__name__}"
        if saved is None and isinstance(exc, FileNotFoundError):
            # Absent at the first run: lines it gets later are all new (not skipped as the
            # replaced reporter did), and so are generations rotated from it meanwhile.
            return [], LogPosition(0, _known(generations(path), {})), info
        return [], saved, info
    try:
        with f:
            return _read_open(path, f, saved, max(1, max_bytes))
    except READ_ERRORS as exc:
        info = new_info()
        info["error"] = f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}"
        return [], saved, info


def _known(found: List[Generation], cache: Dict[str, str]) -> List[str]:
    return sorted(set(identities(found, cache).values()))


def _read_open(path: str, f: IO[bytes], previous: Optional[LogPosition],
               max_bytes: int) -> Read:
    st = os.fstat(f.fileno())
    if previous is None:
        info = new_info()
        info["first_run"] = True
        first = position(f, st, last_line_end(f, st.st_size), _known(generations(path), {}))
        return [], first, info
    mark = previous.file
    if mark is not None and _is_same_file(path, f, st, previous, mark):
        known = previous.known
        if known is None:  # a state from before generations were known
            known = _known(generations(path), {})
        start = previous.offset
        f.seek(start)
        chunk, used, cap_hit = take_lines(f, max_bytes, final=False, may_split=True)
        return ([chunk] if chunk else []), position(f, st, start + used, known), new_info(
            used, False, cap_hit)
    return RotatedRead(path, f, st, previous, max_bytes).run()
