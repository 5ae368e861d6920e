"""User-written text as every report shows it: a job's name above all (whatever its owner
typed; Slurm keeps every character of it), and the other names accounting hands us.

One function for the email, the pages and the PDF, so a name looks the same in each:
control and format characters (line breaks, and bidirectional controls such as U+202E,
which would let a name display reversed, or run its direction on into the text after
it) become spaces, runs of spaces one, and the length is capped. The cap keeps a page
readable and the PDF quick: reportlab's line breaking grows much faster than a long
unbroken word (9 s for a 100,000-character name). Only what is shown is shortened: the
JSON documents keep the whole name.
"""

from __future__ import annotations

import re
import unicodedata

SHOWN_LIMIT = 300  # characters of a name on a page or in the PDF
_SPACES = re.compile(r"\s+")
# Cc: controls (line breaks, ESC); Cf: format characters (the bidi embeddings, overrides
# and isolates, LRM/RLM/ALM, zero-width ones); Zl, Zp: the line and paragraph separators.
_HIDDEN = frozenset({"Cc", "Cf", "Zl", "Zp"})


def one_line(text: str, limit: int) -> str:
    """`text` on one line, without control or format characters, at most `limit`
    characters (the last an ellipsis when it was cut)."""
    kept = "".join(" " if unicodedata.category(c) in _HIDDEN else c for c in text)
    kept = _SPACES.sub(" ", kept).strip()
    return kept if len(kept) <= limit else kept[: limit - 1].rstrip() + "…"


def shown(text: str) -> str:
    """A name as the pages and the PDF show it."""
    return one_line(text, SHOWN_LIMIT)
