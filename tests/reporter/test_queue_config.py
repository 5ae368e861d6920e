"""The queue configuration as the harvester sees it: templates, merging, statuses, the record."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from clusterwatch.reporter.queue_config import (
    MANDATORY_SECTIONS,
    EffectiveQueue,
    QueueConfigSet,
    QueueProblem,
    load_queue_config,
    parse_queue_config,
)

PERLMUTTER = Path(__file__).with_name("queue_config_perlmutter.json")
DOCS = Path(__file__).resolve().parents[2] / "docs" / "queue-config.md"
# The sections the harvester requires of every queue, as a template usually gives them.
PLUGINS = {section: {"name": f"Dummy{section}", "module": f"pandaharvester.{section}"}
           for section in MANDATORY_SECTIONS}


def queue(**settings: Any) -> dict[str, Any]:
    """A queue entry with every mandatory plugin section."""
    return dict(copy.deepcopy(PLUGINS), **settings)


def only(document: dict[str, Any]) -> EffectiveQueue:
    parsed = parse_queue_config(document)
    assert parsed.problems == ()
    (found,) = parsed.queues.values()
    return found


def test_it_takes_entries_ending_in_template_as_templates_not_queues() -> None:
    parsed = parse_queue_config({"pull_TEMPLATE": queue(), "Q": {"templateQueueName":
                                                                 "pull_TEMPLATE"}})
    assert list(parsed.queues) == ["Q"] and parsed.templates == ("pull_TEMPLATE",)


def test_it_takes_is_template_queue_true_as_a_template_and_nothing_else_as_one() -> None:
    parsed = parse_queue_config({
        "pull": queue(isTemplateQueue=True),
        "Q1": queue(isTemplateQueue="true"), "Q2": queue(isTemplateQueue=1),
        "Q3": queue(isTemplateQueue=False)})
    assert parsed.templates == ("pull",)
    assert sorted(parsed.queues) == ["Q1", "Q2", "Q3"]
    assert "isTemplateQueue" not in parsed.queues["Q1"].settings


def test_it_lets_the_queue_replace_the_templates_values() -> None:
    found = only({"T_TEMPLATE": queue(maxWorkers=10, walltimeLimit=3600, extra={"a": 1, "b": 2}),
                  "Q": {"templateQueueName": "T_TEMPLATE", "maxWorkers": 20,
                        "extra": {"a": 5}}})
    assert found.template == "T_TEMPLATE"
    assert found.settings["maxWorkers"] == 20 and found.settings["walltimeLimit"] == 3600
    assert found.settings["extra"] == {"a": 5}  # not a plugin section: replaced whole


def test_it_merges_plugin_sections_key_by_key_one_level_deep() -> None:
    template = queue(submitter={"name": "SlurmSubmitter", "module": "m", "nCore": 128,
                                "templateFile": "cpu.sdf", "env": {"A": "1", "B": "2"}},
                     throttler={"name": "T", "module": "t", "limit": 5})
    found = only({"T_TEMPLATE": template, "Q": {
        "templateQueueName": "T_TEMPLATE",
        "submitter": {"templateFile": "gpu.sdf", "nGpu": 4, "env": {"A": "9"}},
        "throttler": {"limit": 7}}})
    assert found.settings["submitter"] == {"name": "SlurmSubmitter", "module": "m", "nCore": 128,
                                           "templateFile": "gpu.sdf", "nGpu": 4,
                                           "env": {"A": "9"}}
    assert found.settings["throttler"] == {"name": "T", "module": "t", "limit": 7}


def test_it_replaces_a_plugin_section_that_is_not_an_object_on_either_side() -> None:
    parsed = parse_queue_config({
        "T_TEMPLATE": queue(zipper="none", extractor={"name": "E", "module": "e"}),
        "Q": {"templateQueueName": "T_TEMPLATE", "zipper": {"name": "Z", "module": "z"},
              "extractor": None}})
    settings = parsed.queues["Q"].settings
    assert settings["zipper"] == {"name": "Z", "module": "z"} and settings["extractor"] is None


def test_it_never_lets_one_queue_change_the_template_another_reads() -> None:
    parsed = parse_queue_config({
        "T_TEMPLATE": queue(submitter={"name": "S", "module": "s", "nCore": 1}),
        "A": {"templateQueueName": "T_TEMPLATE", "submitter": {"nCore": 64}},
        "B": {"templateQueueName": "T_TEMPLATE"}})
    assert parsed.queues["A"].settings["submitter"]["nCore"] == 64
    assert parsed.queues["B"].settings["submitter"]["nCore"] == 1


def test_it_ignores_a_templates_own_template_name() -> None:
    parsed = parse_queue_config({
        "base_TEMPLATE": queue(maxWorkers=99),
        "pull_TEMPLATE": {"templateQueueName": "base_TEMPLATE", "mapType": "NoJob"},
        "Q": {"templateQueueName": "pull_TEMPLATE"}})
    assert parsed.queues == {} and parsed.problems == (QueueProblem(
        "Q", "no messenger, monitor, preparator, stager, submitter, sweeper, workerMaker "
             "section (harvester requires messenger, monitor, preparator, stager, submitter, "
             "sweeper, workerMaker): harvester omits this queue", False),)


def test_it_drops_a_queue_whose_template_does_not_exist_and_says_why() -> None:
    parsed = parse_queue_config({"T_TEMPLATE": queue(),
                                 "Q": queue(templateQueueName="T2_TEMPLATE"),
                                 "R": queue(templateQueueName=7)})
    assert parsed.queues == {} and not parsed.fatal
    assert parsed.problems == (
        QueueProblem("Q", 'templateQueueName "T2_TEMPLATE" names no template: '
                          "harvester skips this queue", False),
        QueueProblem("R", "templateQueueName 7 names no template: harvester skips this queue",
                     False))


def test_it_marks_an_unhashable_template_name_fatal() -> None:
    parsed = parse_queue_config({"Q": queue(templateQueueName=["T_TEMPLATE"])})
    assert parsed.fatal and parsed.problems == (QueueProblem(
        "Q", 'templateQueueName ["T_TEMPLATE"] is not a name: '
             "harvester's reload fails on this file", True),)


def test_it_marks_an_entry_that_is_not_an_object_fatal_and_keeps_the_others() -> None:
    parsed = parse_queue_config({"A_TEMPLATE": [1], "B": "online", "Q": queue()})
    assert list(parsed.queues) == ["Q"] and parsed.fatal
    assert [(p.queue, p.message) for p in parsed.problems] == [
        ("A_TEMPLATE", "a JSON array, not an object: harvester's reload fails on this file"),
        ("B", "a JSON string, not an object: harvester's reload fails on this file")]


def test_it_omits_a_queue_missing_a_mandatory_plugin_section() -> None:
    entry = queue()
    del entry["sweeper"], entry["messenger"]
    parsed = parse_queue_config({"Q": entry})
    assert parsed.queues == {}
    assert parsed.problems[0].message.startswith("no messenger, sweeper section (")


def test_it_keeps_each_entrys_merged_submitter_for_log_paths_even_when_omitted() -> None:
    """The cacher's remote configuration (unseen here) may give an omitted queue its missing
    sections; its workers' log URLs still map through the local submitter section."""
    document = {
        "T_TEMPLATE": queue(submitter={"logBaseURL": "https://h/logs", "logDir": "/d"}),
        "FULL": {"templateQueueName": "T_TEMPLATE", "submitter": {"logDir": "/e"}},
        "PARTIAL": {"submitter": {"logBaseURL": "https://p/logs", "logDir": "/p"}},
        "TEMPLATE_GONE": {"templateQueueName": "GONE_TEMPLATE", "submitter": {"logDir": "/x"}},
        "NO_SUBMITTER": {"templateQueueName": "T_TEMPLATE", "submitter": None},
    }
    parsed = parse_queue_config(document)
    assert sorted(parsed.queues) == ["FULL", "NO_SUBMITTER"]
    assert parsed.submitters == {
        "FULL": {"logBaseURL": "https://h/logs", "logDir": "/e"},  # merged key by key
        "PARTIAL": {"logBaseURL": "https://p/logs", "logDir": "/p"},
        "TEMPLATE_GONE": {"logDir": "/x"},  # its template may be the cacher's: its own
        "NO_SUBMITTER": {},
    }


def test_it_defaults_the_status_to_online_and_lowers_its_case() -> None:
    parsed = parse_queue_config({"A": queue(), "B": queue(queueStatus="BrokerOff"),
                                 "C": queue(queueStatus=None), "D": queue(queueStatus="TEST")})
    assert {name: q.status for name, q in parsed.queues.items()} == {
        "A": "online", "B": "brokeroff", "C": "online", "D": "test"}
    assert all(q.active for q in parsed.queues.values())


def test_it_takes_an_offline_queue_as_inactive() -> None:
    found = only({"Q": queue(queueStatus="Offline")})
    assert found.status == "offline" and not found.active


def test_it_marks_a_status_that_is_not_text_fatal() -> None:
    parsed = parse_queue_config({"Q": queue(queueStatus=0), "R": queue()})
    assert list(parsed.queues) == ["R"] and parsed.problems == (QueueProblem(
        "Q", "queueStatus 0 is not text: harvester's reload fails on this file", True),)


def test_it_defaults_the_map_type_run_mode_and_new_workers() -> None:
    found = only({"Q": queue()})
    assert (found.map_type, found.pull_mode, found.run_mode, found.new_workers) == (
        "OneToOne", False, "self", 0)


def test_it_takes_no_job_as_pull_mode() -> None:
    found = only({"Q": queue(mapType="NoJob", runMode="slave", nNewWorkers=5)})
    assert (found.pull_mode, found.run_mode, found.new_workers) == (True, "slave", 5)


@pytest.mark.parametrize("map_type", ["nojob", "Pull", 3])
def test_it_treats_an_unknown_map_type_as_push_and_says_so(map_type: Any) -> None:
    found = only({"Q": queue(mapType=map_type, nQueueLimitWorkerRatio=50)})
    assert not found.pull_mode and found.limits.values["nQueueLimitWorkerRatio"] is None
    assert found.notes[0] == (f"mapType {json.dumps(map_type)} is not one of NoJob, OneToOne, "
                              "ManyToOne, OneToMany: harvester treats the queue as push "
                              "(not NoJob)")


def test_it_does_not_show_new_workers_that_are_not_an_integer() -> None:
    found = only({"Q": queue(nNewWorkers="5")})
    assert found.new_workers is None
    assert found.notes == ('nNewWorkers "5" is not an integer: not shown',)


def test_it_keeps_plugin_settings_out_of_the_record() -> None:
    found = only({"Q": queue(messenger={"name": "M", "module": "m", "password": "s3cret"})})
    assert found.settings["messenger"]["password"] == "s3cret"
    assert "s3cret" not in json.dumps(found.to_record())


def perlmutter() -> QueueConfigSet:
    return parse_queue_config(load_queue_config(str(PERLMUTTER)))


def test_it_reads_a_perlmutter_like_configuration_as_the_harvester_does() -> None:
    parsed = perlmutter()
    assert parsed.templates == ("nersc.pull_TEMPLATE", "nersc.push")
    assert sorted(parsed.queues) == ["NERSC_Perlmutter_epic", "NERSC_Perlmutter_epic_gpu",
                                     "NERSC_Perlmutter_push_test"]
    assert parsed.problems == (QueueProblem(
        "NERSC_Perlmutter_epic_old", 'templateQueueName "nersc.pull_v0_TEMPLATE" names no '
                                     "template: harvester skips this queue", False),)
    epic = parsed.queues["NERSC_Perlmutter_epic"]
    assert epic.settings["submitter"] == {
        "name": "SlurmSubmitter", "module": "pandaharvester.harvestersubmitter.slurm_submitter",
        "templateFile": "/global/common/software/m3763/panda-harvester/etc/panda/epic_cpu.sdf",
        "nCore": 128, "partition": "regular"}
    assert "templateQueueName" in epic.settings  # the queue's own, as the harvester keeps it


def test_it_records_the_perlmutter_like_configuration() -> None:
    record = perlmutter().to_record({"NERSC_Perlmutter_epic": 120,
                                     "NERSC_Perlmutter_push_test": 1000})
    assert json.loads(json.dumps(record, allow_nan=False)) == record
    epic, gpu, push = (record["queues"][name] for name in (
        "NERSC_Perlmutter_epic", "NERSC_Perlmutter_epic_gpu", "NERSC_Perlmutter_push_test"))
    assert epic == {
        "template": "nersc.pull_TEMPLATE", "status": "online", "active": True,
        "mapType": "NoJob", "pull_mode": True, "runMode": "self",
        "limits": {"maxWorkers": 200, "nQueueLimitWorker": 100, "nQueueLimitWorkerMax": 100,
                   "nQueueLimitWorkerRatio": 50, "nQueueLimitWorkerMin": 5,
                   "maxNewWorkersPerCycle": 20, "nNewWorkers": 0},
        "limit_in_force": {
            "value": 60, "at_most": 100, "running_workers": 120,
            "derivation": "nQueueLimitWorkerMax 100 (no nQueueLimitWorker) -> 100; "
                          "nQueueLimitWorkerRatio 50% of 120 running = 60 -> min(100, 60) = 60"},
        "notes": ["nQueueLimitJob 20 not used: a NoJob (pull) queue has no job limits"]}
    assert (gpu["status"], gpu["active"], gpu["limit_in_force"]) == ("brokeroff", True, {
        "value": 40, "at_most": 40, "running_workers": None,
        "derivation": "nQueueLimitWorker 60, clipped by maxWorkers 40 -> 40"})
    assert (push["status"], push["active"], push["pull_mode"]) == ("offline", False, False)
    assert push["limits"]["nQueueLimitWorkerRatio"] is None
    assert push["limits"]["nQueueLimitJob"] == push["limits"]["nQueueLimitJobMax"] == 8
    assert push["limit_in_force"]["value"] == 30  # the ratio would have given 500
    assert record["problems"] == [{"queue": "NERSC_Perlmutter_epic_old", "fatal": False,
                                   "message": 'templateQueueName "nersc.pull_v0_TEMPLATE" '
                                              "names no template: harvester skips this queue"}]


def test_it_records_what_the_docs_show() -> None:
    text = DOCS.read_text(encoding="utf-8")
    shown = json.loads(text.split("```json\n", 1)[1].split("```", 1)[0])
    record = perlmutter().to_record({"NERSC_Perlmutter_epic": 120})
    assert shown["queues"] == {"NERSC_Perlmutter_epic": record["queues"]["NERSC_Perlmutter_epic"]}
    assert (shown["templates"], shown["problems"]) == (record["templates"], record["problems"])
