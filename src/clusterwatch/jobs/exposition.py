"""The text exposition of one collection, written straight from the job samples.

prometheus_client's `generate_latest` builds a `Metric` and a `Sample` per series, then sorts
and validates every label of every sample; with 100 jobs that is most of a scrape's
formatting time. Here each job's `jobid="...",user="..."` is escaped once and every line is
one string format. The output is byte for byte what prometheus_client writes for the same
families (`metric_families.job_families`), in its Prometheus text format 0.0.4 and its
OpenMetrics 1.0.0 format (tests/jobs/test_exposition.py compares them); any other format or
name escaping that a scraper asks for is left to prometheus_client (`serve`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Callable, Optional, cast

from prometheus_client import exposition as text_exposition
from prometheus_client.core import Metric
from prometheus_client.openmetrics import exposition as om_exposition
from prometheus_client.utils import floatToGoString

from clusterwatch.jobs import metric_families as mf
from clusterwatch.jobs.sampler import JobSample

TEXT = "text"  # Prometheus text format 0.0.4 (also 1.0.0 with legacy names)
OPENMETRICS = "openmetrics"  # OpenMetrics 1.0.0
FORMATS = (TEXT, OPENMETRICS)
# Name escapings under which every name here is written unchanged (all are legacy names);
# prometheus_client before 0.22 knows none and writes them so.
_UNDERSCORES = "underscores"
_PLAIN_ESCAPINGS = (_UNDERSCORES, "allow-utf-8")


def format_of(encoder: Callable[..., bytes]) -> Optional[str]:
    """The format `prometheus_client.exposition.choose_encoder` picked, when written here
    identically; None for anything else (then prometheus_client writes it)."""
    function = getattr(encoder, "func", encoder)
    keywords = getattr(encoder, "keywords", {})
    if keywords.get("escaping", _UNDERSCORES) not in _PLAIN_ESCAPINGS:
        return None
    if function is text_exposition.generate_latest:
        return TEXT
    # Without a version: a prometheus_client that writes OpenMetrics 1.0.0 only.
    if function is om_exposition.generate_latest and keywords.get("version", "1.0.0") == "1.0.0":
        return OPENMETRICS
    return None


def render(samples: Sequence[JobSample], own: Iterable[Metric], fmt: str = TEXT) -> bytes:
    """The exposition of the jobs' families, then the exporter's own (`own`)."""
    openmetrics = fmt == OPENMETRICS
    if not openmetrics and fmt != TEXT:
        raise ValueError(f"unknown exposition format {fmt!r}")
    out: list[str] = []
    add = out.append
    jobs = [(sample, f'jobid="{_label(sample.jobid)}",user="{_label(sample.user)}"')
            for sample in samples]
    for spec in mf.FAMILIES:
        name = _header(out, spec.name, spec.help, spec.counter, openmetrics)
        value_of = spec.value
        for sample, labels in jobs:
            value = value_of(sample)
            if value is not None:
                add(f"{name}{{{labels}}} {_number(value)}\n")

    name = _header(out, mf.CORE_FAMILY, mf.CORE_HELP, True, openmetrics)
    for sample, labels in jobs:  # label names sorted: core, jobid, user
        for core, seconds in sorted(sample.cgroup.core_seconds.items()):
            add(f'{name}{{core="{core}",{labels}}} {_number(seconds)}\n')

    gpus = [(gpu, labels) for sample, labels in jobs for gpu in sample.gpus]
    name = _header(out, mf.GPU_INFO_FAMILY, mf.GPU_INFO_HELP, False, openmetrics)
    for gpu, labels in gpus:  # gpu, gpu_uuid, jobid, user
        add(f'{name}{{gpu="{_label(gpu.name)}",gpu_uuid="{_label(gpu.uuid)}",{labels}}} 1.0\n')
    name = _header(out, mf.GPU_UTILIZATION_FAMILY, mf.GPU_UTILIZATION_HELP, False, openmetrics)
    for gpu, labels in gpus:  # gpu_uuid, jobid, user
        if gpu.usage is not None and gpu.usage.utilization_ratio is not None:
            add(f'{name}{{gpu_uuid="{_label(gpu.uuid)}",{labels}}} '
                f"{_number(gpu.usage.utilization_ratio)}\n")
    name = _header(out, mf.GPU_MEMORY_FAMILY, mf.GPU_MEMORY_HELP, False, openmetrics)
    for gpu, labels in gpus:
        if gpu.usage is not None and gpu.usage.memory_used_bytes is not None:
            add(f'{name}{{gpu_uuid="{_label(gpu.uuid)}",{labels}}} '
                f"{_number(gpu.usage.memory_used_bytes)}\n")

    name = _header(out, mf.INFO_FAMILY, mf.INFO_HELP, False, openmetrics)
    for sample, _ in jobs:
        add(f"{name}{_labels(mf.INFO_LABELS, mf.info_values(sample))} 1.0\n")

    for metric in own:
        _metric(out, metric, openmetrics)
    if openmetrics:
        add("# EOF\n")
    return "".join(out).encode("utf-8")


def _header(out: list[str], family: str, help_text: str, counter: bool,
            openmetrics: bool) -> str:
    """Append the HELP and TYPE lines; return the name of the family's samples."""
    sample_name = family + "_total" if counter else family
    kind = "counter" if counter else "gauge"
    if openmetrics:
        escaped = help_text.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")
        out.append(f"# HELP {family} {escaped}\n# TYPE {family} {kind}\n")
    else:
        escaped = help_text.replace("\\", r"\\").replace("\n", r"\n")
        out.append(f"# HELP {sample_name} {escaped}\n# TYPE {sample_name} {kind}\n")
    return sample_name


def _metric(out: list[str], metric: Metric, openmetrics: bool) -> None:
    """A prometheus_client gauge or counter family without timestamps (the exporter's own)."""
    if metric.type not in ("gauge", "counter") or metric.unit:
        raise ValueError(f"cannot format {metric.type} family {metric.name} here")
    _header(out, metric.name, metric.documentation, metric.type == "counter", openmetrics)
    for sample in metric.samples:
        if sample.timestamp is not None or sample.exemplar is not None:
            raise ValueError(f"cannot format sample {sample} here")
        labels = _labels(sorted(sample.labels), [sample.labels[k] for k in sorted(sample.labels)])
        out.append(f"{sample.name}{labels} {_number(sample.value)}\n")


def _labels(names: Sequence[str], values: Sequence[str]) -> str:
    """`{a="1",b="2"}` with the names sorted, as prometheus_client writes them; "" for none."""
    if not names:
        return ""
    pairs = sorted(zip(names, values))
    return "{" + ",".join(f'{name}="{_label(value)}"' for name, value in pairs) + "}"


def _label(value: str) -> str:
    if "\\" in value or "\n" in value or '"' in value:
        return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")
    return value


def _number(value: float) -> str:
    """prometheus_client's float formatting (Go's), with a shortcut for small integers."""
    if type(value) is int and 0 <= value < 1_000_000:
        return f"{value}.0"
    return cast(str, floatToGoString(value))  # type: ignore[no-untyped-call]
