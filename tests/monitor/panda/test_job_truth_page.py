"""The job page with CLUSTERWATCH_PANDA_DATABASE_URL set, against a real PostgreSQL holding the
PanDA server's job tables: activated, running and finished jobs as the server has them, a job
caught between two tables, a slow table, a database that is down, a wrong setting."""

from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path

import pytest
from django.test import Client

from clusterwatch.loopback.postgres import Postgres
from clusterwatch.loopback.services import free_port
from clusterwatch.monitor.panda import panda_job_rows as job_rows
from clusterwatch.monitor.panda.panda_settings import PandaDatabase
from tests.monitor.panda.job_tables import insert_jobs, job
from tests.monitor.panda.panda_tables import configure, fresh_database, superuser
from tests.monitor.records import QUEUE, all_fetches_failing, example, fresh, store
from tests.support.page_text import text_of

pytestmark = [pytest.mark.integration, pytest.mark.django_db]
NOW = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None, microsecond=0)
HEADING = "What the PanDA server says"


def test_it_shows_an_activated_job_and_its_queues_last_fetch(
    operator: Client, panda: PandaDatabase,
) -> None:
    store(fresh(all_fetches_failing(example())))
    insert_jobs(panda, "jobsactive4", [job(7001, "activated", QUEUE,
                                           NOW - dt.timedelta(minutes=3))])
    response = operator.get("/jobs/7001/")
    assert response.status_code == 200
    text = text_of(response)
    assert f"{HEADING} source: jobsactive4 Status activated Queue {QUEUE}" in text
    assert "Started not set Ended not set" in text  # the DDL's 1970 default is "never"
    assert "No error recorded." in text
    assert f"Queue {QUEUE} (the PanDA server's queue for this activated job)" in text
    assert "Last fetch" in text and "Error class SSLError" in text
    assert 'name="queue"' not in response.content.decode().split("<main>")[1]


def test_it_shows_a_running_job_with_its_start_and_no_fetch_panel(
    operator: Client, panda: PandaDatabase,
) -> None:
    store(fresh(all_fetches_failing(example())))
    # From the clock now, not NOW: the module may be imported minutes before this runs.
    started = (dt.datetime.now(dt.timezone.utc).replace(tzinfo=None, microsecond=0)
               - dt.timedelta(minutes=20))
    insert_jobs(panda, "jobsactive4", [job(7002, "running", QUEUE, NOW, starttime=started,
                                           jobsubstatus="")])
    text = text_of(operator.get("/jobs/7002/"))
    assert f"Status running Queue {QUEUE}" in text
    assert f"Started {started:%Y-%m-%d %H:%M:%S}Z, 20 min ago Ended not set" in text
    assert "Last fetch" not in text  # a running job was fetched: its queue's fetches are moot


def test_it_shows_a_failed_jobs_errors_from_the_archive(
    operator: Client, panda: PandaDatabase,
) -> None:
    ended = NOW - dt.timedelta(hours=2)
    insert_jobs(panda, "jobsarchived4", [job(
        7003, "failed", QUEUE, ended, starttime=ended - dt.timedelta(hours=1), endtime=ended,
        transexitcode="65", piloterrorcode=1305, piloterrordiag="Failed to execute payload:\n"
        "<script>x</script>", exeerrorcode=65, exeerrordiag="", ddmerrorcode=0,
        ddmerrordiag=None)])
    response = operator.get("/jobs/7003/")
    text = text_of(response)
    assert "source: jobsarchived4 Status failed" in text
    assert ("Errors Source Code Message Transformation exit code 65 — "
            "Pilot 1305 Failed to execute payload: &lt;script&gt;x&lt;/script&gt; "
            "Payload (exe) 65 —") in text
    assert "Data management" not in text  # a zero code with no message is no error
    assert "<script>x" not in response.content.decode()


def test_a_job_moved_between_tables_is_shown_where_it_was_modified_last(
    operator: Client, panda: PandaDatabase,
) -> None:
    insert_jobs(panda, "jobsdefined4", [job(7004, "assigned", QUEUE, NOW - dt.timedelta(1))])
    insert_jobs(panda, "jobsactive4", [job(7004, "activated", QUEUE, NOW)])
    text = text_of(operator.get("/jobs/7004/"))
    assert "source: jobsactive4 (also in jobsdefined4: the server is moving it)" in text
    assert "Status activated" in text


def test_an_unknown_job_says_so_and_a_huge_id_sends_no_query(
    operator: Client, panda: PandaDatabase,
) -> None:
    assert "No job 7005 in jobsdefined4, jobsactive4 or jobsarchived4" in text_of(
        operator.get("/jobs/7005/"))
    huge = operator.get("/jobs/99999999999999999999999/")
    assert huge.status_code == 200 and "No job 99999999999999999999999 in" in text_of(huge)


def test_a_slow_table_is_named_and_the_others_still_shown(
    operator: Client, panda: PandaDatabase, monkeypatch: pytest.MonkeyPatch,
) -> None:
    insert_jobs(panda, "jobsactive4", [job(7006, "running", QUEUE, NOW)])
    monkeypatch.setattr(job_rows, "PAGE_STATEMENT_TIMEOUT_MS", 200)
    with superuser(panda) as locker:  # the archive held by a long transaction
        locker.execute("BEGIN")
        locker.execute("LOCK TABLE doma_panda.jobsarchived4 IN ACCESS EXCLUSIVE MODE")
        response = operator.get("/jobs/7006/")
        locker.execute("ROLLBACK")
    text = text_of(response)
    assert response.status_code == 200 and "Status running" in text
    assert ("Not read: jobsarchived4: QueryCanceled: canceling statement due to statement "
            "timeout") in text


def test_a_database_that_is_down_is_said_plainly_with_the_records_shown(
    operator: Client, server: Postgres, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    record = all_fetches_failing(example())
    store(fresh(record))
    pandaid = record["submission"]["recent_pushes"][0]["pandaid"]
    configure(dataclasses.replace(fresh_database(server), port=free_port()), tmp_path,
              monkeypatch)
    response = operator.get(f"/jobs/{pandaid}/")
    assert response.status_code == 200
    text = text_of(response)
    assert "The PanDA database could not be read: OperationalError: connection failed" in text
    assert "Below is what the harvesters' records say." in text
    assert "(from the harvester's push of this job)" in text and "Last fetch" in text


def test_a_wrong_setting_is_said_on_the_page_without_the_password(
    operator: Client, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CLUSTERWATCH_PANDA_DATABASE_URL",
                       "postgresql://panda:hunter2@127.0.0.1:5432/panda")
    response = operator.get("/jobs/7007/")
    text = text_of(response)
    assert response.status_code == 200
    assert ("could not be read: configuration error: CLUSTERWATCH_PANDA_DATABASE_URL must "
            "not hold the password") in text
    assert "hunter2" not in response.content.decode()


def test_without_the_setting_the_page_has_no_server_section(
    operator: Client, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("CLUSTERWATCH_PANDA_DATABASE_URL", raising=False)
    store(fresh(example()))
    response = operator.get("/jobs/7008/")
    assert response.status_code == 200 and HEADING not in text_of(response)
    assert "Which PanDA queue is this job activated for?" in text_of(response)
