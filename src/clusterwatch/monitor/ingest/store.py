"""Saving a record and, in the same transaction, the indexes the pages read.

`LatestReport` moves only to a record with a newer `collected_at` than the current one, so a
reporter's backlog posted late never replaces fresher data, and never to a record dated
beyond the clock's horizon (`horizon`), while any real record takes it from one that is.
The move is a conditional UPDATE (`... WHERE key = k AND collected_at < new`): on
PostgreSQL a second worker's UPDATE of the same row waits for the first to commit and then
re-checks the condition against the committed row, so the newest record wins whatever the
arrival order; the first record of a key races on the primary key instead (IntegrityError,
then the UPDATE again). SQLite takes one write lock at the first INSERT, which serialises
the whole transaction.

A record is stored once per key: the row carries the digest of its canonical JSON under a
unique constraint, so of two identical posts racing past `duplicate_of` (two workers, each
checking before either has written) the second INSERT fails on the constraint and becomes
`AlreadyStored`, on every database, without any lock of ours.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any, Optional

import orjson
from django.db import IntegrityError, connections, router, transaction
from django.utils import timezone

from clusterwatch.monitor.core.models import (
    HostReport,
    HostToken,
    JobPush,
    LatestQueue,
    LatestReport,
)
from clusterwatch.monitor.ingest.horizon import horizon
from clusterwatch.monitor.ingest.statements import (
    binding_cursor,
    insert_ignoring_conflicts,
    insert_instance,
)
from clusterwatch.monitor.ingest.tokens import valid_key
from clusterwatch.monitor.record.index import pushes_in, queues_in
from clusterwatch.monitor.record.slices import host_summary, queue_slice
from clusterwatch.monitor.record.times import parse_utc

# Column limits (models.py), checked here so no database refuses an index row.
QUEUE_CHARS = 200
_BIGINT = 2**63
# orjson writes only JSON's own types (dates, dataclasses and subclasses go to json.dumps).
_ORJSON_OPTIONS = (orjson.OPT_SORT_KEYS | orjson.OPT_PASSTHROUGH_DATETIME
                   | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_SUBCLASS)
_DIGITS = frozenset(b"0123456789")
_E = ord("e")
# LatestQueue's table and columns (models.py; the oracle test runs it on both databases).
_REPOINT = "UPDATE monitor_latestqueue SET report_id = %s, page_slice = %s WHERE id = %s"
_MOVE_LATEST = ("UPDATE monitor_latestreport SET report_id = %s, collected_at = %s, summary = %s "
                "WHERE key = %s AND (collected_at < %s OR collected_at > %s)")
_SAME_TIME = "SELECT id, digest FROM monitor_hostreport WHERE key = %s AND collected_at = %s"
_QUEUES_OF = "SELECT queue, id FROM monitor_latestqueue WHERE key = %s"
_CHUNK = 500  # ids per DELETE, under every database's bound-parameter limit
_PUSH_FIELDS = ("pandaid", "workerid", "queue", "key", "at", "report")


class AlreadyStored(Exception):
    """The key already holds this very record (`report`): nothing new was written."""

    def __init__(self, report: HostReport) -> None:
        super().__init__(f"record already stored as {report.pk}")
        self.report = report


def record_digest(record: Mapping[str, Any], odd_floats: bool = True) -> str:
    """SHA-256 of the record's canonical JSON: equal for records equal as JSON, whatever
    the key order or spacing of the bytes they arrived as. `odd_floats`: canonical_json's."""
    return hashlib.sha256(canonical_json(record, odd_floats)).hexdigest()


def canonical_json(record: Mapping[str, Any], odd_floats: bool = True) -> bytes:
    """`json.dumps(record, sort_keys=True, separators=(",", ":"))` as ASCII bytes, the text
    every stored digest was taken of, mostly written by orjson (with the checks below 0.45 ms
    instead of 1.5-2.2 for a 200 KB record).

    For JSON's own types orjson writes the same bytes except where its output says it may
    not: text that is not ASCII (json.dumps escapes it, orjson does not), DEL (escaped by
    json.dumps only), and floats below 1e-4 or written with an exponent (the notations
    differ there); integers past 64 bits and lone surrogates make orjson refuse. Each of
    those is found in the output (`isascii`, a search for DEL, `_may_differ` for the floats)
    or raised, and then json.dumps writes the text itself. tests/monitor/ingest/test_digest.py
    compares both on generated values and on 40,000 floats of every magnitude (600,000 when
    this was written).

    `odd_floats=False` says that no float below 1e-4 (but 0) or from 1e16 on is among the
    record's values (`body.parse_body` knows): then only the strings can differ, and the
    search for those floats' notations (0.3 of the 0.6 ms a 200 KB record's digest takes)
    is skipped.
    """
    try:
        fast = orjson.dumps(record, option=_ORJSON_OPTIONS)
    except TypeError:  # orjson.JSONEncodeError: a big integer, a surrogate, another type
        fast = b""
    if fast and fast.isascii() and b"\x7f" not in fast and not (odd_floats and _may_differ(fast)):
        return fast
    return json.dumps(record, sort_keys=True, separators=(",", ":")).encode("ascii")


def _may_differ(text: bytes) -> bool:
    """Whether orjson's `text` may hold a float json.dumps writes otherwise.

    Both write a float's shortest digits, but in other notations below 1e-4 (orjson
    `0.00001`, json.dumps `1e-05`) and where either uses an exponent, which orjson always
    writes as `e+` or `e-` after a digit. Strings may hold these too (they only cost the
    slow way). Substring searches, `+` alone first since it is rare: a regular expression
    over the text took longer than json.dumps itself.
    """
    if b"0.0000" in text:
        return True
    at = text.find(b"+")
    while at >= 2:
        if text[at - 1] == _E and text[at - 2] in _DIGITS:
            return True
        at = text.find(b"+", at + 1)
    at = text.find(b"e-")
    while at >= 1:
        if text[at - 1] in _DIGITS:
            return True
        at = text.find(b"e-", at + 2)
    return False


def store_record(key: str, record: dict[str, Any], size_bytes: int,
                 token: Optional[HostToken] = None,
                 received_at: Optional[dt.datetime] = None,
                 digest: Optional[str] = None) -> tuple[HostReport, bool]:
    """Save `record` under `key`; (the HostReport, whether it became the key's latest).

    The record is expected to be valid (ingest checks it); `key` must be a valid key name
    and `collected_at` a UTC time, else ValueError before anything is written. `digest` is
    `record_digest(record)` when the caller has it already. AlreadyStored when the key
    holds the same record (also one that another worker stored a moment ago).
    """
    if not valid_key(key):
        raise ValueError(f"not a valid key: {key!r}")
    collected_at = parse_utc(record.get("collected_at"))
    if collected_at is None:
        raise ValueError("the record has no valid collected_at")
    # Everything derived from the record is computed before the transaction: on SQLite the
    # write lock (and the writers' queue, sqlite_tuning.write_lock) is held from the first
    # INSERT to the commit, so only the statements themselves belong inside it.
    summary = host_summary(record)  # what the hosts overview shows, kept with the pointer
    slices = {queue: queue_slice(record, queue)
              for queue in indexable_queues(queues_in(record))}
    pushes = _pushes(key, record)
    digest = digest or record_digest(record)
    try:
        with transaction.atomic():
            # The first statement writes, so on SQLite the write lock is taken before any
            # read; on PostgreSQL an identical record being inserted by another transaction
            # makes this INSERT wait for its outcome, then fail if it committed.
            report = HostReport(
                key=key, collected_at=collected_at, received_at=received_at or timezone.now(),
                size_bytes=size_bytes, record=record, token=token, digest=digest)
            insert_instance(report)  # HostReport.objects.create's row, prepared (statements)
            latest = _claim_latest(report, summary)
            if latest:
                _replace_queues(report, slices)
            insert_ignoring_conflicts(JobPush, _PUSH_FIELDS,
                                      [(*push, report.pk) for push in pushes])
    except IntegrityError:
        stored = HostReport.objects.filter(key=key, digest=digest).first()
        if stored is None:
            raise  # another constraint: not ours to explain
        raise AlreadyStored(stored) from None
    return report, latest


def _claim_latest(report: HostReport, summary: Mapping[str, Any]) -> bool:
    limit = horizon()
    if report.collected_at > limit:
        return False  # dated ahead of our clock: kept, never latest (ingest refuses these)
    # Older than this one, or dated past the horizon (stored before ingest refused such
    # records, or before the monitor's clock was set back): either way not the latest.
    # The common case, one statement; on PostgreSQL a concurrent update of the row makes it
    # wait and compare again with the row as that update left it.
    if _move_latest(report, summary, limit):
        return True
    fields = {"report": report, "collected_at": report.collected_at, "summary": summary}
    # No row, or one the UPDATE did not take: possibly the key's first row that another
    # worker is inserting, or committed just after the UPDATE looked. Make sure a row
    # exists (the INSERT waits for a concurrent one's outcome), then lock it and compare.
    LatestReport.objects.bulk_create([LatestReport(key=report.key, **fields)],
                                     ignore_conflicts=True)
    current = LatestReport.objects.select_for_update().get(key=report.key)
    if current.report_id == report.pk:
        return True  # our INSERT made it
    if report.collected_at > current.collected_at or current.collected_at > limit:
        LatestReport.objects.filter(key=report.key).update(**fields)
        return True
    return False  # as new or newer already (equal times: the first arrival stays)


def _move_latest(report: HostReport, summary: Mapping[str, Any], limit: dt.datetime) -> bool:
    """Whether the key's LatestReport row, older than `report` or dated past `limit`, now
    points at it: `LatestReport.objects.filter(Q(collected_at__lt=report.collected_at) |
    Q(collected_at__gt=limit), key=report.key).update(report=report, collected_at=...,
    summary=summary)` as one prepared UPDATE (the ORM's took 0.5 ms of CPU to build), the
    values through the fields' own `get_db_prep_save` as in `_repoint`."""
    connection = connections[router.db_for_write(LatestReport)]
    meta = LatestReport._meta
    when = meta.get_field("collected_at")
    values = (meta.get_field("report").get_db_prep_save(report.pk, connection),
              when.get_db_prep_save(report.collected_at, connection),
              meta.get_field("summary").get_db_prep_save(summary, connection),
              report.key, when.get_db_prep_save(report.collected_at, connection),
              when.get_db_prep_save(limit, connection))
    with binding_cursor(connection) as cursor:  # the summary is bound apart
        cursor.execute(_MOVE_LATEST, values)
        moved: bool = cursor.rowcount > 0
    return moved


def _replace_queues(report: HostReport, slices: Mapping[str, Any]) -> None:
    """Point the key's LatestQueue rows at `report`, for exactly the queues of `slices`,
    each with its queue page's slice of the record.

    A harvester's queues rarely change between records, so this updates the existing rows
    in place (one prepared UPDATE for all of them: `_repoint`) and deletes or inserts only the
    difference, instead of rewriting every row. Concurrent calls for one key are
    serialised by the LatestReport row (or its first INSERT) that the caller holds.
    """
    connection = connections[router.db_for_write(LatestQueue)]
    with connection.cursor() as cursor:  # as values_list("queue", "pk"), prepared
        cursor.execute(_QUEUES_OF, (report.key,))
        existing: dict[str, int] = dict(cursor.fetchall())
    gone = [pk for queue, pk in existing.items() if queue not in slices]
    for start in range(0, len(gone), _CHUNK):
        LatestQueue.objects.filter(pk__in=gone[start:start + _CHUNK]).delete()
    _repoint([(pk, slices[queue]) for queue, pk in existing.items() if queue in slices],
             report)
    LatestQueue.objects.bulk_create(
        [LatestQueue(key=report.key, queue=queue, report=report, page_slice=slices[queue])
         for queue in sorted(set(slices) - set(existing))])


def _repoint(rows: list[tuple[int, Any]], report: HostReport) -> None:
    """Point the LatestQueue rows `(pk, slice)` at `report`, each with its new slice: one
    prepared UPDATE run for every row (`executemany`).

    What `bulk_update` stores, for less CPU: its one UPDATE with a CASE per column builds
    an ORM expression per row and column and encodes each slice twice (`_replace_queues`
    took 3.8 ms of CPU for a 200 KB post with 5 queues, 1.2 ms this way). The values go
    through the fields' own `get_db_prep_save`, so each column holds exactly what the ORM
    would write (tests/monitor/ingest/test_stored_rows.py compares the JSON text too).
    """
    if not rows:
        return
    connection = connections[router.db_for_write(LatestQueue)]
    page_slice = LatestQueue._meta.get_field("page_slice")
    with binding_cursor(connection) as cursor:  # each slice bound apart
        cursor.executemany(_REPOINT, [(report.pk, page_slice.get_db_prep_save(value, connection),
                                       pk) for pk, value in rows])


def indexable_queues(names: Iterable[str]) -> set[str]:
    return {name for name in names if len(name) <= QUEUE_CHARS}


def _pushes(key: str, record: Mapping[str, Any]) -> list[tuple[Any, ...]]:
    """The record's pushes as rows of `_PUSH_FIELDS` but their report (not stored yet)."""
    rows: dict[tuple[int, int], tuple[Any, ...]] = {}
    for push in pushes_in(record):
        pandaid, workerid = push["pandaid"], push["workerid"]
        if not (-_BIGINT <= pandaid < _BIGINT and -_BIGINT <= workerid < _BIGINT):
            continue
        if len(push["queue"]) > QUEUE_CHARS:
            continue
        rows.setdefault((pandaid, workerid), (pandaid, workerid, push["queue"], key, push["at"]))
    return list(rows.values())


def duplicate_of(key: str, collected_at: dt.datetime, record: Mapping[str, Any],
                 digest: Optional[str] = None) -> Optional[HostReport]:
    """An already stored, identical record of `key` (the reporter delivers at least once).

    A check before writing, so that a retry takes no write lock; what makes it hold under
    concurrency is the constraint `store_record` meets. Records stored before digests
    existed are compared by content.
    """
    digest = digest or record_digest(record)
    # The key's records of that time, (id, digest) only: none, nearly always, so a prepared
    # SELECT (0.02 ms of CPU, the ORM's 0.18) and a whole row only for a candidate.
    connection = connections[router.db_for_read(HostReport)]
    when = HostReport._meta.get_field("collected_at").get_db_prep_value(collected_at, connection)
    with connection.cursor() as cursor:
        cursor.execute(_SAME_TIME, (key, when))
        candidates = cursor.fetchall()
    stored: HostReport
    for pk, stored_digest in candidates:
        if stored_digest == digest:
            stored = HostReport.objects.get(pk=pk)
            return stored
        if stored_digest is None:
            stored = HostReport.objects.get(pk=pk)
            if stored.record == record:
                return stored
    return None


def is_latest(report: HostReport) -> bool:
    found: bool = LatestReport.objects.filter(key=report.key, report=report).exists()
    return found
