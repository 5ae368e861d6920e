"""The original pool-watch script's state file, met by the installed program (issue 19, item 2).

A user of the original switches without moving files: the first poll finds the original's
`state.json`, keeps its open incidents and pending windows, sends its undelivered lines in
order and once, waits for its `retry_after`, and writes the file in this program's format.
An original file that is partly wrong is salvaged as a damaged file of this format is.
"""

from __future__ import annotations

import json
import resource
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from .original_state import line, original_state, target, write_original
from .program import child_env, console_script, pool_args, run_watch
from .support import Pool

W1, W2 = "worker1.example.org", "worker2.example.org"
G1, G2 = "192.0.2.10:9100", "192.0.2.11:9100"


@dataclass
class Switch:
    """A pool whose original script was stopped a minute ago, and its state file."""

    now: float
    data: dict[str, Any]
    lines: list[str]  # the original's undelivered lines, oldest first


def switched(pool: Pool, retired: int, retry_after: Callable[[float], Any]) -> Switch:
    """W1 present (an absence window pending), W2 missing (alerted, its alert undelivered),
    G1's file stale (alerted, its alert delivered before the switch), G2's file fresh; the
    undelivered lines: W2's alert, then alerts and recoveries of `retired` retired nodes."""
    now = float(int(time.time()))
    pool.set_machines([W1])
    pool.set_gpu_mtimes({G1: now - 2000, G2: now - 20}, now)
    lines = [line(now - 600, "ALERT", f"node:{W2}", "missing")]
    for i in range(retired):
        action, status = ("ALERT", "missing") if i % 2 == 0 else ("RECOVER", "present")
        lines.append(line(now - 590 + 10 * i, action, f"node:old{i // 2}.example.org", status))
    data = original_state(
        {
            f"node:{W1}": target(now - 60, bad=now - 300),
            f"node:{W2}": target(now - 60, bad=now - 1500, alerted=True),
            f"gpu:{G1}": target(now - 60, alerted=True),
            f"gpu:{G2}": target(now - 60),
        },
        list(lines),
        retry_after(now),
    )
    return Switch(now, data, lines)


def status(pool: Pool) -> dict[str, Any]:
    done = run_watch(pool, "status", "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def delivered(pool: Pool) -> list[str]:
    """Every line Slack acknowledged, in the order it got them."""
    return [text for request in pool.slack.requests for text in request.json()["text"].split("\n")]


def incident_of(sent: str) -> str:
    return sent.rpartition(" incident ")[2]


def assert_in_this_format(pool: Pool) -> None:
    data = json.loads((pool.state_dir / "state.json").read_text())
    assert data["version"] == 1 and "pending" not in data and "retry_after" not in data
    assert all(isinstance(row, list) for row in data["targets"].values())


def test_it_takes_over_the_original_scripts_state_file(pool: Pool) -> None:
    switch = switched(pool, retired=11, retry_after=lambda now: now - 30)
    write_original(pool.state_dir, switch.data)

    first = run_watch(pool)
    assert first.returncode == 0, first.stderr
    assert first.stdout == ""  # no transition: W2's and G1's incidents were open already
    assert "original pool-watch script" in first.stderr and "Traceback" not in first.stderr
    assert list(pool.state_dir.glob("state.json.*")) == []  # nothing moved aside
    assert_in_this_format(pool)
    sent = delivered(pool)
    assert len(pool.slack.requests) == 1 and len(sent) == 10  # Slack's batch of 10

    second = run_watch(pool)
    assert second.returncode == 0 and second.stdout == "", second.stderr
    third = run_watch(pool)
    assert third.returncode == 0 and third.stdout == "", third.stderr
    sent = delivered(pool)
    assert len(sent) == len(switch.lines)  # each once, in order, and nothing else
    for original, text in zip(switch.lines, sent):
        assert text.startswith(original + " incident "), (original, text)
    # An alert and its recovery share an incident id.
    assert incident_of(sent[1]) == incident_of(sent[2]) != incident_of(sent[3])

    summary = status(pool)
    opened = {item["target"]: item for item in summary["open_incidents"]}
    assert set(opened) == {f"node:{W2}", f"gpu:{G1}"}
    assert opened[f"node:{W2}"]["incident"] == incident_of(sent[0])
    assert opened[f"node:{W2}"]["since"] == switch.now - 600
    assert opened[f"gpu:{G1}"]["status"] == "stale"
    assert summary["channels"]["slack"]["pending"] == []
    assert list(pool.state_dir.glob("state.json.*")) == []


def test_it_posts_nothing_before_the_original_retry_after(pool: Pool) -> None:
    switch = switched(pool, retired=2, retry_after=lambda now: now + 1800)
    raw = write_original(pool.state_dir, switch.data)

    before = status(pool)  # read only: shows what the poll will send, changes nothing
    slack = before["channels"]["slack"]
    assert slack["rate_limited_until"] == switch.now + 1800
    assert [event["action"] for event in slack["pending"]] == ["alert", "alert", "recover"]
    assert (pool.state_dir / "state.json").read_bytes() == raw

    for _ in range(2):
        done = run_watch(pool)
        assert done.returncode == 0 and done.stdout == "", done.stderr
    assert pool.slack.requests == []
    assert_in_this_format(pool)
    after = status(pool)["channels"]["slack"]
    assert after["rate_limited_until"] == switch.now + 1800  # kept across the rewrite
    assert len(after["pending"]) == 3
    assert list(pool.state_dir.glob("state.json.*")) == []


def set_field(key: str, field: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def damage(data: dict[str, Any]) -> None:
        data["targets"][key][field] = value

    return damage


def insert_line(value: Any) -> Callable[[dict[str, Any]], None]:
    def damage(data: dict[str, Any]) -> None:
        data["pending"].insert(1, value)

    return damage


def set_retry_after(data: dict[str, Any]) -> None:
    data["retry_after"] = "soon"


@dataclass(frozen=True)
class Damage:
    change: Callable[[dict[str, Any]], None] | None  # on the parsed file
    named: str  # what the log must name
    realerted: bool = False  # G1's incident, or maybe a line of it, is lost: said again
    cut: bool = False  # the file is cut short inside the fourth line instead


DAMAGE = {
    "a window of the wrong type": Damage(set_field(f"node:{W2}", "bad", "yesterday"), f"node:{W2}"),
    "alerted that is not a flag": Damage(
        set_field(f"gpu:{G1}", "alerted", "yes"), f"gpu:{G1}", realerted=True
    ),
    "a record that is not an object": Damage(
        lambda data: data["targets"].__setitem__(f"node:{W1}", [1, 2]), f"node:{W1}"
    ),
    # A lost line may have been G1's: its open incident is said again.
    "a line that is not a string": Damage(insert_line(42), "undelivered line 42", realerted=True),
    "a line that is not a line": Damage(
        insert_line("14:16 ALERT somewhere"), "undelivered line", realerted=True
    ),
    "retry_after of the wrong type": Damage(set_retry_after, "retry_after"),
    "cut short in the lines": Damage(None, "not valid JSON", realerted=True, cut=True),
}


@pytest.mark.parametrize("damage", list(DAMAGE.values()), ids=list(DAMAGE))
def test_it_salvages_an_original_file_that_is_partly_wrong(pool: Pool, damage: Damage) -> None:
    switch = switched(pool, retired=4, retry_after=lambda now: None)
    if damage.change is not None:
        damage.change(switch.data)
        raw = write_original(pool.state_dir, switch.data)
        survivors = switch.lines
    else:
        whole = json.dumps(switch.data, indent=1).encode()
        raw = write_original(pool.state_dir, whole[: whole.index(switch.lines[3].encode()) + 9])
        survivors = switch.lines[:3]

    done = run_watch(pool)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert damage.named in done.stderr and "moved it to" in done.stderr
    [aside] = pool.state_dir.glob("state.json.corrupt-*")
    assert aside.read_bytes() == raw  # the operator keeps what the original wrote
    assert_in_this_format(pool)
    again = run_watch(pool)
    assert again.returncode == 0, again.stderr
    assert run_watch(pool).returncode == 0

    sent = delivered(pool)
    for original, text in zip(survivors, sent):
        assert text.startswith(original + " incident "), (original, text)
    extra = sent[len(survivors) :]
    if damage.realerted:
        [realert] = extra  # said once more: at least once, never at most once
        assert f"ALERT gpu:{G1} (stale)" in realert
    else:
        assert extra == []
    opened = {item["target"]: item["incident"] for item in status(pool)["open_incidents"]}
    assert opened[f"node:{W2}"] == incident_of(sent[0])  # kept, not alerted again
    assert f"gpu:{G1}" in opened


def test_it_sends_a_line_the_original_queued_twice_once(pool: Pool) -> None:
    # An alert fires once per incident: the same line twice in `pending` (an admin's merge,
    # the original's own retry) is one event, not two alerts and an orphan recovery.
    now = float(int(time.time()))
    pool.set_machines([W1, W2])
    pool.set_gpu_mtimes({G1: now - 20, G2: now - 20}, now)
    alert = line(now - 600, "ALERT", f"node:{W2}", "missing")
    recovery = line(now - 300, "RECOVER", f"node:{W2}", "present")
    write_original(
        pool.state_dir,
        original_state({f"node:{W2}": target(now - 60)}, [alert, alert, recovery, recovery]),
    )

    for _ in range(2):
        done = run_watch(pool)
        assert done.returncode == 0 and done.stdout == "", done.stderr
    sent = delivered(pool)
    assert [text.partition(" incident ")[0] for text in sent] == [alert, recovery]
    assert incident_of(sent[0]) == incident_of(sent[1])


def _without_room_to_save() -> None:
    """A disk that has no room for the new state file: any write past 300 bytes fails with
    EFBIG (Python ignores SIGXFSZ), while every read succeeds."""
    resource.setrlimit(resource.RLIMIT_FSIZE, (300, 300))


def test_a_failed_save_after_a_partly_wrong_original_loses_nothing(pool: Pool) -> None:
    # The damaged file is moved aside, then what was kept is saved: a save that fails (a
    # full disk, or a SIGKILL in between) must leave the state where the next poll reads it.
    now = float(int(time.time()))
    pool.set_machines([W1])
    pool.set_gpu_mtimes({G1: now - 20, G2: now - 20}, now)
    alert = line(now - 600, "ALERT", f"node:{W2}", "missing")
    write_original(
        pool.state_dir,
        original_state(
            {
                f"node:{W2}": target(now - 60, bad=now - 1500, alerted=True),
                f"node:{W1}": target(now - 60, bad="yesterday"),
            },
            [alert],
        ),
    )

    full = subprocess.run(
        [str(console_script()), "watch", *pool_args(pool)],
        env=child_env(pool.root),
        preexec_fn=_without_room_to_save,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert full.returncode == 1 and "cannot save" in full.stderr, full.stderr
    assert "Traceback" not in full.stderr and pool.slack.requests == []

    done = run_watch(pool)
    assert done.returncode == 1 and done.stdout == "", done.stderr  # damaged, read again
    assert run_watch(pool).returncode == 0
    sent = delivered(pool)
    assert [text.partition(" incident ")[0] for text in sent] == [alert]  # once, not lost
    opened = {item["target"] for item in status(pool)["open_incidents"]}
    assert opened == {f"node:{W2}"}
