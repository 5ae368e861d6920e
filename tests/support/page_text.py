"""A monitor page's text as a person reads it, for assertions on what a page says (the pages'
tests in tests/monitor and the integration chains that end on a page)."""

from __future__ import annotations

import re
from typing import Any


def text_of(response: Any) -> str:
    """The page as a person reads it: inline tags dropped, other tags as spaces, entities
    kept, spaces collapsed (the style sheet too, which no assertion looks for)."""
    html = re.sub(r"</?(?:time|span|strong|a|em)\b[^>]*>", "", response.content.decode())
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())
