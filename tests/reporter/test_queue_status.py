"""The `queue_status` section the host reporter and the remote builder both build."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from clusterwatch.reporter.queue_config import parse_queue_config
from clusterwatch.reporter.queue_status import (
    FATAL,
    host_section,
    queue_status_section,
    read_effective,
)
from tests.unprivileged import run_python, unreadable_file

PLUGINS = {section: {"name": section} for section in (
    "messenger", "monitor", "preparator", "stager", "submitter", "sweeper", "workerMaker")}
DOCUMENT: dict[str, Any] = {
    "OSG_TEMPLATE": dict(PLUGINS, queueStatus="OFFLINE", mapType="NoJob"),
    "pilot_TEMPLATE": dict(PLUGINS, queueStatus="test"),
    "BNL_PROD": {"templateQueueName": "OSG_TEMPLATE"},            # the template's, lowered
    "BNL_ANALY": {"templateQueueName": "OSG_TEMPLATE", "queueStatus": "online"},
    "SWT2": {"templateQueueName": "pilot_TEMPLATE", "queueStatus": None},  # null: online
    "PLAIN": dict(PLUGINS),                                          # default online
    "LOST": {"templateQueueName": "NO_SUCH_TEMPLATE"},
    "HALF": {"queueStatus": "online", "submitter": {}},
}


def test_it_gives_each_queue_its_effective_status_templates_merged() -> None:
    section = queue_status_section(parse_queue_config(DOCUMENT), "/etc/q.json",
                                   seen={"BNL_PROD", "GONE_FROM_CONFIG"})
    assert section == {
        "source": "/etc/q.json",
        "queues": {
            "BNL_ANALY": {"status": "online", "active": True},
            "BNL_PROD": {"status": "offline", "active": False},
            "PLAIN": {"status": "online", "active": True},
            "SWT2": {"status": "online", "active": True},
        },
        "dropped": [
            {"queue": "LOST", "message": 'templateQueueName "NO_SUCH_TEMPLATE" names no '
                                         "template: harvester skips this queue",
             "fatal": False},
            {"queue": "HALF", "message": "no messenger, monitor, preparator, stager, sweeper, "
                                         "workerMaker section (harvester requires messenger, "
                                         "monitor, preparator, stager, submitter, sweeper, "
                                         "workerMaker): harvester omits this queue",
             "fatal": False},
        ],
        "unconfigured": ["GONE_FROM_CONFIG"],
    }


def test_it_says_when_the_harvester_cannot_reload_the_file() -> None:
    section = queue_status_section(parse_queue_config(dict(DOCUMENT, BAD=["not", "a queue"])))
    assert section["error"] == FATAL
    assert section["dropped"][0] == {
        "queue": "BAD", "message": "a JSON array, not an object: harvester's reload fails on "
                                   "this file", "fatal": True}
    assert set(section["queues"]) == {"BNL_ANALY", "BNL_PROD", "PLAIN", "SWT2"}


def test_it_names_the_queues_of_the_harvester_database_the_file_lacks(tmp_path: Path) -> None:
    path = tmp_path / "panda_queueconfig.json"
    path.write_text(json.dumps(DOCUMENT))
    config_set, error = read_effective(str(path))
    assert error is None
    limits: dict[str, Any] = {"launch_limits": {"BNL_PROD": {}, "OLD_Q": {}}}
    assert host_section(config_set, error, str(path), limits)["unconfigured"] == ["OLD_Q"]
    # a database part that failed names no queue
    failed = {"launch_limits": {"error": "ERROR 2002"}}
    assert host_section(config_set, error, str(path), failed)["unconfigured"] == []
    assert host_section(config_set, error, str(path), {"error": "x"})["unconfigured"] == []


def test_it_reports_an_unreadable_or_malformed_file_without_quoting_it(tmp_path: Path) -> None:
    missing = tmp_path / "absent.json"
    assert host_section(*read_effective(str(missing)), str(missing), {}) == {
        "error": f"queue configuration: queue configuration {missing} does not exist",
        "source": str(missing)}
    for name, data in (("nul.json", b'{"Q": {"password": "s3cret\x00'),
                       ("cut.json", b'{"Q": {"password": "s3cret"'),
                       ("latin.json", b'{"Q": "\xe9s3cret"}'),
                       ("list.json", b'["s3cret"]')):
        path = tmp_path / name
        path.write_bytes(data)
        section = host_section(*read_effective(str(path)), str(path), {})
        assert set(section) == {"error", "source"}
        assert section["error"].startswith(f"queue configuration: queue configuration {path} ")
        assert "s3cret" not in section["error"]


def test_it_reports_an_unreadable_file() -> None:
    path = unreadable_file(b"{}", "q.json")
    said = run_python("from clusterwatch.reporter.queue_status import read_effective\n"
                      f"print(read_effective({str(path)!r})[1])\n")
    assert said == f"cannot read the queue configuration {path}: Permission denied\n"


def test_an_unexpected_fault_reading_the_configuration_is_an_error_field_not_a_lost_record(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from clusterwatch.reporter import main as reporter_main
    from clusterwatch.reporter import queue_status

    def broken(path: str) -> Any:
        raise RuntimeError("the parser met something nobody foresaw")

    monkeypatch.setattr(queue_status, "read_effective", broken)
    status = reporter_main.main([
        "--print", "--queue-config", str(tmp_path / "q.json"), "--log-dir", str(tmp_path),
        "--harvester-cfg", str(tmp_path / "absent.cfg"), "--state", str(tmp_path / "state")])
    record = json.loads(capsys.readouterr().out)
    assert status == 0
    assert record["queue_status"]["error"] == (
        "queue configuration: RuntimeError: the parser met something nobody foresaw")
    assert "fetching" in record and "health" in record  # the rest of the record is there
