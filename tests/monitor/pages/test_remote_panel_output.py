"""The remote harvester's panel, as the queue page prints it, against the panels printed before
`remote_panel` read only the typed record (issue 20): a full remote record on each of its
queues, and records whose parts are missing, failed or malformed.

`remote_panels.golden.json` holds the HTML and the why of each case as the code at e0d5449
printed them (`python -m tests.monitor.pages.test_remote_panel_output` writes it from
whatever code is on the path); a panel that prints one byte differently fails here.
"""

from __future__ import annotations

import copy
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.monitor.panda.remote_rows import EPIC, GPU, KEY, NOW, PUSH, remote_record

GOLDEN = Path(__file__).with_name("remote_panels.golden.json")
LOGIN31 = "login31.chn.perlmutter.nersc.gov"
LOGIN32 = "login32.chn.perlmutter.nersc.gov"
Change = Callable[[dict[str, Any]], None]


def _database(record: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = record["harvester_db"]
    return found


def _failed_parts(record: dict[str, Any]) -> None:
    record["instance"] = {"error": "no harvester_instances row for 'X'", "harvester_id": "X"}
    record["dialogs"] = {"error": "harvester_dialogs: OperationalError: timeout"}
    record["queue_status"] = {"error": "queue configuration: not readable", "source": None}
    database = _database(record)
    database["service_metrics"] = {"error": "harvester_metrics: timeout"}
    for part in ("worker_starts", "workers_overdue"):
        database[part] = {"error": "harvester_workers: timeout"}
    database["launch_limits"][EPIC]["new_workers"] = {"error": "harvester_worker_stats: gone"}


def _malformed_parts(record: dict[str, Any]) -> None:
    database = _database(record)
    hosts = database["service_metrics"]["by_host"]
    hosts[LOGIN31]["metrics"] = {"error": "not valid JSON: Expecting value"}
    hosts[LOGIN32]["metrics"] = ["not", "an", "object"]
    hosts[LOGIN32]["creationTime"] = "yesterday"
    hosts["login33"] = "no row"
    config = database["launch_limits"][EPIC]["config"]
    config["notes"] = ["a note", 7, None, "another <note>"]
    config["pull_mode"] = "yes"
    config["limit_in_force"] = ["not", "an", "object"]
    config["mapType"] = 3
    database["launch_limits"][EPIC]["new_workers"] = {"to_submit": True, "meaning": 5}
    database["workers_overdue"] = {EPIC: {"running": 2, "idle": True, "x": "3",
                                          "submitted": 5}, GPU: ["running"]}
    del database["worker_starts"]
    database["workers_started"] = {EPIC: {"running": 3, "finished": "2"}}
    record["queue_status"]["unconfigured"] = ["ELSEWHERE", 4]
    record["queue_status"]["dropped"] = [{"queue": "OLD"}, "x", {"queue": None}]
    record["dialogs"]["kinds"][0]["queues"] = ["ELSEWHERE"]
    record["fetching"] = {"error": "fetching: the job fetcher's log is not readable"}
    record["failed_calls"] = {"communicator": {"error": "no log"}, "propagator": "x"}


def _absent_parts(record: dict[str, Any]) -> None:
    database = _database(record)
    for part in ("service_metrics", "worker_starts", "workers_overdue"):
        del database[part]
    del database["launch_limits"][EPIC]["config"]
    del database["launch_limits"][EPIC]["new_workers"]
    for section in ("queue_status", "dialogs", "daemons", "processes", "failed_calls"):
        record.pop(section, None)


def _null_parts(record: dict[str, Any]) -> None:
    database = _database(record)
    database["workers_overdue"] = None
    database["worker_starts"] = None
    database["service_metrics"] = None
    database["launch_limits"][EPIC] = {}


def _no_limits(record: dict[str, Any]) -> None:
    _database(record)["launch_limits"] = {"error": "queue configuration: not readable"}


def _no_database(record: dict[str, Any]) -> None:
    del record["harvester_db"]


def _site_name(record: dict[str, Any]) -> None:
    # The workers filed under the queue's pq_table siteName count for the queue too.
    database = _database(record)
    database["launch_limits"][EPIC]["siteName"] = "NERSC_EPIC_SITE"
    database["workers_overdue"]["NERSC_EPIC_SITE"] = {"running": 4, "submitted": 1}
    database["worker_starts"]["NERSC_EPIC_SITE"] = {"started": 2, "by_status": {"running": 2}}


CHANGES: dict[str, Change] = {
    "failed": _failed_parts, "malformed": _malformed_parts, "absent": _absent_parts,
    "null": _null_parts, "no_limits": _no_limits, "no_database": _no_database,
    "site_name": _site_name,
}


NAMES = ([f"full/{queue}" for queue in (EPIC, GPU, PUSH)]
         + [f"{name}/{EPIC}" for name in CHANGES])


def cases() -> dict[str, dict[str, Any]]:
    """Each case's record, by name: the full record on each queue, then each change on EPIC."""
    full = remote_record()
    found = {}
    for name in NAMES:
        change, record = CHANGES.get(name.split("/")[0]), copy.deepcopy(full)
        if change is not None:
            change(record)
        found[name] = record
    return found


def printed(name: str, record: dict[str, Any]) -> dict[str, str]:
    """The panel's HTML as the queue page includes it, and the panel's why."""
    from django.template.loader import render_to_string

    from clusterwatch.monitor.pages.queue_page import harvester_panel
    from clusterwatch.monitor.pages.stored import StoredRecord

    panel = harvester_panel(StoredRecord(KEY, 7, record, NOW, NOW), name.split("/")[1], NOW, 300)
    assert panel.remote is not None
    return {"html": render_to_string("monitor/_remote.html", {"panel": panel}),
            "why": f"{panel.why.kind.value} {panel.why.text}"}


@pytest.mark.parametrize("name", NAMES)
def test_it_prints_each_remote_panel_as_before(name: str) -> None:
    before = json.loads(GOLDEN.read_text(encoding="utf-8"))[name]
    assert printed(name, cases()[name]) == before


def test_the_golden_panels_are_every_case() -> None:
    assert set(json.loads(GOLDEN.read_text(encoding="utf-8"))) == set(NAMES)


def test_a_case_that_reads_differently_prints_differently() -> None:
    # The comparison can fail: the full record with another limit prints another panel.
    record = copy.deepcopy(cases()[f"full/{EPIC}"])
    record["harvester_db"]["launch_limits"][EPIC]["config"]["limit_in_force"]["value"] = 7
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))[f"full/{EPIC}"]
    assert printed(f"full/{EPIC}", record)["html"] != golden["html"]


def write_golden(path: Path) -> None:
    import django

    django.setup()
    found = {name: printed(name, record) for name, record in sorted(cases().items())}
    path.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    write_golden(Path(sys.argv[1]) if len(sys.argv) > 1 else GOLDEN)
