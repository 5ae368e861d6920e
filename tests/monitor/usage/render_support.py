"""Documents and series for the plot, PDF and render-cache tests, built the way the app builds
them (analysis, rules, the JSON document), and readers of what the renderers give back."""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any, Callable, Optional

from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from clusterwatch.monitor.usage.accounting.interface import JobRecord
from clusterwatch.monitor.usage.analysis.figures import analyse
from clusterwatch.monitor.usage.analysis.rules import check
from clusterwatch.monitor.usage.analysis.summary_json import UsageDocument, usage_document
from clusterwatch.monitor.usage.metrics.prometheus_api import Series
from clusterwatch.monitor.usage.metrics.series import JobSeries
from tests.monitor.usage.usage_support import START, STEP

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def document_of(job: JobRecord, series: Optional[JobSeries], **changes: Any) -> UsageDocument:
    summary = analyse(job, series)
    document = usage_document(job, summary, check(job, summary))
    document.update(changes)  # type: ignore[typeddict-item]
    return document


def png_size(data: bytes) -> tuple[int, int]:
    """Width and height from the PNG's IHDR chunk."""
    assert data[:8] == PNG_SIGNATURE
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def long_series(value_at: Callable[[float], float], duration: float, step: float = STEP,
                node: str = "node01", **labels: str) -> Series:
    t0 = START.timestamp()
    return Series({"instance": node, **labels},
                  tuple((t0 + i * step, float(value_at(i * step)))
                        for i in range(int(duration // step) + 1)))


def span_series(duration: float, samples: int, step: float = STEP,
                **found: Sequence[Series]) -> JobSeries:
    t0 = START.timestamp()
    return JobSeries(t0, t0 + duration, step, samples,
                     {key: tuple(value) for key, value in found.items()})


def curves(figure: Figure) -> list[Line2D]:
    """The plotted curves: every line but the dashed reference."""
    return [line for line in figure.axes[0].get_lines() if line.get_linestyle() != "--"]


def references(figure: Figure) -> list[Line2D]:
    return [line for line in figure.axes[0].get_lines() if line.get_linestyle() == "--"]


def figure_texts(figure: Figure) -> str:
    return "\n".join(text.get_text() for text in figure.texts)
