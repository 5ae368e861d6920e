"""The queue page's queue status and pilot dispatch (telemetry 1.5-1.7): the reading a host
reporter sent, with the template's short hash and the evidence's age; what a reporter before
1.6 and the remote harvester lack is said, never guessed."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from django.test import Client

from clusterwatch.monitor.pages.queue_page import harvester_panel
from clusterwatch.monitor.pages.queue_query import serving
from clusterwatch.monitor.pages.stored import StoredRecord
from clusterwatch.monitor.record.slices import queue_slice
from tests.monitor.panda.remote_rows import EPIC, KEY, NOW, remote_record
from tests.monitor.records import QUEUE, example, fresh, store
from tests.support.page_text import text_of

OTHER = "UM_GREX_PanDA_1"
SHA = "0123456789abcdef" * 4
POLICY_IMAGE = "/cvmfs/singularity.opensciencegrid.org/eic/eic_xl:25.07-stable"
EL9 = "/cvmfs/singularity.opensciencegrid.org/opensciencegrid/osgvo-el9:latest"
UNRESTRICTED = {
    "kind": "unrestricted", "images": [POLICY_IMAGE], "template": "/opt/t/native_policy.sdf",
    "sha256": SHA, "bootstrap_images": [EL9],
    "reason": "native per-job dispatch and container launch on; image policy epic-osg: 1 of "
              "its 3 images supplied by the allocator (60 s ago)",
    "policy": {"file": "/opt/t/image-policy.json", "sha256": SHA, "policy": "epic-osg",
               "state_file": "/opt/t/state.json", "state_updated_at": "2026-10-02T18:26:05Z",
               "state_age_s": 60}}
UNKNOWN = {"kind": "unknown", "images": [], "template": "/opt/t/conflicting.sdf",
           "sha256": "f" * 64, "bootstrap_images": [],
           "reason": "conflicting image bindings: +SingularityImage <a>; container_image b"}


def with_dispatch(record: dict[str, Any]) -> dict[str, Any]:
    record["queue_status"] = {
        "source": "/opt/harvester/etc/panda/panda_queueconfig.json", "dropped": [],
        "unconfigured": [],
        "queues": {QUEUE: {"status": "online", "active": True,
                           "pilot_dispatch": copy.deepcopy(UNRESTRICTED)},
                   OTHER: {"status": "offline", "active": False,
                           "pilot_dispatch": copy.deepcopy(UNKNOWN)}}}
    return record


@pytest.mark.django_db
def test_it_shows_the_reading_with_the_short_hash_and_the_evidences_age(
        operator: Client) -> None:
    store(fresh(with_dispatch(example()), minutes_ago=3))
    page = text_of(operator.get(f"/queues/{QUEUE}/"))
    assert "Queue status and pilot dispatch" in page and "Queue status online" in page
    assert ("Pilot dispatch unrestricted (unrestricted: native per-job dispatch (within the "
            "image policy, if any)) native per-job dispatch and container launch on; image "
            "policy epic-osg: 1 of its 3 images supplied by the allocator (60 s ago)") in page
    assert f"Images {POLICY_IMAGE}" in page
    assert f"Bootstrap images (start the pilot only) {EL9}" in page
    assert f"Template /opt/t/native_policy.sdf sha256 {SHA[:12]}" in page
    assert SHA not in page.replace(f'title="{SHA}"', "")  # the full hash only as the title
    assert "Image policy epic-osg (/opt/t/image-policy.json); allocator state updated" in page
    assert "(60 s before collection)" in page
    assert "Evidence read" in page and "3 min ago" in page.split("Evidence read")[1][:60]


@pytest.mark.django_db
def test_it_shows_unknown_as_no_compatibility_and_escapes_the_reason(operator: Client) -> None:
    store(fresh(with_dispatch(example())))
    page = text_of(operator.get(f"/queues/{OTHER}/"))
    assert "Queue status offline (not active)" in page
    assert "Pilot dispatch unknown (unknown: no image compatibility assumed)" in page
    assert "+SingularityImage &lt;a&gt;; container_image b" in page
    assert "Images —" in page and "Bootstrap images" not in page and "Image policy" not in page


@pytest.mark.django_db
def test_it_says_a_reporter_before_1_6_did_not_report_it(operator: Client) -> None:
    store(fresh(example()))
    page = text_of(operator.get(f"/queues/{QUEUE}/"))
    assert "Queue status no queue_status in this record" in page
    assert "Pilot dispatch not reported (a reporter before telemetry 1.6)" in page
    record = with_dispatch(example())
    del record["queue_status"]["queues"][QUEUE]["pilot_dispatch"]
    store(fresh(record, minutes_ago=0.5))  # a later record: the page reads the newest
    page = text_of(operator.get(f"/queues/{QUEUE}/"))
    assert "Queue status online" in page and "a reporter before telemetry 1.6" in page


@pytest.mark.django_db
def test_it_shows_the_remote_harvesters_status_and_why_it_has_no_reading(
        operator: Client) -> None:
    from clusterwatch.monitor.panda.remote.run import store as store_remote

    assert store_remote(KEY, remote_record(), 1000) is True
    section = text_of(operator.get(f"/queues/{EPIC}/")).split("Queue status and pilot dispatch")[1]
    assert section.split("Pilot dispatch")[0].strip().endswith("Queue status online")
    assert ("Pilot dispatch not reported: the remote harvester's submit templates are not "
            "readable from the monitor") in section.replace("&#x27;", "'")


def test_it_keeps_only_the_queues_own_reading_in_its_slice() -> None:
    record = with_dispatch(example())
    sliced = queue_slice(record, QUEUE)["record"]["queue_status"]
    assert sliced["queues"][QUEUE]["pilot_dispatch"] == UNRESTRICTED
    assert sliced["queues"][OTHER] == {"status": "offline", "active": False}
    assert record["queue_status"]["queues"][OTHER]["pilot_dispatch"] == UNKNOWN  # untouched


@pytest.mark.django_db
def test_it_builds_the_same_panel_from_the_stored_slice_as_from_the_whole_record() -> None:
    record = fresh(with_dispatch(example()))
    store(record)
    for queue in (QUEUE, OTHER):
        (sliced,) = serving(queue)
        whole = StoredRecord(sliced.key, sliced.report_id, record, sliced.collected_at,
                             sliced.received_at)
        assert harvester_panel(sliced, queue, NOW, 300).dispatch == harvester_panel(
            whole, queue, NOW, 300).dispatch
