"""The record schema extended compatibly: every record the tests keep (the real reporter's
example and each variant of it) still validates, the remote sections are optional, and they
are checked when present."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from clusterwatch.monitor.ingest.validation import checkers, schema_document
from clusterwatch.monitor.panda.remote.builder import build_record
from tests.monitor import records
from tests.monitor.panda.remote_rows import HARVESTER, KEY, NOW, perlmutter_config, perlmutter_rows

REMOTE_SECTIONS = ("instance", "queue_status", "dialogs")
# Every record tests/monitor/records.py makes: the example as the reporter wrote it, and
# each variant a scenario uses.
FIXTURES: dict[str, Callable[[], dict[str, Any]]] = {
    "example": records.example,
    "with_database": lambda: records.with_database(records.example()),
    "all_fetches_failing": lambda: records.all_fetches_failing(records.example()),
    "no_jobs": lambda: records.no_jobs(records.example()),
    "with_queues": lambda: records.with_queues(records.example(), 3),
    "recent": lambda: records.recent(records.example(), records.parse("2026-12-01T10:00:00Z")),
}


def problems(record: Any) -> list[str]:
    reference, fast = checkers()
    found = [f"{list(error.absolute_path)}: {error.message}"
             for error in reference.iter_errors(record)]
    assert fast is not None and fast(record) == (not found)  # ingest's check agrees
    return found


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_every_kept_record_still_validates(name: str) -> None:
    record = FIXTURES[name]()
    assert problems(record) == []
    assert not set(REMOTE_SECTIONS) & set(record)


def test_the_remote_sections_are_optional() -> None:
    schema = schema_document()
    assert not set(REMOTE_SECTIONS) & set(schema["required"])
    assert set(REMOTE_SECTIONS) <= set(schema["properties"])


@pytest.fixture(scope="module")
def remote() -> dict[str, Any]:
    return build_record(HARVESTER, KEY, perlmutter_rows(), perlmutter_config(), NOW)


@pytest.mark.parametrize(("path", "value"), [
    (("instance", "heartbeat_age_s"), -5),
    (("instance", "last_heartbeat"), "2026-10-02 18:26:00"),
    (("instance", "harvester_id"), None),
    (("queue_status", "queues", "NERSC_Perlmutter_epic", "status"), None),
    (("queue_status", "dropped", 0, "message"), 7),
    (("dialogs", "kinds", 0, "count"), -1),
    (("dialogs", "kinds", 0, "latest", "at"), "yesterday"),
    (("dialogs", "modules", "submitter", "latest", "message"), None),
    (("dialogs", "other_levels", "INFO"), "3"),
])
def test_it_refuses_a_remote_section_that_is_not_what_the_schema_says(
        remote: dict[str, Any], path: tuple[Any, ...], value: Any) -> None:
    assert problems(remote) == []
    broken = copy.deepcopy(remote)
    part = broken
    for step in path[:-1]:
        part = part[step]
    part[path[-1]] = value
    assert problems(broken) != []


@pytest.mark.parametrize("section", REMOTE_SECTIONS)
def test_it_takes_each_remote_section_as_an_error_alone(remote: dict[str, Any],
                                                         section: str) -> None:
    changed = dict(remote, **{section: {"error": "harvester_dialogs: timeout"}})
    assert problems(changed) == []


@pytest.mark.parametrize("section", ["kinds", "modules", "queues"])
def test_it_refuses_a_required_field_left_out(remote: dict[str, Any], section: str) -> None:
    broken = copy.deepcopy(remote)
    if section == "kinds":
        del broken["dialogs"]["kinds"][0]["first"]
    elif section == "modules":
        del broken["dialogs"]["modules"]["submitter"]["count"]
    else:
        del broken["queue_status"]["queues"]["NERSC_Perlmutter_epic"]["status"]
    assert problems(broken) != []
