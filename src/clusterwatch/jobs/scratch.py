"""Whether a path lies under a configured scratch filesystem, by whole path components.

`/scratch2/x` is not under `/scratch`; `/scratch` itself and `/scratch/x` are. The original
exporter compared the first character of the path, so it never matched.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

_DELETED = " (deleted)"  # how /proc shows a link to a removed file


class ScratchPaths:
    def __init__(self, paths: Iterable[str]) -> None:
        roots: set[str] = set()
        for path in paths:
            if not os.path.isabs(path):
                raise ValueError(f"scratch path must be absolute: {path!r}")
            # /proc shows resolved paths: match the configured spelling and its target.
            roots.add(os.path.normpath(path))
            roots.add(os.path.realpath(path))
        self.roots = tuple(sorted(roots))

    def __bool__(self) -> bool:
        return bool(self.roots)

    def contains(self, path: str) -> bool:
        if not path.startswith("/"):
            return False  # socket:[...], pipe:[...], anon_inode:..., or unreadable
        if path.endswith(_DELETED):
            path = path[: -len(_DELETED)]
        for root in self.roots:
            if root == "/" or path == root or path.startswith(root + "/"):
                return True
        return False
