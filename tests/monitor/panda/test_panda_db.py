"""panda_db and remote.harvester_tables against a real PostgreSQL holding the PanDA server's
harvester tables: the rows they read build the same record as the scenario's rows, only this
harvester's and only the windows the builder counts in, read-only, and a failed table or server
is that part's error."""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

import psycopg
import pytest

from clusterwatch.loopback.postgres import Postgres
from clusterwatch.loopback.services import free_port
from clusterwatch.monitor.panda import panda_db
from clusterwatch.monitor.panda.panda_db import connect
from clusterwatch.monitor.panda.remote.builder import build_record
from clusterwatch.monitor.panda.remote.harvester_tables import read_server_rows
from clusterwatch.monitor.panda.server_rows import SourceFailed
from tests.monitor.panda.panda_tables import fill, fresh_database, superuser
from tests.monitor.panda.remote_rows import (
    EPIC,
    HARVESTER,
    KEY,
    NOW,
    ago,
    assert_valid,
    dialog,
    instance,
    metrics,
    perlmutter_config,
    perlmutter_rows,
    rows,
    stats,
    worker,
)

pytestmark = pytest.mark.integration
OTHER = "BNL_harvester_2"


def record_of(server_rows: Any) -> dict[str, Any]:
    return build_record(HARVESTER, KEY, server_rows, perlmutter_config(), NOW,
                        queue_config_source="test")


def test_it_reads_rows_that_build_the_same_record_as_the_scenario(server: Postgres) -> None:
    database = fresh_database(server)
    scenario = perlmutter_rows()
    fill(database, scenario)
    read = read_server_rows(database, HARVESTER, NOW)
    record = record_of(read)
    assert_valid(record)
    assert record == record_of(scenario)
    assert record["harvester_db"]["workers_overdue"] == {EPIC: {"running": 1}}
    assert set(record["harvester_db"]["service_metrics"]["by_host"]) == {
        "login31.chn.perlmutter.nersc.gov", "login32.chn.perlmutter.nersc.gov"}


def test_it_reads_only_this_harvesters_rows_within_the_windows(server: Postgres) -> None:
    database = fresh_database(server)
    others = {"harvester_id": OTHER}
    fill(database, rows(
        instances=[instance(), instance(**others)],
        workers=[worker(1, "running", lastupdate=ago(days=30), submittime=ago(days=30)),
                 worker(2, "finished", lastupdate=ago(hours=25), endtime=ago(hours=25)),
                 worker(3, "finished", lastupdate=ago(hours=2), endtime=ago(hours=2)),
                 worker(4, "running", harvesterid=OTHER)],
        dialogs=[dialog(1, "recent"), dialog(2, "a day old", at=ago(hours=24, minutes=1)),
                 {**dialog(3, "another's"), **others}],
        metrics=[metrics("login31", ago(minutes=5), "{}"), metrics("login31", ago(hours=2), "{}"),
                 {**metrics("login32", ago(minutes=5), "{}"), **others}],
        worker_stats=[stats(EPIC, "running", 3), {**stats(EPIC, "running", 9), **others}]))
    read = read_server_rows(database, HARVESTER, NOW)
    assert [row["harvester_id"] for row in listed(read.instances)] == [HARVESTER]
    # Live whenever updated (overdue counts it), terminal only when updated within 24 h.
    assert sorted(row["workerid"] for row in listed(read.workers)) == [1, 3]
    assert [row["diagmessage"] for row in listed(read.dialogs)] == ["recent"]
    assert [row["creation_time"] for row in listed(read.metrics)] == [ago(minutes=5)]
    assert [row["n_workers"] for row in listed(read.worker_stats)] == [3]


def listed(part: Any) -> list[Any]:
    assert not isinstance(part, SourceFailed), part
    return list(part)


def test_a_harvester_id_with_no_rows_reads_empty_tables(server: Postgres) -> None:
    database = fresh_database(server)
    fill(database, perlmutter_rows())
    read = read_server_rows(database, "Nobody_1", NOW)
    assert (read.instances, read.workers, read.dialogs, read.metrics, read.worker_stats) == (
        [], [], [], [], [])
    assert "is the harvester id right?" in build_record(
        "Nobody_1", KEY, read, perlmutter_config(), NOW)["instance"]["error"]


def test_a_hostile_harvester_id_is_a_value_never_sql(server: Postgres) -> None:
    database = fresh_database(server)
    fill(database, perlmutter_rows())
    for hostile in ("x' OR '1'='1", "x'; DROP TABLE doma_panda.harvester_workers; --"):
        read = read_server_rows(database, hostile, NOW)
        assert (read.instances, read.workers, read.worker_stats) == ([], [], [])
    assert len(listed(read_server_rows(database, HARVESTER, NOW).workers)) == 19


def test_its_session_refuses_every_write(server: Postgres) -> None:
    database = fresh_database(server)
    with connect(database) as connection:
        for statement in ("INSERT INTO doma_panda.harvester_instances (harvester_id) "
                          "VALUES ('x')", "CREATE TABLE doma_panda.x (a int)"):
            with pytest.raises(psycopg.errors.ReadOnlySqlTransaction), \
                    connection.transaction():
                connection.execute(statement)
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):  # outside ours, too
            connection.execute("UPDATE doma_panda.harvester_workers SET status = 'x'")
        assert connection.execute("SHOW statement_timeout").fetchone() == {
            "statement_timeout": "30s"}
    with superuser(database) as check:
        assert check.execute("SELECT count(*) FROM doma_panda.harvester_instances"
                             ).fetchone() == (0,)


def test_a_missing_table_fails_that_part_alone(server: Postgres) -> None:
    database = fresh_database(server)
    fill(database, perlmutter_rows())
    with superuser(database) as connection:
        connection.execute("DROP TABLE doma_panda.harvester_dialogs")
    record = record_of(read_server_rows(database, HARVESTER, NOW))
    assert record["dialogs"] == {"error": 'harvester_dialogs: UndefinedTable: relation '
                                          '"doma_panda.harvester_dialogs" does not exist'}
    assert record["harvester_db"]["workers_now"][EPIC]["running"] == 12
    assert record["instance"]["version"] == "0.7.5"


def test_a_slow_table_times_out_as_that_parts_error(
    server: Postgres, monkeypatch: pytest.MonkeyPatch
) -> None:
    database = fresh_database(server)
    fill(database, perlmutter_rows())
    with superuser(database) as connection:  # a view in the table's place that sleeps
        connection.execute("ALTER TABLE doma_panda.harvester_metrics RENAME TO metrics_real")
        connection.execute("CREATE VIEW doma_panda.harvester_metrics AS SELECT m.* FROM "
                           "doma_panda.metrics_real m, pg_sleep(2)")
    monkeypatch.setattr(panda_db, "STATEMENT_TIMEOUT_MS", 200)
    record = record_of(read_server_rows(database, HARVESTER, NOW))
    assert record["harvester_db"]["service_metrics"] == {
        "error": "harvester_metrics: QueryCanceled: canceling statement due to statement "
                 "timeout"}
    assert record["harvester_db"]["workers_now"][EPIC]["running"] == 12


def test_an_unreachable_server_fails_every_table_with_one_reason(server: Postgres) -> None:
    database = dataclasses.replace(fresh_database(server), port=free_port())
    read = read_server_rows(database, HARVESTER, NOW)
    parts = (read.instances, read.workers, read.dialogs, read.metrics, read.worker_stats)
    assert all(isinstance(part, SourceFailed) for part in parts)
    assert len({part.reason for part in parts if isinstance(part, SourceFailed)}) == 1
    reason = read.instances.reason if isinstance(read.instances, SourceFailed) else ""
    assert reason.startswith("OperationalError: connection failed") and "\n" not in reason
    assert_valid(record_of(read))


def test_a_wrong_password_is_a_failed_source_that_never_shows_it(server: Postgres) -> None:
    database = dataclasses.replace(fresh_database(server), password="hunter2-wrong")
    read = read_server_rows(database, HARVESTER, NOW + dt.timedelta(0))
    assert isinstance(read.workers, SourceFailed)
    assert "password authentication failed" in read.workers.reason
    assert "hunter2" not in read.workers.reason
