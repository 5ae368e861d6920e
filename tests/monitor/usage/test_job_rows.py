"""The user page's table (usage/web/job_rows.py) and the figures in words
(usage/rendering/figures_text.py): pure functions over documents."""

from __future__ import annotations

import math
from typing import Any

import pytest

from clusterwatch.monitor.usage.analysis.summary_json import UsageDocument
from clusterwatch.monitor.usage.rendering.figures_text import (
    figure_lines,
    figure_value,
    jobid_order,
)
from clusterwatch.monitor.usage.web.job_rows import (
    COLUMNS,
    job_row,
    page_of,
    sort_documents,
    state_counts,
)
from tests.monitor.usage.usage_support import record


def document(jobid: str, **figures: Any) -> UsageDocument:
    from clusterwatch.monitor.usage.analysis.figures import analyse
    from clusterwatch.monitor.usage.analysis.summary_json import usage_document

    base = dict(usage_document(record(jobid=jobid), analyse(record(jobid=jobid), None), ()))
    base.update(figures)
    return base  # type: ignore[return-value]


def test_it_sorts_unmeasured_figures_last_in_both_orders() -> None:
    documents = [document("1", cpu_efficiency=0.5), document("2", cpu_efficiency=None),
                 document("3", cpu_efficiency=0.1), document("4", cpu_efficiency=math.nan)]
    ascending = sort_documents(documents, "cpu_efficiency", "asc")
    descending = sort_documents(documents, "cpu_efficiency", "desc")
    assert [d["jobid"] for d in ascending] == ["3", "1", "2", "4"]
    assert [d["jobid"] for d in descending] == ["1", "3", "2", "4"]


def test_it_keeps_the_incoming_order_for_ties_either_way() -> None:
    documents = [document(str(n), cpus_allocated=4) for n in (9, 5, 7)]
    for order in ("asc", "desc"):
        assert [d["jobid"] for d in sort_documents(documents, "cpus", order)] == ["9", "5", "7"]


def test_it_sorts_job_ids_as_numbers_with_array_tasks_after_their_job() -> None:
    documents = [document(j) for j in ("1234_10", "99", "1234", "1234_7", "1234+1")]
    ordered = sort_documents(documents, "jobid", "asc")
    assert [d["jobid"] for d in ordered] == ["99", "1234", "1234+1", "1234_7", "1234_10"]
    assert jobid_order("not-an-id") == (-1,)


def test_it_sorts_by_every_column_without_failing() -> None:
    documents = [document("1"), document("2", time_limit_s=None, memory_requested_bytes=None,
                                         start=None, gpus=[{"gpu": "n/GPU-1",
                                                            "mean_utilization": 0.4}])]
    for column in COLUMNS:
        for order in ("asc", "desc"):
            assert len(sort_documents(documents, column.key, order)) == 2


def test_it_fills_a_row_with_units_and_dashes_for_what_was_not_measured() -> None:
    row = job_row(document("7", memory_peak_bytes=None, memory_efficiency=None,
                           gpus_allocated=2, gpus=[{"gpu": "a", "mean_utilization": 0.25}],
                           time_limit_s=None))
    cpus, cpu_eff, asked, peak, memory_eff, gpus, limit, _elapsed = row.cells
    assert (cpus, asked, peak, memory_eff, limit) == ("2", "4.0 GiB", "—", "—", "none")
    assert cpu_eff.endswith(" %") and gpus == "2 (25.0 % busy)"
    assert not row.judged and row.warnings == ()


def test_it_counts_states_most_frequent_first() -> None:
    documents = [document(str(n), state=s) for n, s in enumerate(
        ["FAILED", "COMPLETED", "COMPLETED", "TIMEOUT", "FAILED", "COMPLETED"])]
    assert state_counts(documents) == [("COMPLETED", 3), ("FAILED", 2), ("TIMEOUT", 1)]


@pytest.mark.parametrize(("total", "asked", "expected"), [
    (0, 1, (1, 1, 0, 0)), (250, 1, (1, 3, 1, 100)), (250, 3, (3, 3, 201, 250)),
    (250, 99, (3, 3, 201, 250)), (100, 2, (1, 1, 1, 100)),
])
def test_it_cuts_pages_of_a_hundred(total: int, asked: int,
                                    expected: tuple[int, int, int, int]) -> None:
    page = page_of(total, asked)
    assert (page.number, page.pages, page.first, page.last) == expected


def test_it_says_a_warnings_figures_with_units() -> None:
    lines = dict(figure_lines({
        "cpu_efficiency": 0.123, "threshold": 0.8, "memory_requested_bytes": 8 * 1024**3,
        "lowest_core_cpu_s": 4000.0, "cores_used_mean": 1.0, "open_files_max": 12000,
        "uses_scratch": 0, "lowest_utilization": None, "odd_one": "x"}))
    assert lines == {
        "CPU efficiency (CPU time used / allocated)": "12.3 %", "warns below": "80.0 %",
        "memory requested": "8.0 GiB", "CPU time of the least busy CPU": "1 h 6 min",
        "CPUs busy on average": "1.00", "most files open at once": "12,000",
        "used the scratch filesystem": "no", "utilization of the least busy GPU":
        "not measured", "odd one": "x"}
    assert figure_value("cpu_efficiency", math.inf) == "not measured"
    assert figure_value("threads_per_cpu_max", 2.5) == "2.50"
