"""`clusterwatch watch exercise`: the alert and recovery rules on simulated polls.

No pool, no Prometheus, no Slack: one simulated poll a minute through the same `decide`
function the real poll uses, with in-memory records, printed as a table.
"""

from __future__ import annotations

import calendar
from dataclasses import dataclass
from typing import IO, Callable, Optional

from clusterwatch.notify.event import format_utc
from clusterwatch.watch.decisions import (
    DEFAULT_THRESHOLDS,
    Decision,
    Observation,
    TargetRecord,
    Thresholds,
    classify_mtime,
    decide,
)

START = float(calendar.timegm((2026, 10, 2, 14, 0, 0)))  # minute 0 of every scenario


@dataclass(frozen=True)
class Poll:
    minute: float
    observation: Optional[Observation]  # a node's; None: a GPU file, seen at `mtime_minute`
    mtime_minute: Optional[float] = None


@dataclass(frozen=True)
class Scenario:
    title: str
    target: str
    polls: tuple[Poll, ...]
    expect: str  # what the table should show, in words


def _gpu(minutes: range, last_write: Callable[[int], float]) -> tuple[Poll, ...]:
    return tuple(Poll(m, None, last_write(m)) for m in minutes)


def _writer(stops_at: Optional[float] = None, resumes_at: Optional[float] = None,
            every: float = 0.5) -> Callable[[int], float]:
    """Last write time (minutes) seen at poll minute m, for a writer running every 30 s."""
    def last_write(m: int) -> float:
        if stops_at is not None and m >= stops_at and (resumes_at is None or m < resumes_at):
            return stops_at
        return m - every
    return last_write


def _writer_with_blip(m: int) -> float:
    """Stops at minute 1, resumes at 18, and misses its writes just before minute 22."""
    if 1 <= m < 18:
        return 1.0
    if m == 22:
        return 19.5  # 150 s old: aging
    return m - 0.5


SCENARIOS = (
    Scenario(
        "GPU writer stops at minute 2",
        "gpu:192.0.2.10:9100",
        _gpu(range(0, 20), _writer(stops_at=2)),
        "stale alert at the first poll whose file age is >= 15 min (minute 17)",
    ),
    Scenario(
        "First poll of a file last written 16 minutes ago",
        "gpu:192.0.2.11:9100",
        (Poll(0, None, -16.0), Poll(1, None, -16.0)),
        "alert on the very first poll, once",
    ),
    Scenario(
        "GPU writer stops, then resumes at minute 20",
        "gpu:192.0.2.12:9100",
        _gpu(range(0, 32), _writer(stops_at=1, resumes_at=20)),
        "stale alert at minute 16; recovery 10 minutes after the first fresh poll (minute 30)",
    ),
    Scenario(
        "Recovery window reset by an aging blip",
        "gpu:192.0.2.13:9100",
        _gpu(range(0, 35), _writer_with_blip),
        "alert at 16; fresh from 18; aging at 22 resets; recovery at 33 (10 min after 23)",
    ),
    Scenario(
        "Execute node vanishes at minute 3 and returns at minute 25",
        "node:worker.example.org",
        tuple(Poll(m, Observation.MISSING if 3 <= m < 25 else Observation.PRESENT)
              for m in range(0, 37)),
        "alert at minute 18 (15 min of absence); recovery at minute 35 (10 min present)",
    ),
    Scenario(
        "A 4-minute gap in polling restarts the absence window",
        "node:worker2.example.org",
        tuple(Poll(m, Observation.MISSING) for m in [*range(0, 10), *range(14, 31)]),
        "no alert at minute 15: the window restarts at 14, alert at minute 29",
    ),
)


def run_scenario(
    scenario: Scenario, thresholds: Thresholds = DEFAULT_THRESHOLDS
) -> list[tuple[Poll, Observation, Optional[float], Optional[Decision]]]:
    """(poll, classified status, file age in s, decision) for each simulated poll."""
    record = TargetRecord()
    rows: list[tuple[Poll, Observation, Optional[float], Optional[Decision]]] = []
    for poll in scenario.polls:
        now = START + poll.minute * 60
        mtime: Optional[float] = None
        if poll.mtime_minute is not None:
            mtime = START + poll.mtime_minute * 60
            status = classify_mtime(now, mtime, thresholds)
        else:
            assert poll.observation is not None, "a node's poll names its observation"
            status = poll.observation
        decision = decide(record, scenario.target, now, status, mtime, thresholds)
        rows.append((poll, status, None if mtime is None else now - mtime, decision))
    return rows


def print_exercise(out: IO[str], thresholds: Thresholds = DEFAULT_THRESHOLDS) -> int:
    """Print every scenario's table; return the number of decisions."""
    total = 0
    for scenario in SCENARIOS:
        out.write(f"\n== {scenario.title}: {scenario.target}\n")
        out.write(f"   expected: {scenario.expect}\n")
        out.write(f"   {'minute':>6}  {'time (UTC)':<20} {'file age':>8}  {'status':<8} decision\n")
        for poll, status, age, decision in run_scenario(scenario, thresholds):
            age_text = "-" if age is None else f"{age:.0f} s"
            verdict = ""
            if decision is not None:
                verdict = f"{decision.action.value.upper()} ({decision.status.value})"
                total += 1
            out.write(f"   {poll.minute:>6g}  {format_utc(START + poll.minute * 60):<20} "
                      f"{age_text:>8}  {status.value:<8} {verdict}\n")
    return total
