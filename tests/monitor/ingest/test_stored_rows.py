"""What ingest stores for a series of posts, held against a plain reference kept here.

Issue 23 makes ingest cheaper (fewer encodings, fewer statements per post); what it stores
must not change. This module was written and passed before any of that work: after each
post of a series (new queues, dropped queues, a late record, a retry, a queue name no column
holds, a second key) every row ingest writes for the keys (the records, their digests, the
latest pointer with its summary, each latest queue with its slice, the pushes) is compared
with what a plain model of the rules says, with JSON's types and (on SQLite, which keeps
the text) the keys' order, and on SQLite so is the very text of each JSON column: compact
JSON as orjson writes it (core/json_text.py; `json.dumps` of the value before issue 23).
The digests are also pinned by value, so a change of the canonical form cannot hide behind
a reference that changed with it.
"""

from __future__ import annotations

import copy
import datetime as dt
import hashlib
import json
from collections.abc import Sequence
from typing import Any

import orjson
import pytest
from django.db import connection
from django.test import Client

from clusterwatch.monitor.core.models import HostReport, JobPush, LatestQueue, LatestReport
from clusterwatch.monitor.record.index import queues_in
from clusterwatch.monitor.record.slices import host_summary, queue_slice
from tests.monitor.ingest.support import at, new_token, post
from tests.monitor.records import KEY, example, typed, utc

pytestmark = pytest.mark.django_db

OTHER = "pandaharvester02"
LONG_QUEUE = "Q" * 201  # longer than LatestQueue.queue and JobPush.queue hold


def grown(key: str, minutes: int, queues: Sequence[str], seq: int) -> dict[str, Any]:
    """The example record serving `queues`, with a database part per queue (launch limits,
    workers, not-finished reasons past the number a panel shows), pushes and some text that
    is not ASCII: the parts the slices cut."""
    moment = at(minutes)
    record = example(key=key, collected_at=moment)
    sections = ("fetching", "submission", "adjustment")
    samples = {name: next(iter(record[name]["queues"].values())) for name in sections}
    for name in sections:
        record[name]["queues"] = {queue: copy.deepcopy(samples[name]) for queue in queues}
    reasons = {
        f"Job was held: reason {n} on wn{n:03d}.example.org ({'é' if n % 2 else 'ü'})": {
            "count": (n * 7) % 11 + 1, "source": "condor_event_log",
            "examples": [{"worker": 1000 * n + e, "batch_id": f"{n}.{e}"} for e in range(5)]}
        for n in range(8)}
    record["harvester_db"] = {
        "launch_limits": {q: {"siteName": q, "nQueueLimitWorker": 10 + i, "maxWorkers": 100}
                          for i, q in enumerate(queues)},
        "workers_now": {q: {"running": 5 * i, "submitted": i, "idle": 1}
                        for i, q in enumerate(queues)},
        "workers_ended": {q: {"by_status": {"finished": 3, "failed": i}}
                          for i, q in enumerate(queues)},
        "workers_not_finished": {q: {"workers": 40, "reasons": copy.deepcopy(reasons)}
                                 for q in queues},
        "service_metrics": {"hostName": f"{key}.example.org", "creationTime": utc(moment),
                            "metrics": {"cpu_pc": 12.5, "memory_pc": 40.25}},
    }
    record["submission"]["recent_pushes"] = [
        {"at": utc(moment - dt.timedelta(seconds=10 * (4 - i))),
         "pandaid": 6_000_000 + seq * 10 + i, "queue": queues[i % len(queues)],
         "workerid": 80_000 + seq * 10 + i}
        for i in range(4)]
    return record


def digest(record: Any) -> str:
    canonical = json.dumps(record, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()


class Reference:
    """The rules, plainly: every distinct record kept, the newest `collected_at` latest (the
    first arrival of a time stays), the latest record's queues indexed with their slices."""

    def __init__(self) -> None:
        self.records: dict[str, list[dict[str, Any]]] = {}

    def post(self, key: str, record: dict[str, Any]) -> None:
        kept = self.records.setdefault(key, [])
        if all(digest(old) != digest(record) for old in kept):
            kept.append(copy.deepcopy(record))

    def latest(self, key: str) -> dict[str, Any]:
        newest = self.records[key][0]
        for record in self.records[key][1:]:
            if record["collected_at"] > newest["collected_at"]:
                newest = record
        return newest


def _rows(key: str) -> dict[str, Any]:
    reports = list(HostReport.objects.filter(key=key).order_by("pk"))
    index = {report.pk: number for number, report in enumerate(reports)}
    latest = LatestReport.objects.get(key=key)
    return {
        "reports": [(utc(r.collected_at), r.size_bytes, r.digest, r.record) for r in reports],
        "latest": (index[latest.report_id], utc(latest.collected_at), latest.summary),
        "queues": {row.queue: (index[row.report_id], row.page_slice)
                   for row in LatestQueue.objects.filter(key=key).order_by("queue")},
        "pushes": sorted((p.pandaid, p.workerid, p.queue, utc(p.at), index[p.report_id])
                         for p in JobPush.objects.filter(key=key)),
    }


def _expected(reference: Reference, key: str, sizes: dict[str, int],
              first_pushes: dict[tuple[int, int], tuple[Any, ...]]) -> dict[str, Any]:
    records = reference.records[key]
    latest = reference.latest(key)
    number = records.index(latest)
    queues = {q for q in queues_in(latest) if len(q) <= 200}
    return {
        "reports": [(r["collected_at"], sizes[digest(r)], digest(r), r) for r in records],
        "latest": (number, latest["collected_at"], host_summary(latest)),
        "queues": {q: (number, queue_slice(latest, q)) for q in sorted(queues)},
        "pushes": sorted(first_pushes.values()),
    }


def _raw_json_columns(key: str) -> list[str]:
    """Every JSON column's stored text for `key`."""
    texts = []
    with connection.cursor() as cursor:
        for sql in ("SELECT record FROM monitor_hostreport WHERE key = %s",
                    "SELECT summary FROM monitor_latestreport WHERE key = %s",
                    "SELECT page_slice FROM monitor_latestqueue WHERE key = %s"):
            cursor.execute(sql, [key])
            texts += [text for (text,) in cursor.fetchall()]
    return texts


def test_it_stores_what_the_plain_rules_say_post_after_post(client: Client) -> None:
    token = new_token(KEY, OTHER)
    series = [
        (KEY, grown(KEY, 10, ["A_PanDA", "B_PanDA", "C_PanDA"], 1), 201),
        (OTHER, grown(OTHER, 10, ["A_PanDA", "Z_PanDA"], 1), 201),
        (KEY, grown(KEY, 20, ["B_PanDA", "C_PanDA", "D_PanDA"], 2), 201),  # A gone, D new
        (KEY, grown(KEY, 15, ["E_PanDA"], 3), 201),  # late: stored, never latest
        (KEY, grown(KEY, 20, ["B_PanDA", "C_PanDA", "D_PanDA"], 2), 200),  # a retry
        (KEY, grown(KEY, 20, ["B_PanDA", "F_PanDA"], 4), 201),  # the same time: not latest
        (KEY, grown(KEY, 30, ["C_PanDA", LONG_QUEUE], 5), 201),  # a name no column holds
        (OTHER, grown(OTHER, 40, ["Z_PanDA"], 2), 201),
    ]
    reference = Reference()
    sizes: dict[str, int] = {}
    pushes: dict[str, dict[tuple[int, int], tuple[Any, ...]]] = {KEY: {}, OTHER: {}}
    for key, record, status in series:
        body = json.dumps(record, separators=(",", ":"))  # in the record's own key order
        response = post(client, token, body, key=key)
        assert response.status_code == status, response.content
        if status == 201:
            number = len(reference.records.get(key, []))
            sizes[digest(record)] = len(body.encode("utf-8"))
            reference.post(key, record)
            for push in record["submission"]["recent_pushes"]:  # every stored record's
                if len(push["queue"]) <= 200:  # the first record of a push keeps it
                    pushes[key].setdefault((push["pandaid"], push["workerid"]), (
                        push["pandaid"], push["workerid"], push["queue"], push["at"], number))
        ordered = connection.vendor == "sqlite"
        for written in reference.records:
            expected = _expected(reference, written, sizes, pushes[written])
            assert _rows(written) == expected
            assert typed(_rows(written), ordered) == typed(expected, ordered)
            if connection.vendor == "sqlite":
                for stored in _raw_json_columns(written):
                    assert stored == orjson.dumps(json.loads(stored)).decode()
    assert [digest(r)[:16] for r in reference.records[KEY]] == PINNED_DIGESTS


# The digests of the series' records of KEY, taken on the code before issue 23's changes.
PINNED_DIGESTS = ["e8d78e56db8ec231", "eda732124644ed82", "24b48c77b5386a8e", "3ae6a9c76bb0d3be",
                  "02c37c8f82e7968e"]
