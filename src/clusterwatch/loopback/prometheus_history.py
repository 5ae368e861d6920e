"""A real Prometheus that already holds past series: written as OpenMetrics text, turned into
TSDB blocks by `promtool tsdb create-blocks-from openmetrics` in its data directory before
it starts, then served by the Debian `prometheus` (clusterwatch.loopback.services).

Backfilled blocks are how a monitor meets a job that ended hours ago: the series answer
range queries exactly as scraped ones would, without waiting hours for them. Prometheus
loads blocks only at start-up, so the history is fixed for the life of the server.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterable, Iterator, Sequence
from itertools import groupby
from pathlib import Path
from typing import Optional

from clusterwatch.loopback.job_series import COUNTER, SeriesSamples
from clusterwatch.loopback.programs import run_program
from clusterwatch.loopback.services import Service, prometheus, require_binary

BACKFILL_TIMEOUT_S = 300.0


def openmetrics_text(series: Iterable[SeriesSamples]) -> str:
    """The series as OpenMetrics text with a timestamp on every sample.

    Each metric family is written once, with its TYPE, all its series together and each
    series' points in time order (what the format and promtool require); `# EOF` ends it.
    """
    lines: list[str] = []
    ordered = sorted(series, key=lambda s: s.metric)
    for metric, members in groupby(ordered, key=lambda s: s.metric):
        group = list(members)
        kinds = {s.kind for s in group}
        if len(kinds) != 1:
            raise ValueError(f"{metric} is written as more than one type: {sorted(kinds)}")
        kind = kinds.pop()
        family = metric[:-len("_total")] if kind == COUNTER and metric.endswith("_total") \
            else metric
        lines.append(f"# TYPE {family} {kind}")
        for one in group:
            labels = ",".join(f'{name}="{_escape(value)}"' for name, value in one.labels)
            selector = f"{metric}{{{labels}}}" if labels else metric
            lines.extend(f"{selector} {_number(value)} {at:.3f}"
                         for at, value in sorted(one.points))
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


def backfill(series: Iterable[SeriesSamples], data_dir: Path, *,
             promtool: Optional[str] = None, timeout_s: float = BACKFILL_TIMEOUT_S) -> Path:
    """Writes the series to `data_dir/../history.om` and turns them into blocks in
    `data_dir` (made if missing). Returns the OpenMetrics file, kept for reading.
    ProgramFailed, ending with promtool's output, when it refuses them or runs too long."""
    exe = promtool or require_binary("promtool")
    data_dir.mkdir(parents=True, exist_ok=True)
    source = data_dir.parent / "history.om"
    source.write_text(openmetrics_text(series), encoding="utf-8")
    run_program([exe, "tsdb", "create-blocks-from", "openmetrics", str(source), str(data_dir)],
                "promtool tsdb create-blocks-from openmetrics", timeout_s)
    return source


@contextlib.contextmanager
def prometheus_with_history(series: Sequence[SeriesSamples], workdir: Path, *,
                            binary: Optional[str] = None,
                            promtool: Optional[str] = None) -> Iterator[Service]:
    """Prometheus on 127.0.0.1 serving `series` (and scraping nothing), its files in
    `workdir`; stopped when the block ends. MissingComponent before anything is written
    when prometheus or promtool is not installed."""
    exe = binary or require_binary("prometheus")
    tool = promtool or require_binary("promtool")
    # services.prometheus keeps its TSDB in workdir/data: the blocks must be there first.
    backfill(series, Path(workdir) / "data", promtool=tool)
    with prometheus({}, workdir, binary=exe) as service:
        yield service


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))  # byte counts and sizes read as written
    return repr(float(value))
