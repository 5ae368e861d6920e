"""The PanDA server's harvester tables on the loopback PostgreSQL server: the DDL's column
names and types (panda-database `pg_PANDA_TABLE.sql`, reference §1.1), in the `doma_panda`
schema, filled from the row builders of remote_rows.py.

Each test gets a database of its own (`fresh_database`) on the session's one server
(`loopback_postgres` of tests/conftest.py, `server` in tests/monitor/panda); the rows go in
as the superuser, and the code under test reads them as configured in production
(`configure`).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import itertools
import os
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from clusterwatch.loopback.postgres import Postgres
from clusterwatch.monitor.panda.panda_settings import PandaDatabase
from clusterwatch.monitor.panda.remote.builder import ServerRows
from clusterwatch.monitor.panda.server_rows import SourceFailed

SCHEMA = "doma_panda"
DDL = """
CREATE SCHEMA doma_panda;
CREATE TABLE doma_panda.harvester_instances (harvester_id varchar(50) NOT NULL,
  description varchar(200), starttime timestamp, owner varchar(100), hostname varchar(100),
  lastupdate timestamp, sw_version varchar(50), commit_stamp varchar(100),
  PRIMARY KEY (harvester_id));
CREATE TABLE doma_panda.harvester_workers (harvesterid varchar(50) NOT NULL,
  workerid bigint NOT NULL, lastupdate timestamp NOT NULL, status varchar(80) NOT NULL,
  batchid varchar(80), nodeid varchar(80), queuename varchar(80), computingsite varchar(128),
  submittime timestamp, starttime timestamp, endtime timestamp, ncore integer,
  errorcode integer, stdout varchar(250), stderr varchar(250), batchlog varchar(250),
  resourcetype varchar(56), nativeexitcode integer, nativestatus varchar(80),
  diagmessage varchar(500), computingelement varchar(128), njobs integer,
  submissionhost varchar(128), harvesterhost varchar(128), jdl varchar(250),
  jobtype varchar(52), pilotstarttime timestamp, pilotendtime timestamp,
  pilotstatus varchar(80), pilotstatussynctime timestamp, minramcount integer,
  PRIMARY KEY (harvesterid, workerid, lastupdate)) PARTITION BY RANGE (lastupdate);
CREATE TABLE doma_panda.harvester_workers_all PARTITION OF doma_panda.harvester_workers
  FOR VALUES FROM (MINVALUE) TO (MAXVALUE);
CREATE TABLE doma_panda.harvester_dialogs (harvester_id varchar(50) NOT NULL,
  diagid bigint NOT NULL, modulename varchar(100), identifier varchar(100),
  creationtime timestamp NOT NULL, messagelevel varchar(10), diagmessage varchar(500))
  PARTITION BY RANGE (creationtime);
CREATE TABLE doma_panda.harvester_dialogs_all PARTITION OF doma_panda.harvester_dialogs
  FOR VALUES FROM (MINVALUE) TO (MAXVALUE);
CREATE TABLE doma_panda.harvester_metrics (harvester_id varchar(50) NOT NULL,
  creation_time timestamp NOT NULL DEFAULT LOCALTIMESTAMP, harvester_host varchar(100),
  metrics varchar(4000)) PARTITION BY RANGE (creation_time);
CREATE TABLE doma_panda.harvester_metrics_all PARTITION OF doma_panda.harvester_metrics
  FOR VALUES FROM (MINVALUE) TO (MAXVALUE);
CREATE TABLE doma_panda.harvester_worker_stats (harvester_id varchar(50) NOT NULL,
  computingsite varchar(128) NOT NULL, resourcetype varchar(56) NOT NULL,
  status varchar(80) NOT NULL, jobtype varchar(52) NOT NULL, n_workers integer,
  lastupdate timestamp NOT NULL,
  PRIMARY KEY (harvester_id, computingsite, resourcetype, status, jobtype));
"""
TABLES = {"instances": "harvester_instances", "workers": "harvester_workers",
          "dialogs": "harvester_dialogs", "metrics": "harvester_metrics",
          "worker_stats": "harvester_worker_stats"}
_numbers = itertools.count(1)


def fresh_database(server: Postgres) -> PandaDatabase:
    """A new database holding the empty tables; its settings as the monitor's reader takes
    them (the superuser's password from the server's mode-600 file)."""
    name = f"panda_{next(_numbers)}"
    server.psql(f"CREATE DATABASE {name};")
    server.psql(DDL, database=name)
    password = server.password_file.read_text(encoding="utf-8").strip()
    return PandaDatabase(host="127.0.0.1", port=server.port, dbname=name,
                         user="clusterwatch", schema=SCHEMA, password=password)


def superuser(database: PandaDatabase) -> psycopg.Connection[Any]:
    return psycopg.connect(host=database.host, port=database.port, dbname=database.dbname,
                           user=database.user, password=database.password,
                           connect_timeout=10, autocommit=True)


def fill(database: PandaDatabase, rows: ServerRows) -> None:
    """Inserts every table's rows (a failed source stays empty)."""
    with superuser(database) as connection:
        for field, table in TABLES.items():
            table_rows = getattr(rows, field)
            if isinstance(table_rows, SourceFailed) or not table_rows:
                continue
            names = list(table_rows[0])
            query = sql.SQL("INSERT INTO {} ({}) VALUES ({})").format(
                sql.Identifier(SCHEMA, table),
                sql.SQL(", ").join(map(sql.Identifier, names)),
                sql.SQL(", ").join(sql.Placeholder() * len(names)))
            with connection.cursor() as cursor:
                cursor.executemany(query, [[row[name] for name in names] for row in table_rows])


def shifted(rows: ServerRows, delta: dt.timedelta) -> ServerRows:
    """Every time in `rows` moved by `delta` (a scenario dated at another clock's now)."""
    def move(row: Any) -> Any:
        return {name: value + delta if isinstance(value, dt.datetime) else value
                for name, value in row.items()}

    return dataclasses.replace(rows, **{
        field: [move(row) for row in getattr(rows, field)] for field in TABLES
        if not isinstance(getattr(rows, field), SourceFailed)})


def configure(database: PandaDatabase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The settings as production sets them: the URL, and the password in a mode-600 file."""
    secret = tmp_path / "panda-password"
    secret.write_text(database.password or "", encoding="utf-8")
    os.chmod(secret, 0o600)
    monkeypatch.setenv("CLUSTERWATCH_PANDA_DATABASE_URL",
                       f"postgresql://{database.user}@{database.host}:{database.port}/"
                       f"{database.dbname}")
    monkeypatch.setenv("CLUSTERWATCH_PANDA_DATABASE_PASSWORD_FILE", str(secret))
