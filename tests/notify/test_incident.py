"""Incident ids: stored in state files and the alarm table, sent to every channel.

An id that changed would split one incident in two (an alert whose recovery names another
id) and make a repeated delivery look new, so the ids below were taken from the engines
before their two copies of the function became this one, and must never change.
"""

from __future__ import annotations

import pytest

from clusterwatch.notify.incident import ALARM_ID_BYTES, WATCH_ID_BYTES, incident_id
from tests.notify.support import T0


# The pool watch's ids have 8 hex digits, the alarms' 12.
@pytest.mark.parametrize(("digest_bytes", "target", "opened", "known"), [
    (WATCH_ID_BYTES, "gpu:192.0.2.10:9100", T0, "464531a4"),
    (WATCH_ID_BYTES, "node:worker.example.org", T0 + 0.25, "cbb34ca7"),
    (WATCH_ID_BYTES, "node:wörker", 1e9, "5dd01993"),
    (ALARM_ID_BYTES, "host_disk_space:pandaharvester01:/data", T0, "78c49ad72e69"),
    (ALARM_ID_BYTES, "panda_unreachable:pandaharvester01", T0 + 0.5, "20573a43c3ef"),
    (ALARM_ID_BYTES, "reporter_stale:osgsub01", 1e9, "aafac029bb4a"),
])
def test_it_names_each_engines_incidents_as_it_always_did(digest_bytes: int, target: str,
                                                          opened: float, known: str) -> None:
    assert incident_id(target, opened, digest_bytes=digest_bytes) == known


def test_it_tells_incidents_of_one_target_apart_by_their_opening_time() -> None:
    first = incident_id("node:worker.example.org", T0, digest_bytes=WATCH_ID_BYTES)
    again = incident_id("node:worker.example.org", T0 + 60, digest_bytes=WATCH_ID_BYTES)
    assert first != again
