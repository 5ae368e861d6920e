"""The node rules with LastHeardFrom (decisions.classify_heard and a silent node in decide):
absent since it was last heard, clocks that disagree, values that make no sense."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Optional

from hypothesis import given, settings
from hypothesis import strategies as st

from clusterwatch.notify.incident import Action
from clusterwatch.watch.condor import collector_now, parse_observation
from clusterwatch.watch.decisions import (
    DEFAULT_THRESHOLDS,
    Observation,
    TargetRecord,
    Thresholds,
    classify_heard,
    decide,
)

ALERT, RECOVER = Action.ALERT, Action.RECOVER
PRESENT, SILENT, MISSING = Observation.PRESENT, Observation.SILENT, Observation.MISSING
T0 = 1_790_949_600.0  # 2026-10-02 14:00:00Z
NODE = "node:worker.example.org"
# A poll as the pool watch makes it: (minute, LastHeardFrom minute or None if the ad is gone,
# the collector's clock as the answer shows it, minutes; default the poll time).
Poll = tuple[float, Optional[float], Optional[float]]


def run(polls: Sequence[Poll], thresholds: Thresholds = DEFAULT_THRESHOLDS
        ) -> list[tuple[float, Action, Observation]]:
    record = TargetRecord()
    out = []
    for minute, heard, reference in polls:
        now = T0 + minute * 60
        observation, heard_at = MISSING, None
        if heard is not None:
            collector = now if reference is None else T0 + reference * 60
            observation, heard_at = classify_heard(now, T0 + heard * 60, collector, thresholds)
        decision = decide(record, NODE, now, observation, None, thresholds, heard_at)
        if decision is not None:
            out.append((minute, decision.action, decision.status))
    return out


def power_loss(lifetime_min: float = 15, back: Optional[float] = None,
               until: float = 60) -> list[Poll]:
    """Last heard at minute 0; its ads expire `lifetime_min` later; back at `back`."""
    polls: list[Poll] = []
    for minute in range(-5, int(until)):
        if minute < 0 or (back is not None and minute >= back):
            polls.append((minute, float(minute), None))
        else:
            polls.append((minute, 0.0 if minute < lifetime_min else None, None))
    return polls


def test_a_node_silent_for_more_than_10_minutes_is_silent() -> None:
    assert classify_heard(T0 + 600, T0, T0 + 600) == (PRESENT, None)
    assert classify_heard(T0 + 601, T0, T0 + 601) == (SILENT, T0)
    assert classify_heard(T0 + 700, T0, T0 + 700, Thresholds(node_silence_s=900)) == (
        PRESENT, None)


def test_it_alerts_15_minutes_after_the_last_hearing_when_the_ad_expires() -> None:
    assert run(power_loss()) == [(15, ALERT, MISSING)]


def test_it_alerts_while_the_ad_is_still_there_with_a_longer_lifetime() -> None:
    """CLASSAD_LIFETIME 3600: today's rule would alert at minute 75, this at 15, silent."""
    assert run(power_loss(lifetime_min=60, until=80)) == [(15, ALERT, SILENT)]
    plain = [(minute, None if heard is None else float(minute), None)
             for minute, heard, _ in power_loss(lifetime_min=60, until=80)]
    assert run(plain) == [(75, ALERT, MISSING)]  # as without LastHeardFrom


def test_it_recovers_after_10_minutes_heard_again() -> None:
    assert run(power_loss(back=30, until=45)) == [(15, ALERT, MISSING), (40, RECOVER, PRESENT)]


def test_a_silent_poll_does_not_count_towards_recovery() -> None:
    quick = Thresholds(node_silence_s=120)
    polls: list[Poll] = power_loss(lifetime_min=60, back=None, until=20)
    polls += [(m, float(m), None) for m in range(20, 25)]  # heard again for 5 minutes
    polls += [(m, 24.0, None) for m in range(25, 30)]  # silent again from 27
    polls += [(m, float(m), None) for m in range(30, 41)]
    assert run(polls, quick) == [(15, ALERT, SILENT), (40, RECOVER, PRESENT)]


def test_a_node_heard_again_before_the_alert_clears_the_window() -> None:
    polls = [(m, 0.0, None) for m in range(0, 14)] + [(m, float(m), None) for m in range(14, 40)]
    assert run(polls) == []


def test_a_collector_clock_behind_the_watchs_makes_no_node_silent() -> None:
    """The collector 20 minutes behind: every LastHeardFrom looks 20 minutes old."""
    lag = 20.0
    healthy = [(m, m - lag - (m % 5), m - lag) for m in range(0, 60)]
    assert run(healthy) == []
    # and a power loss is still measured on the collector's clock: 15 minutes from its
    # last hearing, when its ads expire
    lost: list[Poll] = [(m, (m - lag - (m % 5)) if m < 0 else -lag, m - lag) for m in range(-5, 15)]
    lost += [(m, None, m - lag) for m in range(15, 30)]
    assert run(lost) == [(15, ALERT, MISSING)]


def test_a_last_heard_in_the_future_is_taken_as_the_poll_time() -> None:
    """A collector clock an hour ahead: nothing is silent; the plain rule still applies."""
    ahead = [(m, m + 60.0, None) for m in range(0, 30)] + [(m, None, None) for m in range(30, 46)]
    assert run(ahead) == [(45, ALERT, MISSING)]


def test_one_absurd_last_heard_does_not_alert_on_the_poll_that_reads_it() -> None:
    """LastHeardFrom 0 (1970) on one poll, on a node seen every minute before: the
    watch must see the silence for 2 minutes of its own (fail - silence - max_gap)."""
    polls: list[Poll] = [(m, float(m), None) for m in range(0, 10)]
    polls.append((10, -T0 / 60, None))
    polls.append((11, float(11), None))
    assert run(polls) == []
    polls = [(m, float(m), None) for m in range(0, 10)]
    polls += [(m, -T0 / 60, None) for m in range(10, 14)]
    assert run(polls) == [(12, ALERT, SILENT)]


def test_the_first_poll_of_a_node_long_silent_waits_two_minutes() -> None:
    """A watch that starts (or resumes after a gap) during an outage: the node is silent
    for 14 minutes already; it alerts after seeing that for 2 minutes, not at once."""
    assert run([(m, -14.0, None) for m in range(0, 5)]) == [(2, ALERT, SILENT)]


def test_an_unknown_poll_restarts_a_silent_window() -> None:
    """After an unknown poll the window restarts as at first sight: the watch did not see
    the silence go on, so it counts at most silence + max_gap back from the next poll."""
    polls: list[Poll] = [(m, 0.0, None) for m in range(11, 14)]
    record = TargetRecord()
    for minute, heard, _ in polls:
        now = T0 + minute * 60
        assert heard is not None
        observation, heard_at = classify_heard(now, T0 + heard * 60, now)
        decide(record, NODE, now, observation, heard_at=heard_at)
    assert record.absent_since == T0  # absent since it was last heard
    decide(record, NODE, T0 + 14 * 60, Observation.UNKNOWN)
    assert record.absent_since is None
    now = T0 + 15 * 60
    observation, heard_at = classify_heard(now, T0, now)
    assert decide(record, NODE, now, observation, heard_at=heard_at) is None
    assert record.absent_since == now - 600 - 180


def test_a_gap_in_polling_restarts_a_silent_window() -> None:
    """Polls at 11-13, none for 4 minutes, then 17: from 17 the window counts from minute 4
    (17 - silence - max_gap), so the alert comes at 19, not at 17."""
    polls: list[Poll] = [(m, 0.0, None) for m in (11, 12, 13, 17, 18, 19)]
    assert run(polls) == [(19, ALERT, SILENT)]


def test_a_configured_silence_is_used() -> None:
    quick = Thresholds(node_silence_s=300)
    polls = [(m, 0.0, None) for m in range(0, 16)]
    assert run(polls, quick) == [(15, ALERT, SILENT)]
    slow = Thresholds(node_silence_s=1200)
    assert run([(m, 0.0, None) for m in range(0, 25)], slow) == [(21, ALERT, SILENT)]


# A pool's nodes as the collector hears them: each node updates every 5 minutes at its own
# offset; the collector's clock is `offset` seconds off the watch's, either way.
@settings(max_examples=150, deadline=None)
@given(offset=st.floats(min_value=-3 * 86400, max_value=3 * 86400, allow_nan=False),
       phases=st.lists(st.integers(min_value=0, max_value=299), min_size=1, max_size=12),
       steps=st.lists(st.sampled_from([60.0, 60.0, 60.0, 30.0, 59.0, 61.0, 180.0]),
                      min_size=1, max_size=90))
def test_a_node_the_collector_keeps_hearing_never_alerts_whatever_the_clocks(
        offset: float, phases: list[int], steps: list[float]) -> None:
    records = [TargetRecord() for _ in phases]
    now = T0
    for step in steps:
        now += step
        collector = now + offset
        answer = "".join(f"n{i} {int(collector - (collector - phase) % 300)}\n"
                         for i, phase in enumerate(phases))
        seen = parse_observation(answer)
        reference = collector_now(seen, now)
        for i, record in enumerate(records):
            observation, heard_at = classify_heard(now, seen.heard[f"n{i}"], reference)
            assert observation is PRESENT
            assert decide(record, f"node:n{i}", now, observation,
                          heard_at=heard_at) is None
