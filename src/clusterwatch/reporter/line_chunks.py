"""Complete lines from an open log file: where the last one ends, and the next ones within a
byte budget.

Python 3.6 compatible, standard library only (see the package docstring).
"""

from typing import IO, Optional, Tuple

from clusterwatch.reporter.log_generations import read_exact

# How far back from the end the first run looks for the last line boundary.
FIRST_RUN_LOOKBACK = 1024 * 1024


def last_line_end(f: IO[bytes], size: int) -> int:
    """Offset just after the last newline, so a line still being written is read next run."""
    start = max(0, size - FIRST_RUN_LOOKBACK)
    f.seek(start)
    tail = read_exact(f, size - start)
    cut = tail.rfind(b"\n")
    if cut >= 0:
        return start + cut + 1
    # No line boundary in the window: a small file holds one unfinished line (read it when it
    # is finished); a huge one without newlines is not a log worth replaying.
    return 0 if start == 0 else size


def take_lines(
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


def seek_within(f: IO[bytes], offset: int) -> bool:
    """Move to offset; False if the file is shorter (compressed streams seek by reading)."""
    if offset == 0:
        f.seek(0)
        return True
    f.seek(offset - 1)
    return f.read(1) != b""
