"""Properties of the decision rules over arbitrary poll sequences (hypothesis)."""

from __future__ import annotations

from typing import Optional

from hypothesis import given, settings
from hypothesis import strategies as st

from clusterwatch.notify.incident import Action
from clusterwatch.watch.decisions import (
    Decision,
    Observation,
    TargetRecord,
    classify_mtime,
    decide,
)

# The spec's words, as the decision table names them.
ALERT, RECOVER = Action.ALERT, Action.RECOVER
FRESH = Observation.FRESH
MISSING = Observation.MISSING
PRESENT = Observation.PRESENT
STALE = Observation.STALE
UNKNOWN = Observation.UNKNOWN

T0 = 1_790_949_600.0
FAIL, RECOVER_S, MAX_GAP = 900.0, 600.0, 180.0

# Mostly one-minute polls, with jitter, repeats, gaps and backward clock steps.
steps = st.sampled_from([60.0] * 8 + [0.0, 30.0, 59.0, 61.0, 120.0, 180.0, 181.0, 600.0, -30.0])
node_polls = st.lists(
    st.tuples(steps, st.sampled_from([PRESENT] * 3 + [MISSING] * 4 + [UNKNOWN])),
    max_size=200,
)
# GPU: the file's age at each poll (None = missing row, -1 = unknown), mostly plausible.
ages = st.one_of(
    st.sampled_from([None, -1.0]),
    st.floats(min_value=0, max_value=3000, allow_nan=False),
    st.sampled_from([0.0, 30.0, 120.0, 121.0, 899.0, 900.0]),
)
gpu_polls = st.lists(st.tuples(steps, ages), max_size=200)


def run_node(polls: list[tuple[float, Observation]]) -> list[tuple[int, Decision]]:
    record, now, out = TargetRecord(), T0, []
    for index, (step, observation) in enumerate(polls):
        now += step
        decision = decide(record, "node:n", now, observation)
        if decision is not None:
            out.append((index, decision))
    return out


def gpu_observations(polls: list[tuple[float, Optional[float]]]):  # type: ignore[no-untyped-def]
    now = T0
    for step, age in polls:
        now += step
        if age is None:
            yield now, MISSING, None
        elif age < 0:
            yield now, UNKNOWN, None
        else:
            mtime = now - age
            yield now, classify_mtime(now, mtime), mtime


def run_gpu(polls: list[tuple[float, Optional[float]]]) -> list[tuple[int, Decision]]:
    record, out = TargetRecord(), []
    for index, (now, observation, mtime) in enumerate(gpu_observations(polls)):
        decision = decide(record, "gpu:g", now, observation, mtime)
        if decision is not None:
            out.append((index, decision))
    return out


def assert_alternates(decisions: list[tuple[int, Decision]]) -> None:
    """alert, recover, alert, ...: no recovery without an alert, one alert per incident."""
    actions = [d.action for _, d in decisions]
    assert actions == [ALERT if i % 2 == 0 else RECOVER for i in range(len(actions))]
    for (_, alert), (_, recover) in zip(decisions[::2], decisions[1::2]):
        assert alert.incident == recover.incident


def clean_run_start(times: list[float], observations: list[Observation], end: int,
                    good: set[Observation]) -> float:
    """Start time of the longest unbroken run of `good` observations ending at `end`."""
    start = end
    while (
        start > 0
        and observations[start - 1] in good
        and 0 <= times[start] - times[start - 1] <= MAX_GAP
    ):
        start -= 1
    return times[start]


@settings(max_examples=300, deadline=None)
@given(node_polls)
def test_it_never_recovers_without_an_alert_and_alerts_once_per_incident(polls) -> None:  # type: ignore[no-untyped-def]
    assert_alternates(run_node(polls))


@settings(max_examples=300, deadline=None)
@given(gpu_polls)
def test_it_alternates_alert_and_recovery_for_gpu_files(polls) -> None:  # type: ignore[no-untyped-def]
    assert_alternates(run_gpu(polls))


@settings(max_examples=300, deadline=None)
@given(node_polls)
def test_it_alerts_or_recovers_a_node_only_after_an_unbroken_window(polls) -> None:  # type: ignore[no-untyped-def]
    """Any unknown, gap > 180 s or backward step restarts a pending window."""
    times, observations, now = [], [], T0
    for step, observation in polls:
        now += step
        times.append(now)
        observations.append(observation)
    for index, decision in run_node(polls):
        if decision.action == ALERT:
            start = clean_run_start(times, observations, index, {MISSING})
            assert observations[index] == MISSING and times[index] - start >= FAIL
        else:
            start = clean_run_start(times, observations, index, {PRESENT})
            assert observations[index] == PRESENT and times[index] - start >= RECOVER_S


@settings(max_examples=300, deadline=None)
@given(node_polls)
def test_it_alerts_as_soon_as_a_window_is_complete(polls) -> None:  # type: ignore[no-untyped-def]
    """The converse: 15 unbroken minutes of absence without an open incident do alert."""
    decided = {index for index, _ in run_node(polls)}
    record, now = TargetRecord(), T0
    times, observations = [], []
    for index, (step, observation) in enumerate(polls):
        now += step
        times.append(now)
        observations.append(observation)
        was_open = record.incident is not None
        decide(record, "node:n", now, observation)
        if not was_open and observation == MISSING:
            start = clean_run_start(times, observations, index, {MISSING})
            if times[index] - start >= FAIL:
                assert index in decided


@settings(max_examples=300, deadline=None)
@given(gpu_polls)
def test_it_recovers_a_gpu_only_after_ten_fresh_minutes_with_an_advancing_mtime(polls) -> None:  # type: ignore[no-untyped-def]
    observed = list(gpu_observations(polls))
    times = [now for now, _, _ in observed]
    classes = [observation for _, observation, _ in observed]
    for index, decision in run_gpu(polls):
        if decision.action == ALERT:
            assert decision.status in (STALE, MISSING)
            if decision.status == STALE:
                assert classes[index] == STALE
            continue
        start_time = clean_run_start(times, classes, index, {FRESH})
        start = times.index(start_time, 0, index + 1)
        assert classes[index] == FRESH and times[index] - start_time >= RECOVER_S
        assert observed[index][2] is not None and observed[start][2] is not None
        assert any(observed[i][2] > observed[start][2] for i in range(start, index + 1))  # type: ignore[operator]
