"""Past series in a real Prometheus: the OpenMetrics text promtool reads, its blocks, and
range queries that give the planned values back; promtool's refusals and absence said."""

from __future__ import annotations

import json
import math
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from clusterwatch.loopback.job_series import COUNTER, GAUGE, JobPlan, SeriesSamples, Usage, history
from clusterwatch.loopback.programs import ProgramFailed
from clusterwatch.loopback.prometheus_history import (
    backfill,
    openmetrics_text,
    prometheus_with_history,
)
from clusterwatch.loopback.services import MissingComponent
from tests.components import need_binary

START = 1_700_000_000.0


def samples(metric: str, kind: str, points: list[tuple[float, float]],
            **labels: str) -> SeriesSamples:
    return SeriesSamples(metric, kind, tuple(labels.items()), tuple(points))


def test_it_writes_each_family_once_with_its_type_and_points_in_order() -> None:
    text = openmetrics_text([
        samples("jobs_threads", GAUGE, [(START + 30, 4), (START, 3)], jobid="1"),
        samples("jobs_cpu_seconds_total", COUNTER, [(START, 1.5)], jobid="1"),
        samples("jobs_threads", GAUGE, [(START, 7)], jobid="2"),
    ])
    assert text.splitlines() == [
        "# TYPE jobs_cpu_seconds counter",
        'jobs_cpu_seconds_total{jobid="1"} 1.5 1700000000.000',
        "# TYPE jobs_threads gauge",
        'jobs_threads{jobid="1"} 3 1700000000.000',
        'jobs_threads{jobid="1"} 4 1700000030.000',
        'jobs_threads{jobid="2"} 7 1700000000.000',
        "# EOF",
    ]


def test_it_escapes_label_values_and_writes_special_numbers() -> None:
    text = openmetrics_text([samples("m", GAUGE, [(START, math.nan), (START + 1, math.inf),
                                                  (START + 2, -math.inf), (START + 3, 1e300)],
                                     name='a "quoted"\\ name\nwith a newline')])
    lines = text.splitlines()
    assert lines[1].startswith('m{name="a \\"quoted\\"\\\\ name\\nwith a newline"} NaN ')
    assert [line.split()[-2] for line in lines[1:5]] == ["NaN", "+Inf", "-Inf", "1e+300"]


def test_it_refuses_one_metric_written_as_two_types() -> None:
    with pytest.raises(ValueError, match=r"jobs_x is written as more than one type"):
        openmetrics_text([samples("jobs_x", GAUGE, [(START, 1)]),
                          samples("jobs_x", COUNTER, [(START, 1)])])


def test_it_names_a_missing_promtool_before_writing_anything(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(MissingComponent, match="promtool not found"):
        backfill([], tmp_path / "data")
    with pytest.raises(MissingComponent, match="prometheus not found"), \
            prometheus_with_history([], tmp_path / "prom"):
        pass
    assert list(tmp_path.iterdir()) == []


@pytest.mark.integration
def test_it_says_what_promtool_refused(tmp_path: Path) -> None:
    need_binary("promtool")
    bad = samples("jobs_threads", GAUGE, [(START, 1)], **{"not-a-label": "x"})
    with pytest.raises(ProgramFailed, match="failed with status") as refused:
        backfill([bad], tmp_path / "data")
    # promtool's own words follow ours, so the reader sees what it could not read.
    ours, *promtools = str(refused.value).splitlines()
    assert ours.endswith("failed with status 1:") and promtools


@pytest.mark.integration
def test_it_serves_the_planned_series_to_range_queries(tmp_path: Path) -> None:
    need_binary("prometheus")
    need_binary("promtool")
    usage = Usage(core_busy=(0.75, 0.25), rss_bytes=1 << 30, cache_bytes=1 << 28, threads=2,
                  open_files=10, read_bytes_per_s=1e6, write_bytes_per_s=1e6, jitter=0.0)
    # Ended two hours before now: within retention, like a job a researcher asks about.
    end = float(round(time.time()) - 7200)
    plan = JobPlan(jobid="77", name="x", user="bob", uid=1002, account="chem",
                   partition="cpu", node="node09", start=end - 1800, end=end,
                   memory_requested_bytes=2 << 30, usage=usage)
    job = history(plan)
    with prometheus_with_history(job.series, tmp_path / "prom") as prometheus:
        assert (tmp_path / "prom" / "history.om").read_text().endswith("# EOF\n")
        cpu = next(s for s in job.series if s.metric == "jobs_cpu_seconds_total")
        at = cpu.points[-1][0]
        answer = query(prometheus.url, "/api/v1/query_range", {
            "query": 'jobs_cpu_seconds_total{jobid="77"}', "start": str(cpu.points[0][0]),
            "end": str(at), "step": "30"})
        (result,) = answer["data"]["result"]
        assert result["metric"]["instance"] == "node09:9306"
        assert [float(t) for t, _ in result["values"]] == \
            pytest.approx([t for t, _ in cpu.points])
        assert [float(v) for _, v in result["values"]] == \
            pytest.approx([v for _, v in cpu.points])
        count = query(prometheus.url, "/api/v1/query", {
            "query": 'count_over_time(jobs_info{jobid="77"}[40m])', "time": str(end)})
        assert count["data"]["result"][0]["value"][1] == str(job.scrapes)
    assert prometheus.process.poll() is not None  # stopped with the block


def query(base: str, path: str, params: dict[str, str]) -> dict:  # type: ignore[type-arg]
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(f"{base}{path}?{urllib.parse.urlencode(params)}", timeout=10) as answer:
        return json.loads(answer.read())  # type: ignore[no-any-return]

