"""record.host_record: the typed record against the schema the reporter ships, the shapes
its harvester_db code builds, and any JSON at all."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterator
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from clusterwatch.monitor.ingest.validation import schema_document
from clusterwatch.monitor.record import admission as adm
from clusterwatch.monitor.record import failed_calls, logs, regulation
from clusterwatch.monitor.record import harvester_db as db
from clusterwatch.monitor.record import host_state as host
from clusterwatch.monitor.record import pilot_dispatch as dispatch
from clusterwatch.monitor.record import remote_harvester_db as remote_db
from clusterwatch.monitor.record import remote_sections as remote
from clusterwatch.monitor.record.host_record import HostRecord, parse_record
from clusterwatch.monitor.record.sections import REQUIRED_SECTIONS
from clusterwatch.reporter import harvester_db as reporter_db
from clusterwatch.reporter.harvester_regulation import add_limits_in_force
from clusterwatch.reporter.record import group_not_finished
from tests.monitor.panda.remote_rows import remote_record
from tests.monitor.records import example, with_database

ERROR = "#/$defs/error"
# Each typed structure, the schema objects it reads (one for each form the value may take),
# and the field that holds an object's additionalProperties where the schema names none.
READS: dict[type, tuple[tuple[str, ...], str | None]] = {
    HostRecord: (("#",), None),
    host.RecordInterval: (("#/properties/interval",), None),
    logs.LogRead: (("#/$defs/read",), None),
    logs.FetchingLog: (("#/properties/fetching",), None),
    logs.FetchQueue: (("#/$defs/fetch_queue",), None),
    logs.FetchAttempt: (("#/$defs/fetch_queue/properties/last/anyOf/1",), None),
    logs.SubmissionLog: (("#/properties/submission",), None),
    logs.SubmitQueue: (("#/$defs/submit_queue",), None),
    logs.WorkersStatus: (("#/$defs/submit_queue/properties/workers_status/anyOf/1",), None),
    logs.WorkerPush: (("#/$defs/push",), None),
    logs.AdjustmentLog: (("#/properties/adjustment",), None),
    logs.AdjusterLimit: (("#/properties/adjustment/properties/queues/additionalProperties",),
                         None),
    failed_calls.FailedCallsLog: (("#/properties/failed_calls",), None),
    failed_calls.DaemonCalls: (("#/$defs/failed_daemon",), None),
    failed_calls.LastCall: (("#/$defs/failed_daemon/properties/last/anyOf/1",), None),
    host.Daemons: ((ERROR,), "logs"),
    host.DaemonLog: ((ERROR, "#/properties/daemons/anyOf/1/additionalProperties/anyOf/1"),
                     None),
    host.Processes: ((ERROR, "#/properties/processes/anyOf/1"), None),
    db.HarvesterDb: (("#/properties/harvester_db",), None),
    db.NotFinishedRead: (("#/properties/harvester_db/properties/workers_not_finished_read",),
                         None),
    host.Health: (("#/properties/health",), None),
    host.Volumes: ((ERROR,), "mounts"),
    host.VolumeReading: ((
        ERROR, "#/properties/health/properties/volumes/anyOf/1/additionalProperties/anyOf/1",
        "#/properties/health/properties/volumes/anyOf/1/additionalProperties/anyOf/2"), None),
    host.DeliveryState: (("#/properties/delivery",), None),
    host.CharactersReplaced: (("#/properties/characters_replaced",), None),
    host.StateDamage: (("#/properties/state",), None),
    remote.Instance: ((ERROR, "#/properties/instance/anyOf/1"), None),
    remote.QueueStatus: (("#/properties/queue_status",), None),
    remote.QueueState: (("#/$defs/queue_state",), None),
    dispatch.PilotDispatch: (("#/$defs/pilot_dispatch",), None),
    dispatch.PolicyEvidence: (("#/$defs/pilot_dispatch/properties/policy",), None),
    adm.Admission: ((ERROR, "#/$defs/admission"), None),
    adm.AdmissionRead: (("#/$defs/admission/properties/read",), None),
    adm.AdmissionQueue: (("#/$defs/admission_queue",), None),
    adm.Coverage: (("#/$defs/admission_queue/properties/coverage",), None),
    adm.EndClass: (("#/$defs/admission_class",), None),
    adm.RefusalGroup: (("#/$defs/admission_group",), None),
    adm.RefusalExample: (("#/$defs/admission_group/properties/examples/items",), None),
    remote.DroppedQueue: (("#/$defs/dropped_queue",), None),
    remote.Dialogs: (("#/properties/dialogs",), None),
    remote.DialogModule: (("#/$defs/dialog_module",), None),
    remote.DialogMessage: (("#/$defs/dialog_message",), None),
    remote.DialogKind: (("#/$defs/dialog_kind",), None),
}


def _node(pointer: str) -> dict[str, Any]:
    node: Any = schema_document()
    for part in pointer.removeprefix("#").strip("/").split("/"):
        if part:
            node = node[int(part)] if isinstance(node, list) else node[part]
    assert isinstance(node, dict)
    return node


def _objects(node: Any, pointer: str = "#") -> Iterator[str]:
    """The pointer of every object the schema names properties of."""
    if not isinstance(node, dict):
        return
    if isinstance(node.get("properties"), dict):
        yield pointer
    for keyword in ("properties", "$defs"):
        for name, child in node.get(keyword, {}).items():
            yield from _objects(child, f"{pointer}/{keyword}/{name}")
    for keyword in ("additionalProperties", "items"):
        yield from _objects(node.get(keyword), f"{pointer}/{keyword}")
    for index, child in enumerate(node.get("anyOf", [])):
        yield from _objects(child, f"{pointer}/anyOf/{index}")


def _fields(cls: type, *, marked: str | None = None) -> set[str]:
    return {field.name for field in dataclasses.fields(cls)
            if (marked is None and not field.metadata) or (marked in field.metadata)}


def test_every_schema_object_has_a_typed_counterpart() -> None:
    read = {pointer for pointers, _ in READS.values() for pointer in pointers}
    assert set(_objects(schema_document())) - read == set()


def test_each_type_names_exactly_the_fields_the_schema_names() -> None:
    for cls, (pointers, map_field) in READS.items():
        named = {name for pointer in pointers for name in _node(pointer)["properties"]}
        if map_field is not None:
            named.add(map_field)
        assert _fields(cls) == named, cls.__name__


def test_what_a_type_reads_beyond_the_schema_is_still_beyond_it() -> None:
    for cls, (pointers, _) in READS.items():
        named = {name for pointer in pointers for name in _node(pointer)["properties"]}
        assert _fields(cls, marked="beyond_schema") & named == set(), cls.__name__


def test_the_required_sections_are_the_schemas() -> None:
    required = set(schema_document()["required"])
    assert set(REQUIRED_SECTIONS) <= required
    assert required - set(REQUIRED_SECTIONS) == {
        "schema_version", "host", "hostname", "collected_at", "reporter_version", "interval",
        "collect_seconds"}


def _built(cls: type, *, remote: bool = False) -> set[str]:
    """The fields of `cls` that a builder sends: every one but those the record derives, and
    (unless `remote`) those only the remote builder sends."""
    return {field.name for field in dataclasses.fields(cls)
            if "derived" not in field.metadata and (remote or "remote" not in field.metadata)}


def test_the_database_types_name_what_the_reporter_builds() -> None:
    """The schema leaves harvester_db's parts open: their shapes are the reporter's code."""
    at = "2026-10-02T18:27:05Z"
    limits = reporter_db._launch_limits([
        {"queueName": "Q", "siteName": "Q", "jobType": None, "resourceType": None,
         "nQueueLimitWorker": 1, "maxWorkers": 2, "nQueueLimitJob": 3, "nNewWorkers": 4,
         "jobFetchTime": at, "submitTime": at}])
    add_limits_in_force({"launch_limits": limits, "workers_now": {}}, None, "no config")
    limits = limits["Q"]
    assert set(limits) == _built(db.QueueLaunchLimits)
    assert set(limits["by_type"]["ANY/ANY"]) == {
        field.name for field in dataclasses.fields(db.WorkerLimits)}
    ended = reporter_db.workers_ended_part([
        {"computingSite": "Q", "status": "finished", "startTime": at, "endTime": at}])["Q"]
    assert set(ended) == {field.name for field in dataclasses.fields(db.EndedWorkers)}
    grouped = group_not_finished(
        [{"workerID": 1, "computingSite": "Q", "batchID": "1.0", "nodeID": "n",
          "computingElement": "ce", "batchLog": "https://h/l"}],
        {"1": {"reason": "held", "source": "condor_event_log"}})["Q"]
    assert set(grouped) == {field.name for field in dataclasses.fields(db.NotFinishedWorkers)}
    group = grouped["reasons"]["held"]
    assert set(group) == {field.name for field in dataclasses.fields(db.ReasonGroup)}
    assert set(group["examples"][0]) == {
        field.name for field in dataclasses.fields(db.WorkerExample)}
    columns = {name for part, names, _ in reporter_db._queries(0, 0, "h")
               if part == "workers_not_finished_candidates" for name, _ in names}
    assert {field.name for field in dataclasses.fields(db.CandidateRow)} <= (
        columns | {"batchLog"})
    metrics = reporter_db._service_metrics([], "h.example")
    assert set(metrics) | {"error"} == _built(remote_db.ServiceMetrics)


def test_the_remote_types_name_what_the_remote_builder_builds() -> None:
    """What the monitor's remote builder adds to harvester_db (panda.remote.limits, .metrics),
    over every queue of the Perlmutter scenario: one of them has no worker stats row."""
    database = remote_record()["harvester_db"]
    entries = database["launch_limits"].values()
    # The reporter's pq_table columns (not every one: the configuration's limits are in
    # `config` here), and exactly the fields marked the remote builder's.
    names = {name for entry in entries for name in entry}
    assert names <= _built(db.QueueLaunchLimits, remote=True)
    assert names - _built(db.QueueLaunchLimits) == (
        _built(db.QueueLaunchLimits, remote=True) - _built(db.QueueLaunchLimits))
    assert {name for entry in entries for name in entry["config"]} == _built(
        remote_db.QueueConfig)
    assert {name for entry in entries for name in entry["config"]["limit_in_force"]} | {
        "error"} == _built(regulation.LimitInForce)
    assert {name for entry in entries for name in entry["new_workers"]} | {"error"} == _built(
        remote_db.NewWorkers)
    metrics = database["service_metrics"]
    assert set(metrics) | {"error"} == _built(remote_db.ServiceMetrics, remote=True)
    assert {name for row in metrics["by_host"].values() for name in row} == _built(
        remote_db.HostMetrics)


def test_it_reads_the_remote_builders_parts() -> None:
    record = remote_record()
    record["harvester_db"]["service_metrics"]["by_host"]["login31.chn.perlmutter.nersc.gov"][
        "metrics"] = {"error": "not valid JSON"}
    database = parse_record(record).harvester_db
    epic = database.launch_limits.entries["NERSC_Perlmutter_epic"]
    assert epic.config is not None and epic.config.pull_mode and epic.config.mapType == "NoJob"
    assert epic.config.limit_in_force == regulation.LimitInForce(
        None, 6, 100, 12, epic.config.limit_in_force.derivation)
    assert epic.new_workers is not None and epic.new_workers.to_submit == 0
    assert epic.new_workers.at == dt.datetime(2026, 10, 2, 18, 27, tzinfo=dt.timezone.utc)
    push = database.launch_limits.entries["NERSC_Perlmutter_push_test"].new_workers
    assert push is not None and push.missing is not None and push.to_submit is None
    hosts = database.service_metrics.by_host
    assert hosts["login31.chn.perlmutter.nersc.gov"].metrics is None
    assert hosts["login31.chn.perlmutter.nersc.gov"].metrics_error == "not valid JSON"
    assert hosts["login32.chn.perlmutter.nersc.gov"].metrics is not None
    assert database.workers_overdue is not None
    assert database.workers_overdue.entries["NERSC_Perlmutter_epic"] == (("running", 1),)
    reporters = parse_record(with_database(example())).harvester_db
    assert reporters.workers_overdue is None and not reporters.service_metrics.by_host


def test_it_reads_the_reporters_example_record() -> None:
    record = parse_record(with_database(example()))
    assert record.host == "pandaharvester01" and record.schema_version == 1
    assert record.collected_at == dt.datetime(2026, 11, 29, 13, 30, 48, tzinfo=dt.timezone.utc)
    fetch = record.fetching.queues["BNL_PanDA_1"]
    assert (fetch.attempts, fetch.failed, fetch.jobs_got) == (6, 4, 47)
    assert fetch.errors[0] == ("SSLError", 2)
    assert record.failed_calls.communicator.failed == 4
    assert [name for name, _ in record.failed_calls.by_daemon()] == ["communicator",
                                                                    "propagator"]
    limits = record.harvester_db.launch_limits.entries["BNL_PanDA_1"]
    assert limits.maxWorkers == 400 and limits.pairs()[0] == ("nQueueLimitWorker", 50)
    assert record.missing_sections == ()


def test_it_reads_an_empty_object_as_a_record_missing_every_section() -> None:
    record = parse_record({})
    assert record.missing_sections == REQUIRED_SECTIONS
    assert record.fetching.queues is None and record.health.volumes is None
    assert record.harvester_db.workers_not_finished is None


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["error", "read", "queues", "BNL_PanDA_1", "last", "at", "volumes",
                         "/", "examples", "reasons", "x"]), inner, max_size=4),
    max_leaves=20)


@given(st.dictionaries(st.sampled_from(sorted(schema_document()["properties"])), JSON))
def test_it_reads_any_json_without_failing(sections: dict[str, Any]) -> None:
    parse_record(sections)
    parse_record(dict(example(), **sections))
