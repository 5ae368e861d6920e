"""Alarm conditions over each key's latest record: pure, `{target: Observation}`.

Staleness comes first. A key silent for more than three intervals (or one with a token that
never reported after the grace period) is a monitoring incident, `reporter_stale`, and its
other checks are not evaluated at all: old data must neither raise nor recover anything, so
every other alarm of the key stays as it is until fresh data speaks for it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Optional

from clusterwatch.monitor.alarms import wording
from clusterwatch.monitor.alarms.disk_rule import observe_disks
from clusterwatch.monitor.alarms.observation import (
    PANDA,
    STALE,
    AlarmState,
    Observation,
    RuleSettings,
    split_target,
    target,
)
from clusterwatch.monitor.alarms.panda_rule import observe_fetching
from clusterwatch.monitor.record.host_record import HostRecord


@dataclass(frozen=True)
class KeyFacts:
    """What the database knows about one key, as plain data."""

    key: str
    record: Optional[HostRecord] = None  # the latest record by collected_at
    collected_at: Optional[float] = None  # its collected_at, epoch seconds
    expected_since: Optional[float] = None  # first active token's creation; None: none
    retired_at: Optional[float] = None  # every token of the key revoked, the last at this
    registered: bool = False  # in the harvester registry: expected since its registration


def observe_key(
    facts: KeyFacts, now: float, settings: RuleSettings, open_targets: Collection[str] = ()
) -> dict[str, Observation]:
    key = facts.key
    mine = [name for name in open_targets if split_target(name)[1] == key]
    if facts.retired_at is not None:
        # Its tokens are revoked: it is not expected to report any more, and what it last
        # said cannot be updated. Close what is open rather than keep it forever.
        revoked = wording.utc(facts.retired_at)
        return {name: Observation(AlarmState.CLEAR, "retired",
                                  f"{key}: no longer expected to report (its token was "
                                  f"revoked {revoked})", facts.retired_at)
                for name in mine}
    stale = observe_staleness(facts, now, settings)
    observations = {target(STALE, key): stale}
    if stale.state is not AlarmState.CLEAR or facts.record is None or facts.collected_at is None:
        return observations  # every other alarm of the key stays as it is
    observations.update(observe_disks(key, facts.record, facts.collected_at, settings, mine))
    observations[target(PANDA, key)] = observe_fetching(key, facts.record, facts.collected_at)
    return observations


def observe_staleness(facts: KeyFacts, now: float, settings: RuleSettings) -> Observation:
    key = facts.key
    if facts.collected_at is None:
        if facts.expected_since is None:
            return Observation(AlarmState.UNKNOWN, "not expected",
                               f"{key}: no record and no active token", None)
        waited = now - facts.expected_since
        since = wording.utc_age(facts.expected_since, now)
        if waited <= settings.grace_s:
            return Observation(AlarmState.UNKNOWN, "waiting", f"{key}: no record yet ("
                               f"{'registered' if facts.registered else 'token created'} "
                               f"{since})", None)
        return Observation(AlarmState.FIRING, "never reported",
                           f"{key}: never reported since "
                           f"{'it was registered' if facts.registered else 'its token was created'}"
                           f" {since} (allowed {wording.duration(settings.grace_s)})", None)
    age = now - facts.collected_at
    collected = wording.utc_age(facts.collected_at, now)
    stale_after = settings.stale_after_record_s(
        facts.record.interval.expected_s if facts.record is not None else None)
    if age > stale_after:
        return Observation(AlarmState.FIRING, "silent",
                           f"{key}: no record for {wording.duration(age)} (last collected "
                           f"{wording.utc(facts.collected_at)}; stale after "
                           f"{wording.duration(stale_after)}) — its other alarms "
                           "stay as they are until it reports", facts.collected_at)
    return Observation(AlarmState.CLEAR, "reporting",
                       f"{key}: reports again (latest record collected {collected})",
                       facts.collected_at)


def observe_all(
    keys: Iterable[KeyFacts], now: float, settings: RuleSettings, open_targets: Collection[str]
) -> dict[str, Observation]:
    observations: dict[str, Observation] = {}
    for facts in keys:
        observations.update(observe_key(facts, now, settings, open_targets))
    return observations
