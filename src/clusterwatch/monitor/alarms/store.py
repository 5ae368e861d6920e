"""Alarm state in the database, and what the rules read from it, as plain data."""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Sequence
from typing import Optional

from clusterwatch.monitor.alarms.observation import split_target
from clusterwatch.monitor.alarms.rules import KeyFacts
from clusterwatch.monitor.alarms.transitions import Change, OpenAlarm, Transition
from clusterwatch.monitor.core.models import Alarm, HostTokenKey, LatestReport, RegisteredHarvester
from clusterwatch.monitor.record.host_record import parse_record
from clusterwatch.notify.event import Event
from clusterwatch.notify.incident import Action


def _utc(t: Optional[float]) -> Optional[dt.datetime]:
    return None if t is None else dt.datetime.fromtimestamp(t, tz=dt.timezone.utc)


def _epoch(value: Optional[dt.datetime]) -> Optional[float]:
    return None if value is None else value.timestamp()


def key_facts() -> list[KeyFacts]:
    """Every key that reported, holds a token or is registered (the harvester registry): its
    latest record, and since when it is expected (its first active token or its
    registration)."""
    latest = {
        row.key: row for row in LatestReport.objects.select_related("report").order_by("key")
    }
    expected: dict[str, float] = {}
    revoked: dict[str, float] = {}
    has_token: set[str] = set()
    for binding in HostTokenKey.objects.select_related("token"):
        key, token = binding.key, binding.token
        has_token.add(key)
        if token.revoked_at is None:
            created = token.created_at.timestamp()
            expected[key] = min(created, expected.get(key, created))
        else:
            at = token.revoked_at.timestamp()
            revoked[key] = max(at, revoked.get(key, at))
    # A registered key is expected whether or not it has a token (a remote harvester has
    # none), so it is never retired by revoked tokens either.
    registered = dict(RegisteredHarvester.objects.values_list("key", "registered_at"))
    for key, at in registered.items():
        expected[key] = min(at.timestamp(), expected.get(key, at.timestamp()))
    facts: list[KeyFacts] = []
    for key in sorted(set(latest) | has_token | set(expected)):
        row = latest.get(key)
        record = row.report.record if row is not None else None
        facts.append(KeyFacts(
            key=key,
            record=parse_record(record) if isinstance(record, dict) else None,
            collected_at=row.collected_at.timestamp() if row is not None else None,
            expected_since=expected.get(key),
            # Retired: it had tokens and none is active. A key without any token row
            # (records loaded some other way) is never retired by this.
            retired_at=revoked.get(key) if key in has_token and key not in expected else None,
            # Worded as a registration only when no active token came first.
            registered=key in registered and expected[key] == registered[key].timestamp(),
        ))
    return facts


def open_alarms() -> dict[str, OpenAlarm]:
    return {
        alarm.target: OpenAlarm(alarm.target, alarm.incident, alarm.status, alarm.detail,
                                alarm.opened_at.timestamp(), _epoch(alarm.evidence_at),
                                alarm.alert_held)
        for alarm in Alarm.objects.filter(closed_at__isnull=True).order_by("target")
    }


def open_count() -> int:
    """The open alarms, whether their alert went out or is held."""
    count: int = Alarm.objects.filter(closed_at__isnull=True).count()
    return count


def apply(transitions: Sequence[Transition], now: float,
          held: Collection[str] = (), released: Collection[str] = ()) -> None:
    """Write the transitions (inside the caller's transaction): the incidents in `held` open
    with their alert held back, those in `released` have had theirs sent now."""
    when = _utc(now)
    for change in transitions:
        if change.action is Change.ALERT:
            check, key, _ = split_target(change.target)
            Alarm.objects.create(
                target=change.target, kind=check, key=key, incident=change.incident,
                status=change.status, detail=change.detail, opened_at=when,
                evidence_at=_utc(change.evidence_at), updated_at=when,
                alert_held=change.incident in held)
        elif change.action is Change.RECOVER:
            Alarm.objects.filter(incident=change.incident, closed_at__isnull=True).update(
                closed_at=when, close_detail=change.detail, updated_at=when)
        else:
            Alarm.objects.filter(incident=change.incident, closed_at__isnull=True).update(
                status=change.status, detail=change.detail, updated_at=when)
    if released:
        Alarm.objects.filter(incident__in=sorted(released), closed_at__isnull=True).update(
            alert_held=False, updated_at=when)


def firing_events() -> list[Event]:
    """The alert of every open alarm whose alert went out, as channels that re-state
    alerts want them (Alertmanager): a held one is not firing as far as they know."""
    return [
        Event(0, alarm.opened_at.timestamp(), Action.ALERT, alarm.target, alarm.status,
              alarm.incident, alarm.detail)
        for alarm in Alarm.objects.filter(closed_at__isnull=True, alert_held=False)
        .order_by("target")
    ]
