"""Silences and maintenance windows in the poll: a held target is observed and its incident
opens and closes as ever; only its alert waits, and goes out once, after the hold ends.

Polls run in process at a chosen clock (T0 = Friday 2026-10-02 14:00:00Z) against the
loopback condor_status, Prometheus and Slack, with the real state file in between.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Optional

import pytest

from clusterwatch.errors import ConfigError
from clusterwatch.notify.incident import Action
from clusterwatch.notify.silences import Silence, new_silence, parse_matcher
from clusterwatch.watch import state
from clusterwatch.watch.config import load_config
from clusterwatch.watch.decisions import Decision, Incident, Observation, TargetRecord
from clusterwatch.watch.holds import (
    MATCHER_KINDS,
    NO_HOLDING,
    Holding,
    deliver_or_hold,
    target_facts,
)
from clusterwatch.watch.poll import firing_events

from .support import T0, Pool

W1, W2 = "worker1.example.org", "worker2.example.org"
G1, G2 = "192.0.2.10:9100", "192.0.2.11:9100"
Row = tuple[int, str, str, str]  # minute, action, target, incident


def at(minute: float) -> float:
    return T0 + minute * 60


def add_silence(pool: Pool, *patterns: str, start: float = T0,
                end: float = T0 + 20 * 60) -> Silence:
    """A silence stored in the state as `silence add` stores it."""
    made = new_silence(tuple(parse_matcher(p, MATCHER_KINDS) for p in patterns), start, end,
                       "kernel update", "alice", start)
    with state.locked(pool.state_dir):
        kept = state.load(pool.state_dir)
        kept.silences.append(made)
        state.save(pool.state_dir, kept)
    return made


def expire_silence(pool: Pool, ident: str, now: float) -> None:
    with state.locked(pool.state_dir):
        kept = state.load(pool.state_dir)
        kept.silences = [s.expire(now) if s.id == ident else s for s in kept.silences]
        state.save(pool.state_dir, kept)


def w2_missing(now: float, pool: Pool) -> None:
    pool.all_healthy(now)
    pool.set_machines([W1])


def run(pool: Pool, start: int, stop: int,
        setup: Callable[[float, Pool], None] = w2_missing,
        between: Optional[Callable[[int], None]] = None) -> tuple[list[Row], list[Row]]:
    """Poll once a minute; (what the rules decided, what was queued for delivery)."""
    decided: list[Row] = []
    queued: list[Row] = []
    for minute in range(start, stop):
        if between is not None:
            between(minute)
        setup(at(minute), pool)
        result = pool.poll(at(minute))
        decided += [(minute, d.action.value, d.target, d.incident) for d in result.decisions]
        queued += [(minute, e.action.value, e.target, e.incident) for e in result.events]
    return decided, queued


def slack_lines(pool: Pool) -> list[str]:
    return [line for request in pool.slack.requests
            for line in str(request.json()["text"]).splitlines()]


def incident_of(pool: Pool, target: str) -> Optional[Incident]:
    return state.load(pool.state_dir).records[target].incident


# --- silences -----------------------------------------------------------------------------

def test_a_silenced_nodes_alert_is_held_then_sent_once_when_the_silence_ends(
    pool: Pool,
) -> None:
    add_silence(pool, "node:worker2*", end=at(20))  # ends exactly at the minute-20 poll
    decided, queued = run(pool, 0, 20)
    assert [row[:3] for row in decided] == [(15, "alert", f"node:{W2}")]
    assert queued == [] and pool.slack.requests == []
    held = incident_of(pool, f"node:{W2}")
    assert held is not None and held.held and held.id == decided[0][3]

    decided_after, queued_after = run(pool, 20, 30)
    assert decided_after == []  # the incident was open all along: no new decision
    # Released at the first poll at or after the end, with the incident's id, exactly once.
    assert queued_after == [(20, "alert", f"node:{W2}", held.id)]
    assert slack_lines(pool) == [
        f"2026-10-02 14:15:00Z ALERT node:{W2} (missing) incident {held.id}"]
    released = incident_of(pool, f"node:{W2}")
    assert released is not None and not released.held


def test_the_unsilenced_node_alerts_at_once_beside_a_silenced_one(pool: Pool) -> None:
    add_silence(pool, "node:worker2*", end=at(60))
    _, queued = run(pool, 0, 17, setup=lambda now, p: (p.all_healthy(now), p.set_machines([])))
    assert [row[:3] for row in queued] == [(15, "alert", f"node:{W1}")]


def test_a_held_incident_that_closes_while_held_closes_silently(pool: Pool) -> None:
    add_silence(pool, "node:worker2*", end=at(60))

    def setup(now: float, p: Pool) -> None:
        p.all_healthy(now)
        if now < at(16):
            p.set_machines([W1])  # worker2 gone for 16 minutes, then back

    decided, queued = run(pool, 0, 70, setup)
    assert [row[:3] for row in decided] == [(15, "alert", f"node:{W2}"),
                                            (26, "recover", f"node:{W2}")]
    assert queued == [] and pool.slack.requests == []  # neither before nor after the end


def test_a_recovery_goes_out_for_a_delivered_alert_and_is_never_held(pool: Pool) -> None:
    def setup(now: float, p: Pool) -> None:
        p.all_healthy(now)
        if now < at(16):
            p.set_machines([W1])

    def silence_after_alert(minute: int) -> None:
        if minute == 16:
            add_silence(pool, "node:worker2*", start=at(16), end=at(60))

    _, queued = run(pool, 0, 30, setup, silence_after_alert)
    assert [row[:3] for row in queued] == [(15, "alert", f"node:{W2}"),
                                           (26, "recover", f"node:{W2}")]
    assert queued[0][3] == queued[1][3]


def test_an_expired_silence_releases_the_alert_at_the_next_poll(pool: Pool) -> None:
    made = add_silence(pool, "node:worker2.example.org", end=at(120))

    def expire_at_22(minute: int) -> None:
        if minute == 22:
            expire_silence(pool, made.id, at(21.5))

    decided, queued = run(pool, 0, 30, between=expire_at_22)
    assert [row[:3] for row in queued] == [(22, "alert", f"node:{W2}")]
    assert queued[0][3] == decided[0][3]


def test_a_silence_of_another_name_or_kind_holds_nothing_here(pool: Pool) -> None:
    add_silence(pool, "node:worker1*", end=at(60))
    add_silence(pool, f"gpu:{G2}", end=at(60))  # a node has no gpu: not about it
    _, queued = run(pool, 0, 16)
    assert [row[:3] for row in queued] == [(15, "alert", f"node:{W2}")]


def test_a_silenced_stale_gpu_file_waits_and_the_other_alerts_at_once(pool: Pool) -> None:
    add_silence(pool, "gpu:192.0.2.10:*", end=at(5))

    def both_stale(now: float, p: Pool) -> None:
        p.set_machines([W1, W2])
        p.set_gpu_mtimes({G1: T0 - 2000, G2: T0 - 2000}, now)

    _, queued = run(pool, 0, 8, both_stale)
    assert [row[:3] for row in queued] == [(0, "alert", f"gpu:{G2}"), (5, "alert", f"gpu:{G1}")]


def test_a_node_silence_holds_the_gpu_file_of_that_node(pool: Pool) -> None:
    pool.set_inventory([W1, W2], [f"{W2}:9100"])
    add_silence(pool, "node:worker2*", end=at(60))

    def stale(now: float, p: Pool) -> None:
        p.set_machines([W1, W2])
        p.set_gpu_mtimes({f"{W2}:9100": T0 - 2000}, now)

    decided, queued = run(pool, 0, 3, stale)
    assert [row[:3] for row in decided] == [(0, "alert", f"gpu:{W2}:9100")]
    assert queued == []


def test_target_facts_name_the_node_of_a_gpu_file_only_when_it_is_an_expected_node() -> None:
    assert target_facts(f"node:{W1}") == {"node": [W1]}
    assert target_facts(f"gpu:{G1}", {W1}) == {"gpu": [G1]}
    assert target_facts(f"gpu:{W1}:9100", {W1}) == {"gpu": [f"{W1}:9100"], "node": [W1]}
    assert target_facts("gpu:[2001:db8::1]:9100", {"2001:db8::1"})["node"] == ["2001:db8::1"]


def test_held_incidents_are_not_restated_to_channels() -> None:
    records = {f"node:{W1}": TargetRecord(incident=Incident("a", T0, "missing")),
               f"node:{W2}": TargetRecord(incident=Incident("b", T0, "missing", held=True))}
    assert [event.incident for event in firing_events(records)] == ["a"]


def test_without_holds_every_decision_is_queued_as_decided() -> None:
    record = TargetRecord(incident=Incident("i", T0, "missing"))
    decision = Decision(T0, f"node:{W1}", Action.ALERT, Observation.MISSING, "i")
    delivery, hold = deliver_or_hold(record, None, decision, f"node:{W1}", T0, NO_HOLDING)
    assert hold is None and delivery is not None
    assert (delivery.t, delivery.action, delivery.target, delivery.status, delivery.incident) \
        == (T0, Action.ALERT, f"node:{W1}", "missing", "i")
    assert not record.incident.held  # type: ignore[union-attr]
    empty = Holding(silences=(), windows=())
    assert empty.hold(f"node:{W1}", T0) is None


# --- maintenance windows (watch.toml) -----------------------------------------------------

def test_a_weekly_window_in_a_zone_holds_the_alert_and_releases_it_when_it_closes(
    pool: Pool,
) -> None:
    # Friday 16:00 in Zurich (summer time, UTC+2) is 14:00Z: open from minute 0 to 20.
    pool.write_toml('[[maintenance]]\ncomment = "Friday reboots"\nmatchers = ["node:worker*"]\n'
                    'day = "fri"\ntime = "16:00"\nduration = "20m"\nzone = "Europe/Zurich"\n')
    decided, queued = run(pool, 0, 25)
    assert [row[:3] for row in decided] == [(15, "alert", f"node:{W2}")]
    assert queued == [(20, "alert", f"node:{W2}", decided[0][3])]


def test_a_weekly_window_in_utc_at_that_clock_time_is_not_open_yet(pool: Pool) -> None:
    pool.write_toml('[[maintenance]]\ncomment = "Friday reboots"\nmatchers = ["node:worker*"]\n'
                    'day = "fri"\ntime = "16:00"\nduration = "20m"\n')
    _, queued = run(pool, 0, 16)
    assert [row[:3] for row in queued] == [(15, "alert", f"node:{W2}")]


@pytest.mark.parametrize("bounds", [
    'start = "2026-10-02T15:50:00+02:00"\nend = "2026-10-02T16:30:00+02:00"\n',
    "start = 2026-10-02T13:50:00Z\nend = 2026-10-02T14:30:00Z\n",  # TOML datetimes
], ids=["iso-strings-with-offset", "toml-datetimes"])
def test_a_one_off_window_holds_until_its_end(pool: Pool, bounds: str) -> None:
    pool.write_toml(f'[[maintenance]]\ncomment = "PDU swap"\nmatchers = ["node:{W2}"]\n'
                    + bounds)
    decided, queued = run(pool, 0, 35)
    assert queued == [(30, "alert", f"node:{W2}", decided[0][3])]


def test_a_window_that_opens_over_an_open_delivered_incident_holds_nothing(pool: Pool) -> None:
    # Opens at 14:16Z, after the alert went out; the recovery at minute 26 goes out too.
    pool.write_toml('[[maintenance]]\ncomment = "late"\nmatchers = ["node:*"]\n'
                    'start = 2026-10-02T14:16:00Z\nend = 2026-10-02T15:00:00Z\n')

    def setup(now: float, p: Pool) -> None:
        p.all_healthy(now)
        if now < at(16):
            p.set_machines([W1])

    _, queued = run(pool, 0, 30, setup)
    assert [row[1] for row in queued] == ["alert", "recover"]


@pytest.mark.parametrize(("table", "message"), [
    ('comment = "x"\nmatchers = ["host:a"]\nstart = 2026-10-02T13:50:00Z\n'
     "end = 2026-10-02T14:30:00Z\n", "unknown kind 'host'"),
    ('comment = "x"\nmatchers = ["node:a"]\nday = "fri"\ntime = "16:00"\n'
     'duration = "0m"\n', "not positive"),
    ('comment = "x"\nmatchers = ["node:a"]\nday = "fri"\ntime = "16:00"\n'
     'duration = "1h"\nzone = "Mars/Olympus"\n', "not a known time zone"),
    ('matchers = ["node:a"]\nday = "fri"\ntime = "16:00"\nduration = "1h"\n', "needs a comment"),
], ids=["kind", "duration", "zone", "comment"])
def test_a_bad_window_is_a_configuration_error(pool: Pool, table: str, message: str) -> None:
    pool.write_toml("[[maintenance]]\n" + table)
    with pytest.raises(ConfigError, match=message):
        pool.config()


def test_the_example_maintenance_tables_load_once_uncommented(tmp_path: Path) -> None:
    example = Path(__file__).resolve().parents[2] / "examples" / "watch" / "watch.toml"
    lines = example.read_text().splitlines()
    first = lines.index("# [[maintenance]]")
    last = lines.index("# Channels. Without any [[channels]] table, a slack_webhook file "
                       "beside this one enables")
    tables = [line[2:] for line in lines[first:last]
              if line.startswith("# ") and not line.startswith("# A ")]
    (tmp_path / "watch.toml").write_text("\n".join(tables) + "\n")
    windows = load_config(tmp_path, tmp_path / "state").windows
    assert [w.describe() for w in windows] == [
        "PDU swap in rack 12 (node:wn12* gpu:10.1.12.*:9100): 2026-12-10 07:00Z to "
        "2026-12-10 10:00Z",
        "Tuesday kernel reboots (node:wn2*): weekly, tue 06:00 Europe/Zurich for 2h"]
