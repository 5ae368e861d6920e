"""Incident ids: stored in state files and the alarm table, sent to every channel.

An id that changed would split one incident in two (an alert whose recovery names another
id) and make a repeated delivery look new, so the ids below were taken from the engines
before their two copies of the function became this one, and must never change.
"""

from __future__ import annotations

import pytest

from clusterwatch.notify.incident import ALARM_ID_BYTES, WATCH_ID_BYTES, incident_id
from tests.notify.conftest import T0


@pytest.mark.parametrize(("target", "opened", "known"), [
    ("gpu:192.0.2.10:9100", T0, "464531a4"),
    ("node:worker.example.org", T0 + 0.25, "cbb34ca7"),
    ("node:wörker", 1e9, "5dd01993"),
])
def test_it_names_a_watch_incident_as_it_always_did(target: str, opened: float,
                                                    known: str) -> None:
    assert incident_id(target, opened, digest_bytes=WATCH_ID_BYTES) == known


@pytest.mark.parametrize(("target", "opened", "known"), [
    ("host_disk_space:pandaharvester01:/data", T0, "78c49ad72e69"),
    ("panda_unreachable:pandaharvester01", T0 + 0.5, "20573a43c3ef"),
    ("reporter_stale:osgsub01", 1e9, "aafac029bb4a"),
])
def test_it_names_an_alarm_incident_as_it_always_did(target: str, opened: float,
                                                     known: str) -> None:
    assert incident_id(target, opened, digest_bytes=ALARM_ID_BYTES) == known


def test_it_tells_incidents_of_one_target_apart_by_their_opening_time() -> None:
    first = incident_id("node:worker.example.org", T0, digest_bytes=WATCH_ID_BYTES)
    again = incident_id("node:worker.example.org", T0 + 60, digest_bytes=WATCH_ID_BYTES)
    assert first != again
