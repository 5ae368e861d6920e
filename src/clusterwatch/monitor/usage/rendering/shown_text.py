"""User-written text as every report shows it: a job's name above all (whatever its owner
typed; Slurm keeps every character of it), and the other names accounting hands us.

One function for the email, the pages and the PDF, so a name looks the same in each:
control and format characters (line breaks, and bidirectional controls such as U+202E,
which would let a name display reversed, or run its direction on into the text after
it) become spaces, runs of spaces one, a run of combining marks is cut short, and the length
is capped. The cap keeps a page
readable and the PDF quick: reportlab's line breaking grows much faster than a long
unbroken word (9 s for a 100,000-character name). Only what is shown is shortened: the
JSON documents keep the whole name.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator

SHOWN_LIMIT = 300  # characters of a name on a page or in the PDF
# Combining marks in a row on one letter: no script needs more (Hebrew with points and
# cantillation stacks 4, Vietnamese 2). Hundreds of them draw a tower of accents over
# the page's other lines while counting as characters of an ordinary length.
MARKS_LIMIT = 8
_SPACES = re.compile(r"\s+")
# Cc: controls (line breaks, ESC); Cf: format characters (the bidi embeddings, overrides
# and isolates, LRM/RLM/ALM, zero-width ones); Zl, Zp: the line and paragraph separators.
_HIDDEN = frozenset({"Cc", "Cf", "Zl", "Zp"})
_STACKED = frozenset({"Mn", "Me"})  # non-spacing and enclosing marks: drawn over a letter


def one_line(text: str, limit: int) -> str:
    """`text` on one line, without control or format characters, at most MARKS_LIMIT
    combining marks on a letter, at most `limit` characters (the last an ellipsis when it
    was cut)."""
    kept = _SPACES.sub(" ", "".join(_visible(text))).strip()
    return kept if len(kept) <= limit else kept[: limit - 1].rstrip() + "…"


def _visible(text: str) -> Iterator[str]:
    marks = 0
    for c in text:
        category = unicodedata.category(c)
        if category in _HIDDEN:
            marks = 0
            yield " "
        elif category in _STACKED:
            marks += 1
            if marks <= MARKS_LIMIT:
                yield c
        else:
            marks = 0
            yield c


def shown(text: str) -> str:
    """A name as the pages and the PDF show it."""
    return one_line(text, SHOWN_LIMIT)
