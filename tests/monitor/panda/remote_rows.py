"""Rows of the PanDA server's harvester tables for the remote record's tests, as the server
writes them (naive UTC timestamps, lower-case columns), and the Perlmutter-like scenario.

`ServerWorkers` applies `updateWorkers` as the server does (PanDAWMS/panda-server 9cc36033):
one row per worker updated in place, `lastupdate` the server's clock, and a terminal status
kept against any new one while the row's last update is under 3 hours old.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from pathlib import Path
from typing import Any, Optional

from clusterwatch.monitor.ingest.validation import checkers
from clusterwatch.monitor.panda.remote.builder import ServerRows, build_record
from clusterwatch.monitor.panda.server_rows import (
    DialogRow,
    InstanceRow,
    MetricsRow,
    WorkerRow,
    WorkerStatsRow,
)
from clusterwatch.reporter.queue_config import QueueConfigSet, parse_queue_config

HARVESTER = "Perlmutter_test_1"
KEY = "perlmutter-harvester"
NOW = dt.datetime(2026, 10, 2, 18, 30, tzinfo=dt.timezone.utc)
EPIC = "NERSC_Perlmutter_epic"  # NoJob, ratio 50 %, minimum 5, limit 100
GPU = "NERSC_Perlmutter_epic_gpu"  # NoJob, BrokerOff, limit clipped to maxWorkers 40
PUSH = "NERSC_Perlmutter_push_test"  # OneToOne, offline: its ratio is not applied
DROPPED = "NERSC_Perlmutter_epic_old"  # names a template that does not exist
PERLMUTTER_CONFIG = (Path(__file__).resolve().parents[2] / "reporter"
                     / "queue_config_perlmutter.json")
TERMINAL = ("finished", "failed", "cancelled", "missed")


def naive(moment: dt.datetime) -> dt.datetime:
    """As the server stores it: UTC without a zone."""
    return moment.astimezone(dt.timezone.utc).replace(tzinfo=None)


def ago(**delta: float) -> dt.datetime:
    return naive(NOW - dt.timedelta(**delta))


def perlmutter_config() -> QueueConfigSet:
    return parse_queue_config(json.loads(PERLMUTTER_CONFIG.read_text(encoding="utf-8")))


def instance(**columns: Any) -> InstanceRow:
    row: InstanceRow = {
        "harvester_id": HARVESTER, "description": None, "starttime": ago(days=2),
        "owner": "pandaops", "hostname": "", "lastupdate": ago(minutes=4),
        "sw_version": "0.7.5", "commit_stamp": "2026-08-03T10:22:06"}
    row.update(columns)
    return row


def worker(workerid: int, status: str, site: Optional[str] = EPIC, **columns: Any) -> WorkerRow:
    row: WorkerRow = {
        "harvesterid": HARVESTER, "workerid": workerid, "lastupdate": ago(minutes=1),
        "status": status, "batchid": f"{40000000 + workerid}", "nodeid": None,
        "queuename": "regular", "computingsite": site, "submittime": ago(hours=1),
        "starttime": None, "endtime": None, "ncore": 128, "errorcode": 0, "stdout": None,
        "stderr": None, "batchlog": None, "resourcetype": "SCORE", "nativeexitcode": None,
        "nativestatus": None, "diagmessage": None, "computingelement": None, "njobs": 1,
        "submissionhost": "login31", "harvesterhost": "login31", "jdl": None,
        "jobtype": "managed", "pilotstarttime": None, "pilotendtime": None,
        "pilotstatus": None, "pilotstatussynctime": None, "minramcount": None}
    row.update(columns)
    return row


def dialog(diagid: int, message: str, level: str = "ERROR", module: str = "submitter",
           identifier: Optional[str] = None, at: Optional[dt.datetime] = None) -> DialogRow:
    return {"harvester_id": HARVESTER, "diagid": diagid, "modulename": module,
            "identifier": identifier, "creationtime": at or ago(minutes=diagid),
            "messagelevel": level, "diagmessage": message}


def metrics(host: Optional[str], at: dt.datetime, text: Optional[str]) -> MetricsRow:
    return {"harvester_id": HARVESTER, "creation_time": at, "harvester_host": host,
            "metrics": text}


def stats(site: str, status: str, count: int, at: Optional[dt.datetime] = None,
          resourcetype: str = "SCORE", jobtype: str = "managed") -> WorkerStatsRow:
    return {"harvester_id": HARVESTER, "computingsite": site, "resourcetype": resourcetype,
            "status": status, "jobtype": jobtype, "n_workers": count,
            "lastupdate": at or ago(minutes=3)}


def rows(**tables: Any) -> ServerRows:
    """ServerRows with every table empty but those given."""
    empty: dict[str, Any] = {"instances": [], "workers": [], "dialogs": [], "metrics": [],
                             "worker_stats": []}
    empty.update(tables)
    return ServerRows(**empty)


class ServerWorkers:
    """`harvester_workers` as the server keeps it, fed the harvester's updates in order."""

    def __init__(self) -> None:
        self.table: dict[int, WorkerRow] = {}

    def update(self, at: dt.datetime, workerid: int, status: str, **columns: Any) -> None:
        old = self.table.get(workerid)
        row = dict(old) if old is not None else dict(worker(workerid, status))
        row.update(columns)
        row["status"] = status
        row["lastupdate"] = at
        if old is not None and old["status"] in TERMINAL and (
                old["lastupdate"] > at - dt.timedelta(hours=3)):
            row["status"] = old["status"]  # "keep old status=... instead of new ..."
        self.table[workerid] = row

    def rows(self) -> list[WorkerRow]:
        return list(self.table.values())


def assert_valid(record: dict[str, Any]) -> None:
    """`record` is valid against the schema, for jsonschema and for ingest's own check."""
    reference, fast = checkers()
    errors = [f"{list(error.absolute_path)}: {error.message}"
              for error in reference.iter_errors(record)]
    assert errors == []
    assert fast is not None and fast(record)  # ingest's own check takes it too


def perlmutter_rows() -> Any:
    """The Perlmutter-like scenario's rows (its record: the remote record's tests)."""
    server = ServerWorkers()
    for number in range(12):  # running, so the ratio gives 50 % of 12 = 6
        server.update(ago(minutes=2), 100 + number, "running", starttime=ago(minutes=30))
    server.update(ago(minutes=2), 200, "submitted", submittime=ago(minutes=2))
    server.update(ago(minutes=2), 201, "submitted", submittime=ago(minutes=3))
    server.update(ago(minutes=2), 202, "missed", submittime=ago(minutes=3),
                  endtime=ago(minutes=3), diagmessage="sbatch: error: QOSMaxSubmitJobPerUserLimit")
    server.update(ago(minutes=1), 203, "running", submittime=ago(days=8),
                  starttime=ago(days=8))  # its end never arrived: not live any more
    server.update(ago(minutes=4), 204, "finished", starttime=ago(minutes=64),
                  endtime=ago(minutes=4), nativeexitcode=0)
    # The harvester first said failed, then finished: the server keeps failed (3 hours).
    server.update(ago(minutes=20), 205, "failed", starttime=ago(hours=2),
                  endtime=ago(minutes=3), errorcode=9000, nativeexitcode=73,
                  diagmessage="Payload execution error: returned non-zero 73")
    server.update(ago(minutes=2), 205, "finished")
    server.update(ago(minutes=2), 300, "running", computingsite=GPU, starttime=ago(minutes=2))
    return rows(
        instances=[instance()],
        workers=server.rows(),
        dialogs=[
            dialog(1, "failed to submit a workerID=8812001 with sbatch: error: Batch job "
                      "submission failed: Job violates accounting/QOS policy",
                   identifier=f"submit_workers <site={EPIC}>"),
            dialog(2, "failed to submit a workerID=8812002 with sbatch: error: Batch job "
                      "submission failed: Job violates accounting/QOS policy",
                   identifier=f"submit_workers <site={EPIC}>"),
            dialog(3, "proxy lifetime 20 hours below 48", level="WARNING", module="monitor"),
        ],
        metrics=[
            metrics("login31.chn.perlmutter.nersc.gov", ago(minutes=30), '{"cpu_pc": 3.5}'),
            metrics("login31.chn.perlmutter.nersc.gov", ago(minutes=5),
                    '{"cpu_pc": 11.2, "memory_pc": 3.4, "volume_data_pc": 41.0, '
                    '"cert_lifetime": {"/global/homes/p/pandaops/x509": 94}}'),
            metrics("login32.chn.perlmutter.nersc.gov", ago(minutes=2), '{"cpu_pc": 7.0}'),
        ],
        worker_stats=[stats(EPIC, "running", 12), stats(EPIC, "to_submit", 0),
                      stats(GPU, "running", 1), stats(GPU, "to_submit", 0)],
    )


def remote_record(**changes: Any) -> dict[str, Any]:
    """The record built from perlmutter_rows() with one more (monitor) dialog, and `changes`."""
    rows = perlmutter_rows()
    assert isinstance(rows.dialogs, list)
    rows = dataclasses.replace(rows, dialogs=[*rows.dialogs, dialog(
        7, f"queue {GPU} has no GPU partition left", module="monitor", level="WARNING")])
    record = build_record(HARVESTER, KEY, rows, perlmutter_config(), NOW)
    record.update(changes)
    return record
