"""`clusterwatch watch replay` on the recordings in tests/watch/recordings/: the decisions each
printed when it was recorded (NAME.decisions.jsonl), through the command line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from clusterwatch.cli import main

RECORDINGS = Path(__file__).resolve().parent / "recordings"
NAMES = sorted(path.name.removesuffix(".decisions.jsonl")
               for path in RECORDINGS.glob("*.decisions.jsonl"))


def replayed(name: str, capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    status = main(["watch", "replay", str(RECORDINGS / f"{name}.jsonl")])
    out, err = capsys.readouterr()
    assert (status, err) == (0, "")
    return [json.loads(line) for line in out.splitlines()]


def recorded(name: str) -> list[dict[str, Any]]:
    text = (RECORDINGS / f"{name}.decisions.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


def test_every_recording_has_its_decisions() -> None:
    assert {"pool_day", "node_power_loss", "node_power_loss_last_heard"} <= set(NAMES)
    assert {path.name.removesuffix(".jsonl") for path in RECORDINGS.glob("*.jsonl")
            if not path.name.endswith(".decisions.jsonl")} == set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_it_replays_each_recording_as_recorded(name: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert replayed(name, capsys) == recorded(name)


def test_the_plain_power_loss_alerts_30_minutes_after_the_last_update(
        capsys: pytest.CaptureFixture[str]) -> None:
    """The ad outlives the node by CLASSAD_LIFETIME, then 15 minutes of observed absence."""
    last_update = 1_790_949_600.0  # 14:00:00Z; the power is lost at 14:03:00
    alert, recover = replayed("node_power_loss", capsys)
    assert (alert["target"], alert["action"], alert["status"]) == (
        "node:worker03.example.org", "alert", "missing")
    assert alert["t"] - last_update == 30 * 60
    assert recover["action"] == "recover" and recover["t"] == last_update + 60 * 60


def test_with_last_heard_the_power_loss_alerts_15_minutes_after_the_last_update(
        capsys: pytest.CaptureFixture[str]) -> None:
    """Absent since it was last heard: the same polls with LastHeardFrom alert 15 minutes
    sooner, at the poll where the collector drops the ad, and recover at the same time."""
    last_update = 1_790_949_600.0
    alert, recover = replayed("node_power_loss_last_heard", capsys)
    assert (alert["target"], alert["action"]) == ("node:worker03.example.org", "alert")
    assert alert["t"] - last_update == 15 * 60
    assert recover == {**recorded("node_power_loss")[1]}


def test_the_two_power_loss_recordings_are_the_same_polls() -> None:
    def polls(name: str) -> list[tuple[Any, ...]]:
        text = (RECORDINGS / f"{name}.jsonl").read_text(encoding="utf-8")
        return [(item["t"], item["target"], item["observation"])
                for item in map(json.loads, text.splitlines())]

    assert polls("node_power_loss") == polls("node_power_loss_last_heard")
