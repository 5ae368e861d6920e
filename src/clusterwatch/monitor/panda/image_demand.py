"""Image demand: the activated jobs that fit a slot, counted per exact container image.

An allocator asks every couple of minutes "for a slot of this memory and these cores, which
images have work waiting?". The answer is one query over `jobsactive4`: the jobs with
`jobstatus = 'activated'` (waiting for a pilot), `minramcount` (the job's memory, MB, the
DDL's default 0 meaning "not given") at most the slot's memory, and `corecount` (NULL or 0
meaning one core, as the server takes it) at most the slot's cores, grouped by
`container_name` as the server has it (NULL: jobs that name no image). The parameters are
checked here, before any connection; the query is read-only, with the page's statement
timeout (job_rows.page_connection).

The connection is kept for the next request of the same process: opening one (TCP, SCRAM,
a backend process, the session settings) costs 30-70 ms on a busy host, more than the query,
and would put p99 past the 100 ms target. A kept connection that broke (server restart, idle
timeout) is dropped and the query tried once on a new one; a new one that fails is the error.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional

import psycopg
from psycopg import sql

from clusterwatch.monitor.panda.panda_job_rows import page_connection
from clusterwatch.monitor.panda.panda_settings import PandaDatabase

MAX_MEMORY_MB = 16 * 1024 * 1024  # 16 TiB: no slot is larger; a larger value is a mistake
MAX_CORES = 4096
_NUMBER = re.compile(r"[0-9]{1,9}")  # ASCII digits only: no sign, space, or other script


class BadParameter(ValueError):
    """A parameter the API answers 400 for; the text says which and why."""


@dataclass(frozen=True)
class Slot:
    memory_mb: int
    cores: int


@dataclass(frozen=True)
class ImageCount:
    image: Optional[str]
    jobs: int


def slot_of(query: Mapping[str, str]) -> Slot:
    """`memory_mb` and `cores` from the query string, or BadParameter."""
    return Slot(_whole(query, "memory_mb", MAX_MEMORY_MB), _whole(query, "cores", MAX_CORES))


def _whole(query: Mapping[str, str], name: str, largest: int) -> int:
    raw = query.get(name)
    if raw is None or raw == "":
        raise BadParameter(f"{name} is required: a whole number from 1 to {largest}")
    if not _NUMBER.fullmatch(raw) or not 1 <= int(raw) <= largest:
        raise BadParameter(f"{name} must be a whole number from 1 to {largest}, "
                           f"not {raw[:40]!r}")
    return int(raw)


QUERY = """SELECT container_name AS image, count(*) AS jobs FROM {table}
 WHERE jobstatus = 'activated' AND minramcount <= %(memory_mb)s
   AND COALESCE(NULLIF(corecount, 0), 1) <= %(cores)s
 GROUP BY container_name ORDER BY jobs DESC, container_name NULLS LAST"""


def image_demand(database: PandaDatabase, slot: Slot) -> list[ImageCount]:
    """The counts, most jobs first (psycopg.Error when the database cannot answer)."""
    query = sql.SQL(QUERY).format(table=sql.Identifier(database.schema, "jobsactive4"))
    parameters = {"memory_mb": slot.memory_mb, "cores": slot.cores}
    with _kept.lock:
        kept = _kept.connection if _kept.database == database else None
        if kept is not None and not kept.closed:
            try:
                return _counts(kept.execute(query, parameters).fetchall())
            except psycopg.OperationalError:  # broken since the last request: once more
                kept.close()
        _kept.close()
        connection = page_connection(database)
        _kept.connection, _kept.database = connection, database
        try:
            return _counts(connection.execute(query, parameters).fetchall())
        except psycopg.Error:
            _kept.close()
            raise


def _counts(rows: list[Any]) -> list[ImageCount]:
    return [ImageCount(row["image"], int(row["jobs"])) for row in rows]


class _Kept:
    """The process's one kept connection, and the settings it was opened with."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.connection: Optional[psycopg.Connection[Any]] = None
        self.database: Optional[PandaDatabase] = None

    def close(self) -> None:
        if self.connection is not None:
            self.connection.close()
        self.connection = self.database = None


_kept = _Kept()
