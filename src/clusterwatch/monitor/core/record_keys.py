"""The key rule: which names a record may be posted under (usually a short host name).

In the kernel because ingest (what a host token may write), the harvester registry and the
admin's form all refuse the same names.
"""

from __future__ import annotations

import re

KEY_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}"
KEY_RE = re.compile(KEY_PATTERN)


def valid_key(key: str) -> bool:
    return KEY_RE.fullmatch(key) is not None
