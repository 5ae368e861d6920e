from __future__ import annotations

import datetime as dt

from clusterwatch.monitor.pages.hosts_page import fullest_volume, host_row, hosts_page, volume_size
from clusterwatch.monitor.pages.source_problems import failed_sources
from clusterwatch.monitor.pages.stored import StoredRecord
from clusterwatch.monitor.record.host_record import parse_record
from tests.monitor.records import example, parse

COLLECTED = parse(example()["collected_at"])


def row_of(record: dict, now: dt.datetime, queues: tuple[str, ...] = ()):  # type: ignore[no-untyped-def]
    return host_row("pandaharvester01", 7, record, COLLECTED, list(queues), now, 300)


def test_it_summarises_the_example_record() -> None:
    now = COLLECTED + dt.timedelta(minutes=2)
    row = row_of(example(), now, ("UM_GREX_PanDA_1", "BNL_PanDA_1"))
    assert str(row.collected) == "2026-11-29 13:30:48Z, 2 min ago"
    assert not row.stale
    assert row.queues == ["BNL_PanDA_1", "UM_GREX_PanDA_1"]
    assert [(c.daemon, c.failed) for c in row.call_failures] == [("communicator", 4),
                                                                ("propagator", 1)]
    assert row.delivery.backlog == 1 and row.delivery.dropped == 0
    assert row.fullest is not None and row.fullest.mount == "/"
    assert row.fullest.used_percent == 25.8 and row.fullest.avail == "75.3 GiB"
    assert row.processes == 0
    assert row.hostname == "localhost" and row.reporter_version == "1.0.0"


def test_it_groups_database_parts_failing_with_one_error() -> None:
    problems = failed_sources(parse_record(example()))
    assert len(problems) == 1
    assert problems[0].error == "cannot read /nonexist: No such file or directory"
    assert problems[0].where == ("harvester_db: launch_limits, service_metrics, workers_ended, "
                                 "workers_not_finished, workers_now")


def test_it_names_every_kind_of_failed_source() -> None:
    record = example()
    record["fetching"] = {"error": "RuntimeError: parser bug", "read": {"bytes": 0}}
    record["submission"]["read"] = {"error": "cannot open panda-submitter.log: Permission denied"}
    record["failed_calls"]["propagator"] = {"read": {"error": "gone"}}
    record["daemons"] = {"error": "cannot list /var/log/harvester"}
    record["processes"] = {"error": "no /proc"}
    record["harvester_db"] = {"error": "mysql gave no answer within 30 s"}
    record["health"]["volumes"] = {"/": {"error": "statvfs failed"}, "/data": {"same_as": "/"}}
    record["delivery"] = {"error": "buffer unreadable"}
    where = {problem.where: problem.error for problem in failed_sources(parse_record(record))}
    assert where["fetching (panda-job_fetcher.log)"] == "RuntimeError: parser bug"
    assert where["submission (panda-submitter.log)"].startswith("cannot open")
    assert where["failed_calls.propagator (panda-propagator.log)"] == "gone"
    assert where["daemons"] == "cannot list /var/log/harvester"
    assert where["processes"] == "no /proc"
    assert where["harvester_db"] == "mysql gave no answer within 30 s"
    assert where["health.volumes[/]"] == "statvfs failed"
    assert where["delivery"] == "buffer unreadable"
    assert fullest_volume(parse_record(record)) is None


def test_it_reports_a_clean_record_as_without_problems() -> None:
    record = example()
    record["harvester_db"] = {"launch_limits": {}, "workers_now": {}}
    assert failed_sources(parse_record(record)) == []


def test_it_survives_a_record_missing_every_section() -> None:
    row = host_row("x", 1, {}, COLLECTED, [], COLLECTED, 300)
    assert {p.error for p in row.problems} == {"absent from the record"}
    assert row.fullest is None and row.processes is None and row.call_failures == []
    assert row.delivery.backlog is None


def test_it_picks_the_fullest_volume_and_skips_aliases() -> None:
    record = example()
    record["health"]["volumes"] = {
        "/": {"total_bytes": 100, "avail_bytes": 50, "used_percent": 50.0, "device": "1:0"},
        "/var": {"same_as": "/"},
        "/data": {"total_bytes": 2**40, "avail_bytes": 2**36, "used_percent": 93.8,
                  "device": "1:1"},
        "/tmp": {"error": "gone"},
    }
    fullest = fullest_volume(parse_record(record))
    assert fullest is not None and fullest.mount == "/data" and fullest.used_percent == 93.8
    assert fullest.total == "1.0 TiB" and fullest.avail == "64.0 GiB"


def test_it_marks_a_key_silent_for_more_than_three_intervals_stale() -> None:
    row = row_of(example(), COLLECTED + dt.timedelta(minutes=25))
    assert row.stale and row.silent_for == "silent for 25 min"
    assert not row_of(example(), COLLECTED + dt.timedelta(minutes=15)).stale


def test_it_lists_keys_with_tokens_that_never_reported() -> None:
    now = COLLECTED + dt.timedelta(minutes=1)
    stored = [StoredRecord("pandaharvester01", 1, example(), COLLECTED)]
    tokens = [("pandaharvester01", "cwh_AAAAAAAA", COLLECTED),
              ("osgsub01", "cwh_BBBBBBBB", COLLECTED - dt.timedelta(days=2)),
              ("osgsub01", "cwh_CCCCCCCC", COLLECTED - dt.timedelta(days=1)),
              ("aaa-new", "cwh_DDDDDDDD", COLLECTED)]
    page = hosts_page(stored, {"pandaharvester01": ["BNL_PanDA_1"]}, tokens, now, 300)
    assert [row.key for row in page.rows] == ["pandaharvester01"]
    assert page.rows[0].queues == ["BNL_PanDA_1"]
    assert [(w.key, w.tokens) for w in page.never_reported] == [
        ("aaa-new", ["cwh_DDDDDDDD"]), ("osgsub01", ["cwh_BBBBBBBB", "cwh_CCCCCCCC"])]
    assert page.never_reported[1].since is not None
    assert page.never_reported[1].since.age.startswith("2 d")
    assert page.stale_after == "15 min" and page.stale_count == 0


def test_it_sizes_bytes_in_binary_units() -> None:
    assert volume_size(None) == "—"
    assert volume_size(512) == "512 B"
    assert volume_size(1536) == "1.5 KiB"
    assert volume_size(5 * 2**50) == "5120.0 TiB"
