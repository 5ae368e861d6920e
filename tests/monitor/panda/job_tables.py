"""The PanDA server's job tables on the loopback PostgreSQL server, for the job page and the
image-demand API: `jobsdefined4`, `jobsactive4`, `jobsarchived4` with the columns the monitor
reads and a few it does not (so a query naming a wrong column fails), each with the name,
type, NOT NULL and default of PanDAWMS/panda-database `pg_PANDA_TABLE.sql`; `jobsarchived4`
partitioned by modificationtime and `jobsactive4` keyed by pandaid, as there.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from psycopg import sql

from clusterwatch.monitor.panda.panda_settings import PandaDatabase
from tests.monitor.panda.panda_tables import SCHEMA, superuser

_NEVER = "to_date('01-JAN-70 00:00:00','dd-MON-yy hh24:mi:ss')"
COLUMNS = f"""
  pandaid bigint NOT NULL DEFAULT '0',
  jobdefinitionid bigint NOT NULL DEFAULT '0',
  creationtime timestamp NOT NULL DEFAULT {_NEVER},
  modificationtime timestamp NOT NULL DEFAULT {_NEVER},
  prodsourcelabel varchar(20) DEFAULT 'managed',
  currentpriority integer NOT NULL DEFAULT '0',
  jobstatus varchar(15) NOT NULL DEFAULT 'activated',
  jobname varchar(256),
  minramcount bigint NOT NULL DEFAULT '0',
  minramunit char(2),
  starttime timestamp DEFAULT {_NEVER},
  endtime timestamp DEFAULT {_NEVER},
  transexitcode varchar(128),
  piloterrorcode integer NOT NULL DEFAULT '0',
  piloterrordiag varchar(500),
  exeerrorcode integer NOT NULL DEFAULT '0',
  exeerrordiag varchar(500),
  superrorcode integer NOT NULL DEFAULT '0',
  superrordiag varchar(250),
  ddmerrorcode integer NOT NULL DEFAULT '0',
  ddmerrordiag varchar(500),
  brokerageerrorcode integer NOT NULL DEFAULT '0',
  brokerageerrordiag varchar(250),
  jobdispatchererrorcode integer NOT NULL DEFAULT '0',
  jobdispatchererrordiag varchar(250),
  taskbuffererrorcode integer NOT NULL DEFAULT '0',
  taskbuffererrordiag varchar(300),
  computingsite varchar(128),
  jobparameters text,
  statechangetime timestamp DEFAULT {_NEVER},
  corecount smallint,
  jobsubstatus varchar(80),
  container_name varchar(200)"""
DDL = f"""
CREATE TABLE {SCHEMA}.jobsdefined4 ({COLUMNS});
ALTER TABLE {SCHEMA}.jobsdefined4 ADD PRIMARY KEY (pandaid);
CREATE TABLE {SCHEMA}.jobsactive4 ({COLUMNS});
ALTER TABLE {SCHEMA}.jobsactive4 ADD PRIMARY KEY (pandaid);
CREATE INDEX jobsactive4_compsitestatus_idx ON {SCHEMA}.jobsactive4 (computingsite, jobstatus);
CREATE TABLE {SCHEMA}.jobsarchived4 ({COLUMNS}) PARTITION BY RANGE (modificationtime);
CREATE TABLE {SCHEMA}.jobsarchived4_all PARTITION OF {SCHEMA}.jobsarchived4
  FOR VALUES FROM (MINVALUE) TO (MAXVALUE);
CREATE INDEX jobsarchived4_pandaid_idx ON {SCHEMA}.jobsarchived4 (pandaid);
"""


def create_job_tables(database: PandaDatabase) -> None:
    with superuser(database) as connection:
        connection.execute(DDL)


def insert_jobs(database: PandaDatabase, table: str, jobs: Sequence[dict[str, Any]]) -> None:
    """`jobs`: rows by column name; the columns a row leaves out take the DDL's defaults."""
    with superuser(database) as connection:
        for row in jobs:
            connection.execute(sql.SQL("INSERT INTO {} ({}) VALUES ({})").format(
                sql.Identifier(SCHEMA, table), sql.SQL(", ").join(map(sql.Identifier, row)),
                sql.SQL(", ").join(sql.Placeholder() * len(row))), list(row.values()))


def job(pandaid: int, status: str, site: str, modified: dt.datetime,
        **columns: Any) -> dict[str, Any]:
    """A job row: created an hour before `modified`, unless `columns` say otherwise."""
    return {"pandaid": pandaid, "jobstatus": status, "computingsite": site,
            "creationtime": modified - dt.timedelta(hours=1), "modificationtime": modified,
            **columns}
