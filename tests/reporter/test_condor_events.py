"""HTCondor job event logs: parsing, the reason a worker ended, and the per-run log budget."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from clusterwatch.loopback.harvester_files import CONDOR_LOGS
from clusterwatch.reporter import condor_events
from clusterwatch.reporter.condor_events import (
    log_path_for,
    parse_events,
    reasons_for_workers,
    worker_reason,
)
from clusterwatch.reporter.queue_config import MANDATORY_SECTIONS, parse_queue_config
from clusterwatch.reporter.regular_read import open_regular

FIXTURES = CONDOR_LOGS
ALL_FIXTURES = sorted(FIXTURES.glob("*.log"))

SUBMIT_HOST = (
    "<10.42.0.5:9618?addrs=10.42.0.5-9618&alias=pandaharvester01.sdcc.bnl.gov"
    "&noUDP&sock=schedd_2911_4e1c>"
)
EXECUTE_HOST = "<10.42.3.17:9618?addrs=10.42.3.17-9618&noUDP&sock=startd_1234_abcd>"


def _read(name: str) -> str:
    return (FIXTURES / name).read_text()


def _local(time: str, iso: str) -> dict[str, Any]:
    return {
        "time": time,
        "time_iso_local": iso,
        "time_iso_utc": None,
        "time_zone": "local",
        "year_known": True,
    }


# --- parse_events ---------------------------------------------------------------------


def test_it_parses_every_iso_dated_event_with_exact_fields() -> None:
    events = parse_events(_read("iso_held_then_aborted.log"))

    head = {"cluster": 1229990, "proc": 0, "subproc": 0}
    assert events == [
        {"code": 0, **head, **_local("2026-10-02 12:58:03", "2026-10-02T12:58:03"),
         "text": f"Job submitted from host: {SUBMIT_HOST}", "details": []},
        {"code": 1, **head, **_local("2026-10-02 13:01:11", "2026-10-02T13:01:11"),
         "text": f"Job executing on host: {EXECUTE_HOST}",
         "details": ["SlotName: slot1_7@acas1234.sdcc.bnl.gov"]},
        {"code": 21, **head, **_local("2026-10-02 14:01:11", "2026-10-02T14:01:11"),
         "text": "Error from starter on slot1_7@acas1234.sdcc.bnl.gov:",
         "details": ["Job has gone over cgroup memory limit of 2048 megabytes."]},
        {"code": 12, **head, **_local("2026-10-02 14:01:12", "2026-10-02T14:01:12"),
         "text": "Job was held.",
         "details": [
             "Error from slot1_7@acas1234.sdcc.bnl.gov: Job has gone over cgroup memory "
             "limit of 2048 megabytes.",
             "Code 34 Subcode 0",
         ]},
        {"code": 9, **head, **_local("2026-10-02 15:25:40", "2026-10-02T15:25:40"),
         "text": "Job was aborted.", "details": ["Python-initiated action (by user atlpan)"]},
    ]


def test_it_labels_legacy_dates_as_local_time_without_a_year() -> None:
    events = parse_events(_read("legacy_terminated_abnormal.log"))

    assert [e["code"] for e in events] == [0, 1, 6, 5]
    assert events[3] == {
        "code": 5, "cluster": 6, "proc": 0, "subproc": 0,
        "time": "10/02 14:23:05",
        "time_iso_local": None,
        "time_iso_utc": None,
        "time_zone": "local",
        "year_known": False,
        "text": "Job terminated.",
        "details": [
            "(0) Abnormal termination (signal 9)",
            "(0) No core file",
            "Usr 0 00:00:00, Sys 0 00:00:00  -  Run Remote Usage",
            "Usr 0 00:00:00, Sys 0 00:00:00  -  Run Local Usage",
            "Usr 0 00:00:00, Sys 0 00:00:00  -  Total Remote Usage",
            "Usr 0 00:00:00, Sys 0 00:00:00  -  Total Local Usage",
            "23  -  Run Bytes Sent By Job",
            "113  -  Run Bytes Received By Job",
            "23  -  Total Bytes Sent By Job",
            "113  -  Total Bytes Received By Job",
        ],
    }


def test_it_keeps_utc_logs_apart_from_local_ones() -> None:
    events = parse_events(_read("iso_utc_subsecond.log"))

    fields = [(e["time"], e["time_iso_local"], e["time_iso_utc"], e["time_zone"]) for e in events]
    assert fields == [
        ("2026-10-02 18:05:11.123Z", None, "2026-10-02T18:05:11.123Z", "UTC"),
        ("2026-10-02 18:22:13.456Z", None, "2026-10-02T18:22:13.456Z", "UTC"),
    ]


def test_it_reads_ids_wider_than_the_padding_and_four_space_bodies() -> None:
    events = parse_events(_read("legacy_reconnect_failed.log"))

    assert [(e["code"], e["cluster"], e["proc"], e["subproc"]) for e in events] == [
        (0, 1230006, 0, 0), (1, 1230006, 0, 0), (22, 1230006, 0, 0), (24, 1230006, 0, 0),
    ]
    assert events[3]["details"] == [
        "Job lease expired",
        "Can not reconnect to slot1_7@acas1234.sdcc.bnl.gov, rescheduling job",
    ]


def test_it_leaves_out_an_event_still_being_written_and_lines_outside_events() -> None:
    text = (
        "stray line before any header\r\n"
        "000 (17.003.000) 2026-10-02 13:05:11 Job submitted from host: <h>\r\n"
        "...\r\n"
        "012 (17.003.000) 2026-10-02 14:01:12 Job was held.\r\n"
        "\tReason unspecified\r\n"
    )

    events = parse_events(text)

    assert [(e["code"], e["cluster"], e["proc"], e["text"]) for e in events] == [
        (0, 17, 3, "Job submitted from host: <h>"),
    ]


def test_it_returns_no_events_for_empty_or_foreign_text() -> None:
    assert parse_events("") == []
    assert parse_events("2026-10-02 18:20:41,507 panda.log.job_fetcher: INFO run\n...\n") == []


# --- worker_reason --------------------------------------------------------------------

REASONS = {
    "iso_aborted.log": {
        "event": 9, "kind": "aborted",
        "reason": "Job was aborted. removed by SYSTEM_PERIODIC_REMOVE due to job restarted "
                  "undesirably.",
        "at_local": "2026-10-02T14:22:13", "at_written": "2026-10-02 14:22:13",
    },
    "iso_held.log": {
        "event": 12, "kind": "held", "hold_code": 13, "hold_subcode": 2,
        "reason": "Job was held. Transfer input files failure at access point pandaharvester01 "
                  "while sending files to the execution point. Details: reading from file "
                  "/data/atlpan/harvester/runpilot2-wrapper.sh: (errno 2) No such file or "
                  "directory. Code 13 Subcode 2",
        "at_local": "2026-10-02T13:10:30", "at_written": "2026-10-02 13:10:30",
    },
    "iso_held_then_aborted.log": {
        "event": 9, "kind": "aborted",
        "reason": "Job was aborted. Python-initiated action (by user atlpan) (while held: "
                  "Error from slot1_7@acas1234.sdcc.bnl.gov: Job has gone over cgroup memory "
                  "limit of 2048 megabytes. Code 34 Subcode 0)",
        "at_local": "2026-10-02T15:25:40", "at_written": "2026-10-02 15:25:40",
    },
    "iso_remote_error.log": {
        "event": 21, "kind": "remote_error", "code": 6, "subcode": 2,
        "reason": "Error from starter on slot1_2@acas1235.sdcc.bnl.gov: Failed to open "
                  "'/home/condor/execute/dir_4711/_condor_stdout' as standard output: No such "
                  "file or directory (errno 2). Code 6 Subcode 2",
        "at_local": "2026-10-02T13:11:02", "at_written": "2026-10-02 13:11:02",
    },
    "iso_disconnected.log": {
        "event": 22, "kind": "disconnected",
        "reason": "Job disconnected, attempting to reconnect. Socket between submit and "
                  "execute hosts closed unexpectedly",
        "at_local": "2026-10-02T14:10:00", "at_written": "2026-10-02 14:10:00",
    },
    "iso_terminated_nonzero.log": {
        "event": 5, "kind": "terminated", "return_value": 64,
        "reason": "Job terminated. Normal termination (return value 64)",
        "at_local": "2026-10-02T13:40:00", "at_written": "2026-10-02 13:40:00",
    },
    "iso_terminated_ok.log": {
        "event": 5, "kind": "terminated", "return_value": 0, "finished_ok": True,
        "reason": "Job terminated. Normal termination (return value 0)",
        "at_local": "2026-10-02T14:23:05", "at_written": "2026-10-02 14:23:05",
    },
    "legacy_terminated_abnormal.log": {
        "event": 5, "kind": "terminated",
        "reason": "Job terminated. Abnormal termination (signal 9)",
        "at_local": None, "at_written": "10/02 14:23:05", "year_known": False,
    },
    "legacy_shadow_exception.log": {
        "event": 7, "kind": "shadow_exception",
        "reason": "Shadow exception! Error from slot1_2@bat: FATAL:    executable file not "
                  "found in $PATH",
        "at_local": None, "at_written": "01/30 15:15:37", "year_known": False,
    },
    "legacy_reconnect_failed.log": {
        "event": 24, "kind": "reconnect_failed",
        "reason": "Job reconnection failed. Job lease expired",
        "at_local": None, "at_written": "10/02 14:30:00", "year_known": False,
    },
    "iso_utc_subsecond.log": {
        "event": 9, "kind": "aborted",
        "reason": "Job was aborted. via condor_rm (by user atlpan)",
        "at_local": None, "at_utc": "2026-10-02T18:22:13.456Z",
        "at_written": "2026-10-02 18:22:13.456Z",
    },
}


@pytest.mark.parametrize("name", sorted(REASONS))
def test_it_gives_the_last_terminal_or_hold_event_with_its_meaningful_lines(name: str) -> None:
    expected = {"at_utc": None, "year_known": True, "source": "condor_event_log"}
    expected.update(REASONS[name])

    assert worker_reason(str(FIXTURES / name)) == expected


def test_it_has_a_reason_fixture_for_every_reason_event_and_both_date_forms() -> None:
    events = {worker_reason(str(FIXTURES / name))["event"] for name in REASONS}
    assert events == {5, 7, 9, 12, 21, 22, 24}
    assert {name.split("_")[0] for name in REASONS} == {"iso", "legacy"}


def test_it_does_not_count_a_disconnection_that_was_reconnected() -> None:
    assert worker_reason(str(FIXTURES / "iso_reconnected.log")) == {
        "reason": None, "last_event": 23, "source": "condor_event_log",
    }


def test_it_reports_a_log_with_no_events() -> None:
    assert condor_events.reason_from_events([]) == {
        "reason": None, "last_event": None, "source": "condor_event_log",
    }


def test_it_turns_an_unreadable_log_into_an_error(tmp_path: Path) -> None:
    assert worker_reason(str(tmp_path / "missing.log")) == {
        "error": "cannot read condor event log: FileNotFoundError: No such file or directory",
    }
    assert worker_reason(str(tmp_path)) == {
        "error": "cannot read condor event log: NotRegularFile: not a regular file",
    }


def test_it_reads_only_the_tail_and_starts_at_an_event_boundary(tmp_path: Path) -> None:
    filler = "".join(
        f"006 (1.000.000) 2026-10-02 13:{i:02d}:00 Image size of job updated: {i}\n...\n"
        for i in range(60)
    )
    log = tmp_path / "grid.1.0.log"
    log.write_text(_read("iso_held.log").replace("1230001", "1") + filler + _read(
        "iso_aborted.log").replace("1229981", "1"))
    tail_bytes = len(_read("iso_aborted.log")) + 30  # cuts into the last filler event

    reason = worker_reason(str(log), max_bytes=tail_bytes)

    assert reason["event"] == 9
    assert "while held" not in reason["reason"]
    assert condor_events.parse_events(condor_events._read_tail(str(log), tail_bytes))[0][
        "code"] == 0


# --- log_path_for ---------------------------------------------------------------------

# The sections the harvester requires of a queue, given here by the template.
PLUGINS = {section: {"name": f"Dummy{section}"} for section in MANDATORY_SECTIONS}
QUEUE_CONFIG: dict[str, Any] = {
    "BNL_PanDA_1": dict(PLUGINS, submitter={
        "name": "HTCondorSubmitter",
        "logBaseURL": "https://pandaharvester01.sdcc.bnl.gov/condor_logs",
        "logDir": "/data/atlpan/condor_logs",
    }),
    "TEMPLATE_GRID": dict(PLUGINS, isTemplateQueue=True, submitter={
        "logBaseURL": "https://[ScheddHostname]/condor_logs/",
        "logDir": "/data/atlpan/condor_logs",
    }),
    "UM_GREX_PanDA_1": {"templateQueueName": "TEMPLATE_GRID", "submitter": {"nCorePerNode": 8}},
    "PER_HOST": dict(PLUGINS, submitter={
        "logBaseURL": "https://${hostname}.sdcc.bnl.gov/logs/${harvester_id}",
        "logDir": "/data/$hostname/condor_logs",
    }),
    "NO_LOG_DIR": dict(PLUGINS, submitter={"logBaseURL": "https://h/condor_logs"}),
}
# Each queue's submitter section as the reporter hands it over: the shared module's merge.
SUBMITTERS = parse_queue_config(QUEUE_CONFIG).submitters


def test_it_maps_a_batch_log_url_to_the_local_file() -> None:
    url = "https://pandaharvester01.sdcc.bnl.gov/condor_logs/26-10-02_18/grid.1234567.0.log"

    assert log_path_for(url, SUBMITTERS["BNL_PanDA_1"]) == (
        "/data/atlpan/condor_logs/26-10-02_18/grid.1234567.0.log"
    )


def test_it_follows_the_template_queue_and_matches_placeholders() -> None:
    url = "https://osgsub01.sdcc.bnl.gov:8443/condor_logs/26-10-02_18/grid.99.0.log"

    assert SUBMITTERS["UM_GREX_PanDA_1"]["nCorePerNode"] == 8  # merged key by key
    assert log_path_for(url, SUBMITTERS["UM_GREX_PanDA_1"]) == (
        "/data/atlpan/condor_logs/26-10-02_18/grid.99.0.log"
    )


def test_it_fills_hostname_in_log_dir_from_the_url_or_the_caller() -> None:
    url = "https://pandaharvester01.sdcc.bnl.gov/logs/BNL_harvester_1/26-10-02_18/grid.5.0.log"

    assert log_path_for(url, SUBMITTERS["PER_HOST"]) == (
        "/data/pandaharvester01/condor_logs/26-10-02_18/grid.5.0.log"
    )
    assert log_path_for(url, SUBMITTERS["PER_HOST"], hostname="h2") == (
        "/data/h2/condor_logs/26-10-02_18/grid.5.0.log"
    )


@pytest.mark.parametrize(
    ("url", "queue"),
    [
        ("https://pandaharvester01.sdcc.bnl.gov/condor_logs/26-10-02_18/grid.1.0.log", "NOPE"),
        ("https://h/condor_logs/26-10-02_18/grid.1.0.log", "NO_LOG_DIR"),
        ("https://elsewhere.example.org/condor_logs/26-10-02_18/grid.1.0.log", "BNL_PanDA_1"),
        ("https://pandaharvester01.sdcc.bnl.gov/condor_logs/../../etc/passwd", "BNL_PanDA_1"),
        ("https://pandaharvester01.sdcc.bnl.gov/condor_logs//grid.1.0.log", "BNL_PanDA_1"),
        ("https://pandaharvester01.sdcc.bnl.gov/condor_logs", "BNL_PanDA_1"),
        ("", "BNL_PanDA_1"),
    ],
)
def test_it_returns_none_without_a_safe_mapping(url: str, queue: str) -> None:
    assert log_path_for(url, SUBMITTERS.get(queue, {})) is None


def test_it_returns_none_for_a_log_dir_placeholder_it_cannot_fill() -> None:
    submitter = {"logBaseURL": "https://h/logs", "logDir": "/d/$hostname"}

    assert log_path_for("https://h/logs/26-10-02_18/grid.1.0.log", submitter) is None


def test_a_template_naming_another_template_is_not_followed_as_the_harvester_does() -> None:
    """Templates do not chain: the harvester drops a template's own templateQueueName, so a
    mapping only the second template gives is no mapping (nor is a loop followed)."""
    document = {
        "A_TEMPLATE": dict(PLUGINS, templateQueueName="B_TEMPLATE"),
        "B_TEMPLATE": dict(PLUGINS, templateQueueName="A_TEMPLATE",
                           submitter={"logBaseURL": "https://h/l", "logDir": "/d"}),
        "Q": {"templateQueueName": "A_TEMPLATE"},
        "R": {"templateQueueName": "B_TEMPLATE"},
    }
    submitters = parse_queue_config(document).submitters

    assert log_path_for("https://h/l/x/grid.1.0.log", submitters["Q"]) is None
    assert log_path_for("https://h/l/x/grid.1.0.log", submitters["R"]) == "/d/x/grid.1.0.log"


def test_a_log_location_in_the_common_section_is_the_submitters_as_in_the_harvester() -> None:
    """The harvester gives each plugin section that names its `module` and `name` the keys of
    the merged `common` section it lacks (QueueConfigMapper.load_data)."""
    common = {"logBaseURL": "https://h/l", "logDir": "/d", "module": "not.this"}
    document = {
        "T_TEMPLATE": dict(PLUGINS, common=common),
        "Q": {"templateQueueName": "T_TEMPLATE",
              "submitter": {"module": "pandaharvester.s", "name": "HTCondorSubmitter"}},
        "OWN": dict(PLUGINS, common=common,
                    submitter={"module": "pandaharvester.s", "name": "S", "logDir": "/own"}),
        "NO_MODULE": dict(PLUGINS, common=common, submitter={"name": "S"}),
    }
    submitters = parse_queue_config(document).submitters
    url = "https://h/l/x/grid.1.0.log"

    assert log_path_for(url, submitters["Q"]) == "/d/x/grid.1.0.log"
    assert submitters["Q"]["module"] == "pandaharvester.s"
    assert log_path_for(url, submitters["OWN"]) == "/own/x/grid.1.0.log"  # its own key wins
    assert log_path_for(url, submitters["NO_MODULE"]) is None  # the harvester fills none


@pytest.mark.parametrize("template", ["REMOTE_TEMPLATE", ["NOT", "A", "NAME"]])
def test_a_queue_whose_template_is_not_in_the_file_still_maps_its_logs(template: Any) -> None:
    """The harvester looks a templateQueueName up among the local and the cacher's remote
    templates (unseen here), and a reload that fails keeps the configuration it had: the
    queue's workers still write their logs where its own submitter section says."""
    document = {"Q": dict(PLUGINS, templateQueueName=template,
                          submitter={"logBaseURL": "https://h/l", "logDir": "/d"})}
    submitters = parse_queue_config(document).submitters

    assert log_path_for("https://h/l/x/grid.1.0.log", submitters.get("Q", {})) == (
        "/d/x/grid.1.0.log")


# --- reasons_for_workers --------------------------------------------------------------

BASE_URL = "https://pandaharvester01.sdcc.bnl.gov/condor_logs"


@pytest.fixture
def log_tree(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    config = {"Q": {"logBaseURL": BASE_URL, "logDir": str(tmp_path)}}
    (tmp_path / "26-10-02_18").mkdir()
    return tmp_path, config


def _worker(worker_id: int, minute: int, log_name: str | None, diag: str = "") -> dict[str, Any]:
    return {
        "workerID": worker_id,
        "queueName": "Q",
        "computingSite": "Q",
        "batchLog": f"{BASE_URL}/26-10-02_18/{log_name}" if log_name else None,
        "diagMessage": diag,
        "submitTime": "2026-10-02 17:00:00",
        "endTime": f"2026-10-02 18:{minute:02d}:00",
    }


@pytest.fixture
def opens(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every file the module opens, in order."""
    seen: list[str] = []

    def counting_open(path: str) -> Any:
        seen.append(os.path.basename(path))
        return open_regular(path)

    monkeypatch.setattr(condor_events, "open_regular", counting_open)
    return seen


def test_it_reads_at_most_the_cap_newest_first_and_the_rest_later(
    log_tree: tuple[Path, dict[str, Any]], opens: list[str]
) -> None:
    root, config = log_tree
    workers = []
    for n in range(5):
        shutil.copy(FIXTURES / "iso_aborted.log", root / "26-10-02_18" / f"grid.{n}.0.log")
        workers.append(_worker(100 + n, minute=n, log_name=f"grid.{n}.0.log", diag="diag"))

    first, cache = reasons_for_workers(workers, config, {}, max_logs=2)

    assert opens == ["grid.4.0.log", "grid.3.0.log"]
    assert first["104"]["source"] == "condor_event_log"
    assert first["103"]["source"] == "condor_event_log"
    assert first["100"] == {"reason": "diag", "source": "harvester_diag", "log_deferred": True}

    opens.clear()
    cache = json.loads(json.dumps(cache))  # the state file round trip
    second, cache = reasons_for_workers(workers, config, cache, max_logs=2)
    assert opens == ["grid.2.0.log", "grid.1.0.log"]
    assert second["104"]["source"] == "condor_event_log"  # from the cache
    assert second["100"]["log_deferred"] is True

    opens.clear()
    third, cache = reasons_for_workers(workers, config, cache, max_logs=2)
    assert opens == ["grid.0.0.log"]
    assert {r["source"] for r in third.values()} == {"condor_event_log"}
    assert third["100"]["reason"] == (
        "Job was aborted. removed by SYSTEM_PERIODIC_REMOVE due to job restarted undesirably."
    )

    opens.clear()
    reasons_for_workers(workers, config, cache, max_logs=2)
    assert opens == []


def test_a_worker_maps_through_its_computing_site_not_its_batch_queue(
    log_tree: tuple[Path, dict[str, Any]]
) -> None:
    """harvester sets `computingSite` to the queue configuration's name; `work_table.queueName`
    is the batch system's queue (a submitter may set it), no configuration entry."""
    root, config = log_tree
    shutil.copy(FIXTURES / "iso_held.log", root / "26-10-02_18" / "grid.7.0.log")
    worker = dict(_worker(7, minute=7, log_name="grid.7.0.log"), queueName="regular")

    results, _ = reasons_for_workers([worker], config, {})

    assert results["7"]["source"] == "condor_event_log"


def test_it_uses_the_default_cap_of_300(
    log_tree: tuple[Path, dict[str, Any]], opens: list[str]
) -> None:
    root, config = log_tree
    workers = [_worker(n, minute=n % 60, log_name=f"grid.{n}.0.log") for n in range(301)]
    for n in range(301):
        shutil.copy(FIXTURES / "iso_held.log", root / "26-10-02_18" / f"grid.{n}.0.log")

    results, cache = reasons_for_workers(workers, config, {})

    assert len(opens) == 300
    assert sum(1 for r in results.values() if r.get("log_deferred")) == 1
    assert len(cache) == 300


def test_it_reuses_the_cache_and_prunes_workers_no_longer_relevant(
    log_tree: tuple[Path, dict[str, Any]], opens: list[str]
) -> None:
    root, config = log_tree
    shutil.copy(FIXTURES / "iso_held.log", root / "26-10-02_18" / "grid.1.0.log")
    worker = _worker(1, minute=5, log_name="grid.1.0.log")
    _, cache = reasons_for_workers([worker], config, {})
    cache["999"] = {"log": {"reason": "gone"}, "final": True}
    opens.clear()

    results, cache = reasons_for_workers([worker], config, cache)

    assert opens == []
    assert set(cache) == {"1"}
    assert results["1"]["kind"] == "held"
    assert results["1"]["source"] == "condor_event_log"


def test_it_falls_back_to_the_harvester_diagnostic_when_no_log_is_readable(
    log_tree: tuple[Path, dict[str, Any]], opens: list[str]
) -> None:
    _, config = log_tree
    diag = "Condor HoldReason: Job has gone over cgroup memory limit ; Worker canceled by harvester"
    workers = [
        _worker(1, minute=1, log_name="grid.missing.log", diag=diag + " "),
        _worker(2, minute=2, log_name=None, diag="Payload execution error: returned non-zero 1"),
        _worker(3, minute=3, log_name="grid.missing3.log", diag=""),
    ]

    results, cache = reasons_for_workers(workers, config, {})

    missing = "cannot read condor event log: FileNotFoundError: No such file or directory"
    assert results == {
        "1": {"reason": diag, "source": "harvester_diag", "log_error": missing},
        "2": {"reason": "Payload execution error: returned non-zero 1",
              "source": "harvester_diag", "log_error": "no log path for this worker"},
        "3": {"reason": None, "source": "none", "log_error": missing},
    }
    assert opens == ["grid.missing3.log", "grid.missing.log"]
    # An unreadable log is read once, like any other.
    opens.clear()
    again, _ = reasons_for_workers(workers, config, cache)
    assert opens == []
    assert again == results


def test_it_retries_a_log_without_a_terminal_event_and_uses_the_diagnostic_meanwhile(
    log_tree: tuple[Path, dict[str, Any]], opens: list[str]
) -> None:
    root, config = log_tree
    log = root / "26-10-02_18" / "grid.7.0.log"
    shutil.copy(FIXTURES / "iso_reconnected.log", log)
    worker = _worker(7, minute=7, log_name="grid.7.0.log", diag="missed")

    results, cache = reasons_for_workers([worker], config, {})
    assert results["7"] == {"reason": "missed", "source": "harvester_diag", "log_last_event": 23}

    with log.open("a") as handle:
        handle.write(_read("iso_aborted.log").split("...\n")[2] + "...\n")
    opens.clear()
    results, cache = reasons_for_workers([worker], config, cache)

    assert opens == ["grid.7.0.log"]
    assert results["7"]["kind"] == "aborted"
    assert cache["7"]["final"] is True


def test_it_reports_a_normal_exit_as_finished_ok(
    log_tree: tuple[Path, dict[str, Any]],
) -> None:
    root, config = log_tree
    shutil.copy(FIXTURES / "iso_terminated_ok.log", root / "26-10-02_18" / "grid.8.0.log")

    results, _ = reasons_for_workers([_worker(8, 8, "grid.8.0.log", "x")], config, {})

    assert results["8"]["finished_ok"] is True
    assert results["8"]["source"] == "condor_event_log"


# --- cross-check against HTCondor's own reader ----------------------------------------


def _htcondor2() -> Any:
    try:
        import htcondor2  # type: ignore[import-not-found]
    except ImportError as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true and htcondor2 cannot be imported: {exc}", pytrace=False)
        pytest.skip(f"htcondor2 (pip package htcondor) cannot be imported: {exc}")
    return htcondor2


@pytest.mark.parametrize("path", ALL_FIXTURES, ids=[p.name for p in ALL_FIXTURES])
def test_it_agrees_with_htcondor_on_every_fixture(path: Path) -> None:
    htcondor2 = _htcondor2()
    theirs = list(htcondor2.JobEventLog(str(path)).events(stop_after=0))
    ours = parse_events(path.read_text())

    assert [(int(e.type), e.cluster, e.proc) for e in theirs] == [
        (e["code"], e["cluster"], e["proc"]) for e in ours
    ]
    for event, mine in zip(theirs, ours):
        assert event["Subproc"] == mine["subproc"]
        written = mine["time_iso_local"] or (mine["time_iso_utc"] or "").rstrip("Z")
        if mine["year_known"]:
            assert event["EventTime"] == written
        else:  # HTCondor guesses a year; the month, day and clock must still agree
            month_day, clock = mine["time"].split(" ")
            assert event["EventTime"][5:] == month_day.replace("/", "-") + "T" + clock
        if mine["code"] == 12:
            assert event["HoldReason"] == mine["details"][0]
            assert mine["details"][1] == "Code {} Subcode {}".format(
                event["HoldReasonCode"], event["HoldReasonSubCode"])
        if mine["code"] == 9:
            assert event["Reason"] == mine["details"][0]
        if mine["code"] == 5:
            if event["TerminatedNormally"]:
                assert f"(return value {event['ReturnValue']})" in mine["details"][0]
            else:
                assert f"(signal {event['TerminatedBySignal']})" in mine["details"][0]
