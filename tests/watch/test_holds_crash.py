"""A held alert across a poll killed while it saves: the release is in the state file with
the queued alert or not at all, so the alert goes out exactly once whichever poll saves it.

Polls in process at a chosen clock (tests/watch/support.py); the kill is a BaseException
raised inside the state's atomic write, before or after its rename, as `kill -9` would stop
the process there (nothing after it runs, not even the lock's release by a clean exit).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from clusterwatch import atomic_write
from clusterwatch.notify.silences import new_silence, parse_matcher
from clusterwatch.watch import state
from clusterwatch.watch.holds import MATCHER_KINDS

from .support import T0, Pool

W1, W2 = "worker1.example.org", "worker2.example.org"


class Killed(BaseException):
    """The process stopped here."""


def at(minute: float) -> float:
    return T0 + minute * 60


def silence_w2_until(pool: Pool, end: float) -> None:
    made = new_silence((parse_matcher("node:worker2*", MATCHER_KINDS),), T0, end, "reboots",
                       "alice", T0)
    with state.locked(pool.state_dir):
        kept = state.load(pool.state_dir)
        kept.silences.append(made)
        state.save(pool.state_dir, kept)


def w2_missing_at(pool: Pool, minute: int) -> Any:
    pool.all_healthy(at(minute))
    pool.set_machines([W1])
    return pool.poll(at(minute))


def alert_lines(pool: Pool) -> list[str]:
    return [line for request in pool.slack.requests
            for line in str(request.json()["text"]).splitlines() if " ALERT " in line]


@pytest.mark.parametrize("where", ["before the rename", "after the rename"])
def test_a_poll_killed_while_saving_a_release_sends_the_alert_exactly_once(
    pool: Pool, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    silence_w2_until(pool, at(20))
    for minute in range(0, 20):
        w2_missing_at(pool, minute)
    held = state.load(pool.state_dir).records[f"node:{W2}"].incident
    assert held is not None and held.held and pool.slack.requests == []

    real = atomic_write.write_atomically

    def killed(path: Path, data: bytes, **kwargs: Any) -> None:
        if where == "after the rename":
            real(path, data, **kwargs)
        raise Killed

    monkeypatch.setattr(state, "write_atomically", killed)
    with pytest.raises(Killed):
        w2_missing_at(pool, 20)  # the silence has ended: this poll releases the alert
    monkeypatch.setattr(state, "write_atomically", real)
    assert pool.slack.requests == []  # killed before any channel was tried

    for minute in range(21, 25):
        w2_missing_at(pool, minute)
    assert alert_lines(pool) == [
        f"2026-10-02 14:15:00Z ALERT node:{W2} (missing) incident {held.id}"]
    after = state.load(pool.state_dir).records[f"node:{W2}"].incident
    assert after is not None and after.id == held.id and not after.held
