"""docs/monitor.md's sections on the job page's server section and the image-demand API say
what the code does: the limits, the timeout, the columns read, the index the benchmark times."""

from __future__ import annotations

import re
from pathlib import Path

from clusterwatch.monitor.panda import image_demand
from clusterwatch.monitor.panda import panda_job_rows as job_rows
from clusterwatch.monitor.panda.panda_job_truth import JOB_TABLES, JobRow
from clusterwatch.monitor.panda.server_rows import columns
from tests.benchmark_module import load_benchmark

DOCS = Path(__file__).resolve().parents[3] / "docs" / "monitor.md"


def section(title: str) -> str:
    text = DOCS.read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    return text[start:text.index("\n## ", start + 1)]


def test_it_documents_every_column_and_table_the_job_page_reads() -> None:
    text = section("Job page with the PanDA server's truth")
    assert all(f"`{table}`" in text for table in JOB_TABLES)
    named = set(re.findall(r"`([a-z_]+)`", text))
    assert set(columns(JobRow)) - {"pandaid"} <= named
    assert f"may take {job_rows.PAGE_STATEMENT_TIMEOUT_MS // 1000} s" in text


def test_it_documents_the_image_demand_limits_and_the_benchmarked_index() -> None:
    text = section("Image demand API")
    assert f"`memory_mb` over {image_demand.MAX_MEMORY_MB:,}" in text
    assert f"`cores` over {image_demand.MAX_CORES}" in text
    assert f"query over {job_rows.PAGE_STATEMENT_TIMEOUT_MS // 1000} s" in text
    advised = load_benchmark("bench_image_demand").ADVISED_INDEX
    documented = " ".join(re.search(r"CREATE INDEX CONCURRENTLY [^;]+", text)
                          .group(0).split()).replace(" CONCURRENTLY", "")  # type: ignore[union-attr]
    assert documented == " ".join(advised.split())
