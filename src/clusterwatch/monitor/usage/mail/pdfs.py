"""The PDFs of one run's emails: each taken from the render cache or drawn once, by a few
worker processes when the run has many.

Drawing the PDF is most of an email's cost (a short job's takes 0.3 s of CPU, a week-long
one's 1.7 s: matplotlib and reportlab, pure Python under the GIL), so a mass ending used to
be drawn one email after the other on one CPU. A run with POOL_FROM emails or more due draws
on up to `render_workers()` processes while it reads the next reports and talks SMTP; each is
a fresh interpreter (spawn: nothing of the run's database connections, SMTP socket or
threads is inherited) that imports only the renderers. A smaller run draws in its own
process, as the pages do.

Every PDF goes through the render cache (`rendered.report_pdf`), the one the pages use: an
email whose PDF `/pdf/<jobid>` has drawn takes it from there, and the page takes the email's.
Two emails of the run with the same PDF (the same render key) share one drawing. A pool that
breaks (a worker killed) is not fatal: the PDF is drawn in the run's own process. The
renderers are imported at the first PDF, not with this module: most MailProg runs only queue
a job whose figures are not final yet, within slurmctld's 120 s.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Union

from clusterwatch.monitor.usage.analysis.summary_json import UsageDocument
from clusterwatch.monitor.usage.metrics.series import JobSeries

PR_SET_PDEATHSIG = 1  # linux/prctl.h
POOL_FROM = 8  # below this, starting interpreters (about 1 s each) costs more than it saves
MAX_WORKERS = 4  # the monitor's web workers and database share the host


def render_workers() -> int:
    """The processes a large run draws on: the CPUs this process may use, at most
    MAX_WORKERS."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, MAX_WORKERS))


def draw(
    cache_dir: Path,
    document: UsageDocument,
    series: Optional[JobSeries],
    series_note: Optional[str],
) -> tuple[bytes, bool]:
    """The PDF, and whether it was drawn (False: the render cache had it). Runs in a worker."""
    from clusterwatch.monitor.usage.rendering.cache import RenderCache
    from clusterwatch.monitor.usage.rendering.rendered import report_pdf

    cache = RenderCache(cache_dir)
    pdf = report_pdf(cache, document, series, series_note)
    return pdf, cache.drawn > 0


def die_with(parent: int) -> None:
    """A worker's start: it is killed when the run's process dies. A run killed by SIGKILL
    (or the OOM killer) would otherwise leave its workers waiting on their queue for good,
    holding its standard output and error open."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: such a worker ends with its machine
        return
    if os.getppid() != parent:  # the run died before prctl took effect
        os._exit(1)


@dataclass
class _Order:
    document: UsageDocument
    series: Optional[JobSeries]
    series_note: Optional[str]
    pending: Optional[Future[tuple[bytes, bool]]] = None  # drawing in a worker
    waiting: int = 1  # emails still to take it
    pdf: Optional[bytes] = None  # once taken by the first of them


Ticket = Union[str, int]  # the render key's file name, or a number for a key-less PDF


class RunPdfs:
    """`order` each email's PDF as soon as its report is read, `take` it when sending."""

    def __init__(self, cache_dir: Path, workers: int = 1) -> None:
        self.cache_dir = cache_dir
        self.workers = workers
        self.drawn = 0  # PDFs drawn by this run
        self.cached = 0  # PDFs the render cache had
        self._orders: dict[Ticket, _Order] = {}
        self._pool: Optional[ProcessPoolExecutor] = None
        self._numbered = 0

    def order(
        self, document: UsageDocument, series: Optional[JobSeries], series_note: Optional[str]
    ) -> Ticket:
        from clusterwatch.monitor.usage.rendering.cache import RenderKind, render_key

        key = render_key(RenderKind.PDF, document, series, "", series_note)
        ticket: Ticket
        if key is None:
            self._numbered += 1
            ticket = self._numbered
        else:
            ticket = key.filename()
        found = self._orders.get(ticket)
        if found is not None:  # the same PDF for another email: one drawing
            found.waiting += 1
            return ticket
        order = _Order(document, series, series_note)
        if self.workers > 1:
            order.pending = self._submit(order)
        self._orders[ticket] = order
        return ticket

    def ready(self, ticket: Ticket) -> bool:
        """Whether `take` would not wait for a worker."""
        pending = self._orders[ticket].pending
        return pending is None or pending.done()

    def take(self, ticket: Ticket) -> bytes:
        """The PDF; raises what drawing it raised."""
        order = self._orders[ticket]
        order.waiting -= 1
        if order.waiting == 0:  # forget it: a run of 1,000 emails holds a few PDFs at once
            del self._orders[ticket]
        if order.pdf is None:
            order.pdf, drew = self._result(order)
            self.drawn += int(drew)
            self.cached += int(not drew)
        return order.pdf

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def __enter__(self) -> RunPdfs:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def _submit(self, order: _Order) -> Optional[Future[tuple[bytes, bool]]]:
        try:
            if self._pool is None:
                self._pool = ProcessPoolExecutor(
                    max_workers=self.workers,
                    mp_context=multiprocessing.get_context("spawn"),
                    initializer=die_with,
                    initargs=(os.getpid(),),
                )
            return self._pool.submit(
                draw, self.cache_dir, order.document, order.series, order.series_note
            )
        except (BrokenProcessPool, RuntimeError, OSError):
            self.workers = 1  # no pool: drawn here, as a small run is
            return None

    def _result(self, order: _Order) -> tuple[bytes, bool]:
        if order.pending is not None:
            try:
                return order.pending.result()
            except BrokenProcessPool:
                self.workers = 1
        return draw(self.cache_dir, order.document, order.series, order.series_note)
