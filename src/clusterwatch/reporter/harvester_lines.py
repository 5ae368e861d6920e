"""Finding harvester log records in a chunk of bytes without splitting it into lines.

A log holds millions of DEBUG lines for each one a section counts, so each section names a
bytes regex that starts with a literal marker (which `re` scans for at memory speed) and
only the lines holding a marker are matched against the full record pattern and decoded.
A record is its timestamped first line; continuation lines (tracebacks) carry no timestamp,
so a marker found on one never matches `HEAD` and is skipped, as a line-by-line reader would.
"""

import re
from typing import Iterable, Iterator, Match, Optional, Pattern

# `YYYY-MM-DD HH:MM:SS,mmm panda.log.<daemon>: <LEVEL padded> <method> <token> <message>`,
# the token being `<...>` or `:` (LogWrapper without a token). HEAD reads up to the method;
# its groups are the date and the time.
HEAD = rb"(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d),\d{3} \S+ *: \w+ +"

CLASS_RE = re.compile(r"<class '([\w.]+)'>")
TRACEBACK = " Traceback (most recent call last):"
MAX_TEXT = 500


def utc(date: bytes, time: bytes) -> str:
    """The record time as delivered: harvester log times are UTC already."""
    return "{}T{}Z".format(date.decode("ascii"), time.decode("ascii"))


def text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def error_class(message: str) -> Optional[str]:
    """`SSLError` for `<class 'requests.exceptions.SSLError'>`; None without a class."""
    found = CLASS_RE.search(message)
    return found.group(1).rsplit(".", 1)[-1] if found else None


def clip(message: str) -> str:
    """The message without its traceback, at most MAX_TEXT characters."""
    cut = message.find(TRACEBACK)
    if cut >= 0:
        message = message[:cut]
    return message.strip()[:MAX_TEXT]


def records(chunks: Iterable[bytes], marker: Pattern[bytes],
            record: Pattern[bytes]) -> Iterator[Match[bytes]]:
    """The match of `record` at the start of each line holding `marker`, in file order.

    `marker` is a regex starting with a literal, which `re` finds at memory speed; every
    line `record` matches must hold it. Each line is tried once however many markers it
    holds; `match.string` is the chunk. `record` may run past the line's end only in a
    `[^>]*` token (re's fast path, unlike `[^>\\n]*`): callers drop a match whose token
    holds a newline, as a line-by-line reader would never see it.
    """
    for chunk in chunks:
        match = record.match
        rfind = chunk.rfind
        tried = -1
        for found in marker.finditer(chunk):
            start = rfind(b"\n", 0, found.start()) + 1
            if start != tried:
                tried = start
                line = match(chunk, start)
                if line is not None:
                    yield line


def rest_of_line(chunk: bytes, at: int) -> str:
    """The text from `at` to the end of its line."""
    end = chunk.find(b"\n", at)
    return text(chunk[at:end if end >= 0 else len(chunk)])


def line_at(line: Match[bytes]) -> str:
    """The whole first line of the record `line` matched."""
    return rest_of_line(line.string, line.start())
