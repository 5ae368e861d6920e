"""job_truth, pure: which row is the truth, which errors count, what a failure says."""

from __future__ import annotations

import datetime as dt
from typing import Any

from clusterwatch.monitor.panda.panda_job_truth import JobRow, job_truth
from clusterwatch.monitor.panda.server_rows import SourceFailed, columns

NOW = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.timezone.utc)
NEVER = dt.datetime(1970, 1, 1)


def row(pandaid: int = 5, **values: Any) -> JobRow:
    base: dict[str, Any] = dict.fromkeys(columns(JobRow))
    base.update({"pandaid": pandaid, "jobstatus": "running", "computingsite": "BNL_PanDA_1",
                 "modificationtime": dt.datetime(2026, 12, 1, 11, 0), "starttime": NEVER,
                 "piloterrorcode": 0, "exeerrorcode": 0, **values})
    return base  # type: ignore[return-value]


def test_the_row_modified_last_is_the_truth_whatever_the_table_order() -> None:
    older = row(jobstatus="activated", modificationtime=dt.datetime(2026, 12, 1, 10, 0))
    newer = row(jobstatus="starting", modificationtime=dt.datetime(2026, 12, 1, 11, 59,
                                                                   tzinfo=dt.timezone.utc))
    truth = job_truth(5, {"jobsdefined4": [], "jobsactive4": [newer],
                          "jobsarchived4": [older]}, NOW)
    assert truth.facts is not None and truth.facts.status == "starting"
    assert truth.facts.table == "jobsactive4" and truth.facts.also_in == ["jobsarchived4"]
    assert truth.queue_to_watch is None  # starting: a pilot has it


def test_only_an_activated_job_watches_its_queue() -> None:
    truth = job_truth(5, {"jobsactive4": [row(jobstatus="activated")]}, NOW)
    assert truth.queue_to_watch == "BNL_PanDA_1"
    empty_site = job_truth(5, {"jobsactive4": [row(jobstatus="activated", computingsite="")]},
                           NOW)
    assert empty_site.queue_to_watch is None


def test_it_keeps_only_real_errors_and_unset_times() -> None:
    facts = job_truth(5, {"jobsarchived4": [row(
        transexitcode="0", piloterrorcode=0, piloterrordiag="  ", exeerrorcode=0,
        exeerrordiag="Non-zero return\ncode", ddmerrorcode=None, superrorcode=3)]}, NOW).facts
    assert facts is not None
    assert [(e.source, e.code, e.diag) for e in facts.errors] == [
        ("Payload (exe)", "0", "Non-zero return code"), ("Supervisor", "3", "")]
    times = dict(facts.times)
    assert times["Started"] is None and times["Created"] is None
    assert str(times["Modified"]) == "2026-12-01 11:00:00Z, 1 h ago"


def test_a_row_for_another_id_is_never_the_job() -> None:
    truth = job_truth(5, {"jobsactive4": [row(pandaid=6)]}, NOW)
    assert truth.facts is None and truth.failed == [] and truth.unreachable is None


def test_failures_say_the_database_or_the_tables_that_failed() -> None:
    down = SourceFailed("OperationalError: connection failed")
    every = job_truth(5, dict.fromkeys(("jobsdefined4", "jobsactive4", "jobsarchived4"), down),
                      NOW)
    assert every.unreachable == "OperationalError: connection failed" and every.facts is None
    some = job_truth(5, {"jobsdefined4": SourceFailed("UndefinedTable: x"),
                         "jobsactive4": [row()], "jobsarchived4": SourceFailed("QueryCanceled")},
                     NOW)
    assert some.unreachable is None and some.facts is not None
    assert some.failed == ["jobsarchived4: QueryCanceled", "jobsdefined4: UndefinedTable: x"]
