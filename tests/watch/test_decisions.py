"""Every row of the spec's decision table, one or more tests each."""

from __future__ import annotations

from typing import Optional

import pytest

from clusterwatch.notify.incident import Action
from clusterwatch.watch.decisions import (
    Decision,
    Observation,
    TargetRecord,
    Thresholds,
    classify_mtime,
    decide,
)

# The spec's words, as the decision table names them.
ALERT, RECOVER = Action.ALERT, Action.RECOVER
AGING = Observation.AGING
FRESH = Observation.FRESH
MISSING = Observation.MISSING
PRESENT = Observation.PRESENT
STALE = Observation.STALE
UNKNOWN = Observation.UNKNOWN

GpuPoll = tuple[float, Optional[float], Optional[Observation]]  # minute, mtime minute, else
Seen = tuple[float, Action, Observation]  # minute, action, status

T0 = 1_790_949_600.0  # 2026-10-02 14:00:00Z
NODE = "node:worker.example.org"
GPU = "gpu:192.0.2.10:9100"


def run_node(polls: list[tuple[float, Observation]]) -> list[Seen]:
    """Feed (minute, observation) polls for one node; return (minute, action, status)."""
    record = TargetRecord()
    out = []
    for minute, observation in polls:
        decision = decide(record, NODE, T0 + minute * 60, observation)
        if decision is not None:
            out.append((minute, decision.action, decision.status))
    return out


def run_gpu(polls: list[GpuPoll]) -> list[Seen]:
    """Feed (minute, mtime minute or None, observation if no mtime) for one GPU."""
    record = TargetRecord()
    out = []
    for minute, mtime_minute, word in polls:
        now = T0 + minute * 60
        if mtime_minute is None:
            decision = decide(record, GPU, now, word)
        else:
            mtime = T0 + mtime_minute * 60
            decision = decide(record, GPU, now, classify_mtime(now, mtime), mtime)
        if decision is not None:
            out.append((minute, decision.action, decision.status))
    return out


# --- classification of a GPU file's mtime -------------------------------------------------

@pytest.mark.parametrize(
    ("age", "expected"),
    [(0, FRESH), (120, FRESH), (120.5, AGING), (121, AGING), (899, AGING), (899.9, AGING),
     (900, STALE), (10_000, STALE)],
)
def test_it_classifies_file_age_by_the_spec_bounds(age: float, expected: Observation) -> None:
    assert classify_mtime(T0, T0 - age) == expected


@pytest.mark.parametrize("mtime", [0.0, -5.0, T0 + 1, float("nan"), float("inf")])
def test_it_treats_future_non_positive_or_non_finite_mtimes_as_unknown(mtime: float) -> None:
    assert classify_mtime(T0, mtime) == UNKNOWN


# --- node missing ------------------------------------------------------------------------

def test_it_alerts_after_15_minutes_of_observed_absence() -> None:
    polls = [(m, MISSING) for m in range(0, 20)]
    assert run_node(polls) == [(15, ALERT, MISSING)]


def test_it_counts_minute_zero_from_the_first_omission_not_the_first_poll() -> None:
    polls = [(m, PRESENT) for m in range(0, 5)] + [(m, MISSING) for m in range(5, 21)]
    assert run_node(polls) == [(20, ALERT, MISSING)]


def test_it_does_not_alert_at_14_minutes_59_seconds() -> None:
    record = TargetRecord()
    assert decide(record, NODE, T0, MISSING) is None
    for second in range(60, 899, 60):
        assert decide(record, NODE, T0 + second, MISSING) is None
    assert decide(record, NODE, T0 + 899, MISSING) is None
    decision = decide(record, NODE, T0 + 900, MISSING)
    assert decision is not None and decision.action == ALERT


def test_it_alerts_once_per_incident() -> None:
    polls = [(m, MISSING) for m in range(0, 60)]
    assert run_node(polls) == [(15, ALERT, MISSING)]


def test_it_resets_the_absence_window_when_the_node_is_seen() -> None:
    polls = [(m, MISSING) for m in range(0, 10)] + [(10, PRESENT)]
    polls += [(m, MISSING) for m in range(11, 27)]
    assert run_node(polls) == [(26, ALERT, MISSING)]


# --- GPU missing and stale ---------------------------------------------------------------

def test_it_alerts_on_a_gpu_row_missing_for_15_minutes() -> None:
    polls: list[GpuPoll] = [(m, None, MISSING) for m in range(17)]
    assert run_gpu(polls) == [(15, ALERT, MISSING)]


def test_it_alerts_stale_on_the_very_first_poll() -> None:
    # A 14:00 mtime alerts at a 14:16 first poll.
    assert run_gpu([(16, 0, None), (17, 0, None)]) == [(16, ALERT, STALE)]


def test_it_names_the_incident_as_state_files_and_channels_already_know_it() -> None:
    # 8 hex digits from the target and the detection time: ids in users' state files and
    # in messages already sent must keep matching their recoveries.
    decision = decide(TargetRecord(), GPU, T0, STALE)
    assert decision is not None and decision.incident == "a0a1a610"


def test_it_alerts_stale_when_the_age_reaches_15_minutes() -> None:
    polls: list[GpuPoll] = [(m, 0.0, None) for m in range(0, 20)]
    assert run_gpu(polls) == [(15, ALERT, STALE)]


def test_it_keeps_one_incident_when_a_stale_file_then_disappears() -> None:
    polls: list[GpuPoll] = [(16, 0, None)]
    polls += [(m, None, MISSING) for m in range(17, 40)]
    assert run_gpu(polls) == [(16, ALERT, STALE)]


def test_it_treats_a_stale_observation_as_ending_an_absence_window() -> None:
    # Missing for 10 minutes, then the row comes back stale: alert at once (stale).
    polls: list[GpuPoll] = [(m, None, MISSING) for m in range(10)]
    polls.append((10, -10.0, None))
    assert run_gpu(polls) == [(10, ALERT, STALE)]


# --- node recovery -----------------------------------------------------------------------

def node_incident_then(polls_after: list[tuple[float, Observation]]) -> list[Seen]:
    return run_node([(m, MISSING) for m in range(0, 16)] + polls_after)


def test_it_recovers_a_node_after_10_minutes_of_valid_polls_that_see_it() -> None:
    assert node_incident_then([(m, PRESENT) for m in range(20, 31)]) == [
        (15, ALERT, MISSING), (30, RECOVER, PRESENT)]


def test_it_does_not_recover_a_node_at_9_minutes() -> None:
    assert node_incident_then([(m, PRESENT) for m in range(20, 30)]) == [(15, ALERT, MISSING)]


def test_it_restarts_node_recovery_after_a_missing_poll() -> None:
    polls = [(m, PRESENT) for m in range(20, 28)] + [(28, MISSING)]
    polls += [(m, PRESENT) for m in range(29, 40)]
    assert node_incident_then(polls) == [(15, ALERT, MISSING), (39, RECOVER, PRESENT)]


def test_it_recovers_only_an_open_incident() -> None:
    assert run_node([(m, PRESENT) for m in range(0, 30)]) == []


# --- GPU recovery ------------------------------------------------------------------------

def gpu_incident_then(polls_after: list[GpuPoll]) -> list:
    before: list[GpuPoll] = [(16, 0, None)]
    return run_gpu(before + polls_after)


def test_it_recovers_a_gpu_10_minutes_after_the_first_fresh_write() -> None:
    polls: list[GpuPoll] = [(m, m - 0.5, None) for m in range(20, 31)]
    assert gpu_incident_then(polls) == [(16, ALERT, STALE), (30, RECOVER, FRESH)]


def test_it_does_not_recover_a_gpu_whose_mtime_did_not_advance() -> None:
    # With the default thresholds a stuck mtime turns aging long before 10 minutes; with a
    # recovery window shorter than the fresh bound, only the "mtime advanced" rule holds
    # the incident open.
    short = Thresholds(recover_s=60, fresh_s=120)
    record = TargetRecord()
    decide(record, GPU, T0 + 960, STALE, T0, short)
    now = T0 + 1200
    assert decide(record, GPU, now, FRESH, now - 10, short) is None
    assert decide(record, GPU, now + 30, FRESH, now - 10, short) is None
    assert decide(record, GPU, now + 60, FRESH, now - 10, short) is None
    assert record.incident is not None
    decision = decide(record, GPU, now + 90, FRESH, now + 80, short)
    assert decision is not None and decision.action == RECOVER and decision.status == FRESH


def test_it_resets_gpu_recovery_on_an_aging_blip() -> None:
    polls: list[GpuPoll] = [(m, m - 0.5, None) for m in range(20, 25)]
    polls.append((25, 22.5, None))  # 150 s old: aging
    polls += [(m, m - 0.5, None) for m in range(26, 37)]
    assert gpu_incident_then(polls) == [(16, ALERT, STALE), (36, RECOVER, FRESH)]


def test_it_resets_gpu_recovery_on_missing_or_stale() -> None:
    polls: list[GpuPoll] = [(m, m - 0.5, None) for m in range(20, 25)]
    polls.append((25, None, MISSING))
    polls += [(m, m - 0.5, None) for m in range(26, 36)]
    polls.append((36, 10, None))  # stale again
    polls += [(m, m - 0.5, None) for m in range(37, 48)]
    assert gpu_incident_then(polls) == [(16, ALERT, STALE), (47, RECOVER, FRESH)]


def test_it_lets_a_single_fresh_write_start_the_recovery_window() -> None:
    record = TargetRecord()
    decide(record, GPU, T0 + 960, STALE, T0)
    now = T0 + 1200
    assert decide(record, GPU, now, FRESH, now - 60) is None
    assert record.good_since == now and record.good_first_mtime == now - 60


# --- unknowns, gaps and clock steps ------------------------------------------------------

def test_it_restarts_the_absence_window_after_an_unknown_poll() -> None:
    polls = [(m, MISSING) for m in range(0, 10)] + [(10, UNKNOWN)]
    polls += [(m, MISSING) for m in range(11, 27)]
    assert run_node(polls) == [(26, ALERT, MISSING)]


def test_it_restarts_the_absence_window_after_a_gap_over_180_seconds() -> None:
    polls = [(m, MISSING) for m in range(0, 10)] + [(m, MISSING) for m in range(14, 30)]
    assert run_node(polls) == [(29, ALERT, MISSING)]


def test_it_keeps_the_window_across_a_gap_of_exactly_180_seconds() -> None:
    polls = [(m, MISSING) for m in range(0, 10)] + [(m, MISSING) for m in range(12, 16)]
    assert run_node(polls) == [(15, ALERT, MISSING)]


def test_it_restarts_the_window_after_a_backward_clock_step() -> None:
    polls = [(m, MISSING) for m in range(0, 10)] + [(8.5, MISSING)]
    polls += [(m + 0.5, MISSING) for m in range(9, 25)]
    assert run_node(polls) == [(23.5, ALERT, MISSING)]


def test_it_updates_the_previous_poll_time_on_unknown_polls() -> None:
    # Unknown polls every minute keep the gap short; the window restarts at the first
    # missing after them, not because of a gap.
    record = TargetRecord()
    decide(record, NODE, T0, UNKNOWN)
    assert record.last_poll == T0
    decide(record, NODE, T0 + 60, UNKNOWN)
    assert record.last_poll == T0 + 60


def test_it_restarts_recovery_after_an_unknown_poll() -> None:
    polls = [(m, PRESENT) for m in range(20, 27)] + [(27, UNKNOWN)]
    polls += [(m, PRESENT) for m in range(28, 39)]
    assert node_incident_then(polls) == [(15, ALERT, MISSING), (38, RECOVER, PRESENT)]


def test_it_restarts_recovery_after_a_gap() -> None:
    polls = [(m, PRESENT) for m in range(20, 27)] + [(m, PRESENT) for m in range(31, 42)]
    assert node_incident_then(polls) == [(15, ALERT, MISSING), (41, RECOVER, PRESENT)]


def test_it_keeps_an_open_incident_through_unknowns_gaps_and_clock_steps() -> None:
    record = TargetRecord()
    for m in range(0, 16):
        decide(record, NODE, T0 + m * 60, MISSING)
    assert record.incident is not None
    decide(record, NODE, T0 + 20 * 60, UNKNOWN)
    decide(record, NODE, T0 + 60 * 60, MISSING)  # 40-minute gap
    decide(record, NODE, T0 + 30 * 60, MISSING)  # clock stepped back
    assert record.incident is not None
    decisions = [decide(record, NODE, T0 + 30 * 60 + m * 60, MISSING) for m in range(1, 30)]
    assert decisions == [None] * 29  # still one incident: no second alert


def test_it_clears_pending_windows_on_present_fresh_or_aging_without_an_incident() -> None:
    record = TargetRecord()
    decide(record, GPU, T0, MISSING)
    assert record.absent_since == T0
    decide(record, GPU, T0 + 60, AGING, T0 - 200)
    assert record.absent_since is None and record.good_since is None and record.incident is None


def test_it_returns_the_triggering_status_and_an_incident_id_shared_by_alert_and_recovery() -> None:
    record = TargetRecord()
    decisions: list[Decision] = []
    for m in range(0, 16):
        d = decide(record, NODE, T0 + m * 60, MISSING)
        if d:
            decisions.append(d)
    for m in range(16, 27):
        d = decide(record, NODE, T0 + m * 60, PRESENT)
        if d:
            decisions.append(d)
    assert [(d.action, d.status) for d in decisions] == [(ALERT, MISSING), (RECOVER, PRESENT)]
    assert decisions[0].incident == decisions[1].incident
    assert decisions[0].t == T0 + 15 * 60


def test_it_honours_configured_thresholds() -> None:
    quick = Thresholds(fail_s=10, recover_s=5, max_gap_s=3, fresh_s=2)
    record = TargetRecord()
    results = [decide(record, NODE, T0 + s, MISSING, None, quick) for s in range(0, 11)]
    assert [d.action for d in results if d] == [ALERT]
    assert results[10] is not None
