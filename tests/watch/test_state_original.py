"""Reading the original pool-watch script's state: windows, incidents, lines and back-off."""

from __future__ import annotations

from typing import Any

import pytest

from clusterwatch.watch.state_original import decode_original, is_original

from .original_state import line, original_state, target, write_original
from .support import T0, Pool

W1, W2 = "worker1.example.org", "worker2.example.org"
G1, G2 = "192.0.2.10:9100", "192.0.2.11:9100"


def test_it_keeps_the_original_absence_window(pool: Pool) -> None:
    write_original(pool.state_dir, original_state({f"node:{W2}": target(T0 + 840, bad=T0)}, []))
    pool.set_machines([W1])
    pool.set_gpu_mtimes({G1: T0 + 880, G2: T0 + 880}, T0 + 900)
    result = pool.poll(T0 + 900)  # 15 minutes after the original saw W2 go
    assert [(d.target, d.action.value) for d in result.decisions] == [(f"node:{W2}", "alert")]
    assert result.state_error is None


def test_it_keeps_the_original_recovery_window(pool: Pool) -> None:
    write_original(
        pool.state_dir,
        original_state(
            {f"gpu:{G1}": target(T0 + 540, good=T0, first_stamp=T0 - 10, alerted=True)}, []
        ),
    )
    pool.all_healthy(T0 + 600)
    pool.set_gpu_mtimes({G1: T0 + 590, G2: T0 + 590}, T0 + 600)
    result = pool.poll(T0 + 600)  # 10 minutes of fresh writes, begun before the switch
    assert [(d.target, d.action.value) for d in result.decisions] == [(f"gpu:{G1}", "recover")]
    [sent] = [request.json()["text"] for request in pool.slack.requests]
    assert f"RECOVER gpu:{G1} (fresh)" in sent and "ALERT" not in sent


def test_it_waits_for_retry_after_and_then_sends_the_lines_in_order(pool: Pool) -> None:
    lines = [
        line(T0 - 300 + 60 * i, "ALERT", f"node:old{i}.example.org", "missing") for i in range(3)
    ]
    write_original(pool.state_dir, original_state({}, list(lines), retry_after=T0 + 120))
    for now in (T0, T0 + 60, T0 + 119):
        pool.all_healthy(now)
        pool.poll(now)
    assert pool.slack.requests == []
    for now in (T0 + 120, T0 + 180):
        pool.all_healthy(now)
        pool.poll(now)
    [request] = pool.slack.requests
    sent = request.json()["text"].split("\n")
    assert [text.rpartition(" incident ")[0] for text in sent] == lines


def test_it_pairs_a_recovery_with_its_alert_and_keeps_an_id_a_line_gives() -> None:
    data = original_state(
        {f"node:{W2}": target(T0 + 60, alerted=True)},
        [
            line(T0, "ALERT", f"node:{W1}", "missing"),
            line(T0 + 30, "RECOVER", f"node:{W1}", "present"),
            line(T0 + 40, "RECOVER", f"node:{W2}", "present") + " incident 0badcafe",
            line(T0 + 50, "ALERT", f"node:{W2}", "missing") + " incident 5eed0001",
        ],
    )
    decoded = decode_original(data, ["slack"], now=T0 + 90)
    assert decoded.problems == []
    events = decoded.outbox.pending("slack")
    assert [(e.t, e.action.value, e.status) for e in events] == [
        (T0, "alert", "missing"),
        (T0 + 30, "recover", "present"),
        (T0 + 40, "recover", "present"),
        (T0 + 50, "alert", "missing"),
    ]
    assert events[0].incident == events[1].incident
    assert [e.incident for e in events[2:]] == ["0badcafe", "5eed0001"]
    incident = decoded.records[f"node:{W2}"].incident
    assert incident is not None  # the open incident is the one its queued alert opened
    assert (incident.id, incident.opened, incident.status) == ("5eed0001", T0 + 50, "missing")


@pytest.mark.parametrize(("alerted", "opened"), [(True, T0 + 60), (T0 + 5, T0 + 5)])
def test_it_dates_an_incident_whose_alert_went_out_before_the_switch(
    alerted: Any, opened: float
) -> None:
    data = original_state(
        {f"gpu:{G1}": target(T0 + 60, alerted=alerted), f"node:{W1}": target(None, alerted=True)},
        [],
    )
    decoded = decode_original(data, ["slack"], now=T0 + 90)
    gpu, node = decoded.records[f"gpu:{G1}"].incident, decoded.records[f"node:{W1}"].incident
    assert gpu is not None and (gpu.opened, gpu.status) == (opened, "stale")
    assert node is not None and (node.opened, node.status) == (T0 + 90, "missing")
    assert decoded.outbox.pending("slack") == []  # their alerts were sent: not again


@pytest.mark.parametrize(
    ("data", "salvaged", "original"),
    [
        ({"targets": {}, "pending": [], "retry_after": None}, False, True),
        ({"targets": {}}, False, True),
        ({"pending": ["x"]}, True, True),
        ({"targets": {"node:a": {"last": T0}}}, True, True),
        # A torn file of this format that lost its version and more is still this format.
        ({"targets": {"node:a": [T0, None, None, None]}}, True, False),
        ({"targets": {}, "outbox": {}}, True, False),
        ({"version": 1, "targets": {}}, False, False),
        ({}, False, False),
    ],
    ids=[
        "whole",
        "targets only",
        "salvaged lines",
        "salvaged object rows",
        "torn rows",
        "torn with outbox",
        "this format",
        "empty object",
    ],
)
def test_it_tells_the_original_format_from_this_one(
    data: dict[str, Any], salvaged: bool, original: bool
) -> None:
    assert is_original(data, salvaged) is original
