"""The exposition written from the samples is byte for byte prometheus_client's, in both
formats, on fixtures holding every family, odd label values and odd numbers."""

from __future__ import annotations

import inspect
import math
from collections.abc import Iterable, Sequence

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import Metric
from prometheus_client.exposition import choose_encoder
from prometheus_client.openmetrics import exposition as om_exposition
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from clusterwatch.jobs import exposition
from clusterwatch.jobs.exporter import JobsCollector
from clusterwatch.jobs.metric_families import job_families
from clusterwatch.jobs.sampler import JobSample
from tests.jobs.fake_jobs import every_kind_of_job
from tests.jobs.fake_tree import Tree

# Name escapings (prometheus_client >= 0.22; before, names are written as with underscores).
UNDERSCORES, ALLOW_UTF8 = "underscores", "allow-utf-8"


class _Fixed(Collector):
    def __init__(self, families: Sequence[Metric]) -> None:
        self.families = list(families)

    def collect(self) -> Iterable[Metric]:
        return self.families


def prometheus_client_text(samples: Sequence[JobSample], own: Sequence[Metric],
                           openmetrics: bool, escaping: str) -> bytes:
    registry = CollectorRegistry()
    registry.register(_Fixed([*job_families(samples), *own]))
    write = om_exposition.generate_latest if openmetrics else generate_latest
    if escaping == UNDERSCORES:
        return bytes(write(registry))
    if "escaping" not in inspect.signature(write).parameters:
        pytest.skip("this prometheus_client has no name escaping")
    return bytes(write(registry, escaping=escaping))


@pytest.mark.parametrize("escaping", [UNDERSCORES, ALLOW_UTF8])
@pytest.mark.parametrize("fmt", exposition.FORMATS)
def test_it_writes_what_prometheus_client_writes(tree: Tree, fmt: str, escaping: str) -> None:
    collector = every_kind_of_job(tree)
    samples, own = collector.collect_samples()
    assert {s.jobid for s in samples} == {"42", "43", "44", "45", "1234.5"}
    ours = exposition.render(samples, own, fmt)
    theirs = prometheus_client_text(samples, own, fmt == exposition.OPENMETRICS, escaping)
    assert ours == theirs
    assert b'account="a\\"b\\\\c\\nd"' in ours and b'core="3"' in ours
    assert b"jobs_gpu_utilization_ratio{" in ours and b"jobs_gpu_memory_used_bytes{" in ours


def test_it_writes_an_empty_node_as_prometheus_client_does(tree: Tree) -> None:
    collector = JobsCollector(tree.cgroup, tree.proc, nvml=None)
    samples, own = collector.collect_samples()
    for fmt in exposition.FORMATS:
        assert exposition.render(samples, own, fmt) == prometheus_client_text(
            samples, own, fmt == exposition.OPENMETRICS, UNDERSCORES)


@pytest.mark.parametrize("value", [
    0, 1, 999_999, 1_000_000, 1_234_567, 10**15, 10**17, 2**63, 0.0, 0.5, 1e-7, 12.5,
    123456.789, 1234567.891, 1e22, 3.0e8, math.inf, -1, -2.5, True, False,
])
def test_it_formats_numbers_as_prometheus_client(value: float) -> None:
    assert exposition._number(value) == floatToGoString(value)  # type: ignore[no-untyped-call]


@pytest.mark.parametrize(("accept", "expected"), [
    (None, exposition.TEXT),
    ("text/plain", exposition.TEXT),
    ("text/plain;version=0.0.4", exposition.TEXT),
    ("text/plain;version=1.0.0;escaping=allow-utf-8", exposition.TEXT),
    ("text/plain;version=1.0.0;escaping=underscores", exposition.TEXT),
    ("application/openmetrics-text", exposition.OPENMETRICS),
    # What Prometheus 2 sends.
    ("application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;"
     "q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1", exposition.OPENMETRICS),
    # What Prometheus 3 sends.
    ("application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,"
     "application/openmetrics-text;version=0.0.1;q=0.5,text/plain;version=1.0.0;"
     "escaping=allow-utf-8;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2",
     exposition.OPENMETRICS),
    # Left to prometheus_client: names escaped otherwise, another OpenMetrics version.
    ("text/plain;version=1.0.0;escaping=dots", None),
    ("application/openmetrics-text;version=1.0.0;escaping=values", None),
    ("application/openmetrics-text;version=2.0.0", None),
])
def test_it_writes_only_the_formats_it_writes_identically(
        accept: str | None, expected: str | None) -> None:
    encoder, _ = choose_encoder(accept)  # type: ignore[arg-type]
    assert exposition.format_of(encoder) == expected


def test_it_refuses_an_unknown_format() -> None:
    with pytest.raises(ValueError, match="unknown exposition format"):
        exposition.render([], [], "json")
