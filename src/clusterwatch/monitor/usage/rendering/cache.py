"""Rendered plots, pies and PDFs kept on disk, so an ended job's images are drawn once.

A file is named by its key: the kind, the job, the metric, and a digest of everything the
image depends on (the document, the series' shape, the note shown instead of a plot, the
renderer's version and matplotlib's and reportlab's). Files are written atomically (a
temporary file and a rename), mode 600 in a mode-700 directory, and each carries a SHA-256
of its content: a truncated, corrupt or unreadable file is drawn again, never served. The
directory is bounded: past `max_bytes`, the least recently used files are removed. A cache
that cannot be used (a full disk, a directory that is not ours) costs a render, never a
failed request: it is logged and the fresh bytes are returned.
"""

from __future__ import annotations

import contextlib
import enum
import hashlib
import json
import logging
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from clusterwatch.atomic_write import write_atomically
from clusterwatch.monitor.usage.analysis.summary_json import UsageDocument
from clusterwatch.monitor.usage.metrics.series import JobSeries
from clusterwatch.regular_file import NotRegularFile, read_regular

# Bump when the drawings change, so images drawn by an older version are not served.
RENDER_VERSION = "2"  # 2: a counter's rounded point is no reset (analysis/timeseries.py)
DEFAULT_MAX_BYTES = 256 * 1024 * 1024
MAGIC = b"cwrender1\n"
_DIGEST_BYTES = 32
_OURS = re.compile(r"[0-9A-Za-z_+-]+-[0-9a-f]{40}")  # what filename() makes: all we remove
_log = logging.getLogger(__name__)


class RenderKind(enum.Enum):
    """What is drawn; the value is part of a kept file's name and of its digest, so files
    kept by earlier versions keep their keys."""

    PLOT = "plot"
    PIE = "pie"
    PDF = "pdf"


@dataclass(frozen=True)
class RenderKey:
    kind: RenderKind
    jobid: str
    metric: str  # "" for a pie or a PDF
    digest: str

    def filename(self) -> str:
        # The digest makes the name unique; the rest, reduced to safe characters, is for
        # people listing the directory.
        readable = re.sub(r"[^0-9A-Za-z_+]", "_", f"{self.kind.value}-{self.jobid}-{self.metric}")
        return f"{readable[:80]}-{self.digest[:40]}"


def render_key(kind: RenderKind, document: UsageDocument, series: Optional[JobSeries],
               metric: str = "", series_note: Optional[str] = None) -> Optional[RenderKey]:
    """The key of an image of an ended job; None for a job still running (its images change
    with every scrape, so they are not kept)."""
    if document["running"] or document["end"] is None:
        return None
    import matplotlib  # only where something is drawn: half a second of import
    import reportlab

    identity = json.dumps({
        "version": [RENDER_VERSION, matplotlib.__version__, reportlab.Version],
        "kind": kind.value, "metric": metric, "note": series_note, "document": document,
        "series": series_shape(series)}, sort_keys=True, default=str)
    return RenderKey(kind, document["jobid"], metric,
                     hashlib.sha256(identity.encode()).hexdigest())


def series_shape(series: Optional[JobSeries]) -> object:
    """What tells one reading of a job's series from another without hashing every point:
    the grid, and per series its labels, point count and first and last points (retention
    dropping the early points changes the count and the first point)."""
    if series is None:
        return None
    return {"grid": [series.start, series.end, series.step, series.samples],
            "series": {key: [[sorted(s.labels.items()), len(s.points), s.points[:1],
                              s.points[-1:]] for s in found]
                       for key, found in sorted(series.series.items())}}


class RenderCache:
    def __init__(self, directory: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.directory = directory
        self.max_bytes = max_bytes
        self.drawn = 0  # images drawn through this cache (not found intact in it)

    def get_or_render(self, key: Optional[RenderKey], render: Callable[[], bytes]) -> bytes:
        """The kept bytes of `key` when intact, else `render()`'s, kept for next time."""
        if key is None:
            self.drawn += 1
            return render()
        path = self.directory / key.filename()
        kept = self._read(path)
        if kept is not None:
            return kept
        self.drawn += 1
        fresh = render()
        self._write(path, fresh)
        return fresh

    def _read(self, path: Path) -> Optional[bytes]:
        try:
            stored = read_regular(path)
        except (OSError, NotRegularFile) as problem:
            _log.warning("render cache: %s unreadable (%s); drawing it again", path.name,
                         problem)
            return None
        if stored is None:
            return None
        head = len(MAGIC) + _DIGEST_BYTES
        content = stored[head:]
        if (stored[:len(MAGIC)] != MAGIC
                or hashlib.sha256(content).digest() != stored[len(MAGIC):head]):
            _log.warning("render cache: %s is damaged; drawing it again", path.name)
            return None
        with contextlib.suppress(OSError):
            os.utime(path)  # recently used: the last to be removed
        return content

    def _write(self, path: Path, content: bytes) -> None:
        try:
            self._prepare_directory()
            write_atomically(path, MAGIC + hashlib.sha256(content).digest() + content,
                             mode=0o600, durable=False)
            self._trim()
        except OSError as problem:
            _log.warning("render cache: not kept (%s)", problem)

    def _prepare_directory(self) -> None:
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        if self.directory.stat().st_mode & 0o077:
            os.chmod(self.directory, 0o700)  # images of other people's jobs: ours alone

    def _trim(self) -> None:
        files = []
        for entry in os.scandir(self.directory):
            with contextlib.suppress(OSError):
                if _OURS.fullmatch(entry.name) and entry.is_file(follow_symlinks=False):
                    info = entry.stat(follow_symlinks=False)
                    files.append((info.st_mtime, info.st_size, entry.path))
        total = sum(size for _, size, _ in files)
        for _, size, name in sorted(files):
            if total <= self.max_bytes:
                break
            with contextlib.suppress(FileNotFoundError):
                os.unlink(name)
            total -= size
