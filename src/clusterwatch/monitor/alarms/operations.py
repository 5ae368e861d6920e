"""What staff do to the monitor's alarms: silence them, expire a silence, acknowledge an alarm.

The alarms page and the `clusterwatch monitor` commands both call these, so a silence made
on the page and one made by a script are checked by the same rules (notify.silences) and
stored the same way. Every function takes its clock (`now`, epoch seconds) from the caller.

Which alarms a silence holds is not decided here: the run, `alarms_status` and the page
all ask `alarms.holds` (over `store.key_facts`), so they cannot disagree.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterable, Sequence
from typing import Any, Optional

from django.db.models import Q

from clusterwatch.monitor.alarms import holds as holds_rules
from clusterwatch.monitor.core.models import Alarm, AlarmSilence
from clusterwatch.notify import silences
from clusterwatch.notify.silences import Silence, SilenceError

log = logging.getLogger(__name__)

# What a monitor silence may match: the alarm's key, its host's name (the record's hostname),
# the PanDA queues of a harvester alarm, and the filesystem of a disk alarm.
MATCHER_KINDS = holds_rules.KINDS  # ("key", "host", "queue", "filesystem")
MAX_ACK_COMMENT_CHARS = silences.MAX_COMMENT_CHARS
_AUTHOR_CHARS = 150  # AlarmSilence.author and Alarm.acknowledged_by


def _utc(t: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(t, tz=dt.timezone.utc)


def _microseconds_down(t: float) -> float:
    """`t` at the microsecond the database keeps, never after it: stored rounded up (as
    often as not), a silence made at `t` would start after the moment it was made."""
    when = _utc(t)
    if when.timestamp() > t:
        when -= dt.timedelta(microseconds=1)
    return when.timestamp()


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _shown(text: str) -> str:
    """A bounded repr: a pasted wall of text stays one short line in a message."""
    return repr(text if len(text) <= 80 else text[:77] + "...")


# Silences.


def to_silence(row: AlarmSilence) -> Silence:
    """The row as notify.silences reads it (matchers of an unknown kind hold nothing)."""
    return Silence.from_json({
        "id": row.id, "matchers": row.matchers, "starts_at": row.starts_at.timestamp(),
        "ends_at": row.ends_at.timestamp(), "comment": row.comment, "author": row.author,
        "created_at": row.created_at.timestamp(),
        "expired_at": None if row.expired_at is None else row.expired_at.timestamp(),
    })


def add_silence(
    matchers: Sequence[str], *, duration_s: Optional[float], until: Optional[float],
    comment: str, author: str, now: float,
) -> AlarmSilence:
    """A silence from now for `duration_s` or until `until`; SilenceError (one line) on bad
    input, and nothing is stored then."""
    now = _microseconds_down(now)
    parsed = [silences.parse_matcher(text.strip(), MATCHER_KINDS) for text in matchers
              if text.strip()]
    if (duration_s is None) == (until is None):
        raise SilenceError("give either a duration or an end time (until), not both")
    if duration_s is not None and not 0 < duration_s <= silences.MAX_SPAN_S:
        raise SilenceError("the duration must be positive and at most 366 days")
    if until is not None and until <= now:
        raise SilenceError(f"the end time {silences.utc(until)} is not in the future")
    ends_at = now + duration_s if duration_s is not None else until
    assert ends_at is not None
    made = silences.new_silence(parsed, now, ends_at, comment, author, now)
    row: AlarmSilence = AlarmSilence.objects.create(
        id=made.id, matchers=[str(m) for m in made.matchers], starts_at=_utc(made.starts_at),
        ends_at=_utc(made.ends_at), author=made.author[:_AUTHOR_CHARS], comment=made.comment,
        created_at=_utc(made.created_at))
    log.info("silence %s added by %s: %s until %s", row.id, row.author,
             " ".join(row.matchers), silences.utc(made.ends_at))
    return row


def _ended_at(row: AlarmSilence) -> dt.datetime:
    ended: dt.datetime = row.ends_at if row.expired_at is None else min(row.ends_at,
                                                                          row.expired_at)
    return ended


def list_silences(now: float, include_ended: bool = True) -> list[AlarmSilence]:
    """Silences not yet ended (ending soonest first), then those ended within
    `silences.KEEP_ENDED_S` (most recently ended first)."""
    when = _utc(now)
    keep_from = _utc(now - silences.KEEP_ENDED_S)
    rows = list(AlarmSilence.objects.filter(ends_at__gt=keep_from).order_by("ends_at", "id"))
    running = [row for row in rows if _ended_at(row) > when]
    ended = [row for row in rows if keep_from < _ended_at(row) <= when]
    ended.sort(key=_ended_at, reverse=True)
    return running + ended if include_ended else running


def readable(rows: Iterable[AlarmSilence]) -> list[Silence]:
    """The rows as Silences, leaving out (with a warning) any that cannot be read: a hand
    edit in the admin must not break the page or the run, and an unreadable silence holds
    nothing, the safe way to be wrong."""
    found: list[Silence] = []
    for row in rows:
        try:
            found.append(to_silence(row))
        except ValueError as exc:
            log.warning("silence %s left out: %s", row.id, exc)
    return found


def expire_silence(silence_id: str, now: float, by: str) -> AlarmSilence:
    """End a silence now; LookupError if there is none, SilenceError if it has ended.

    One conditional UPDATE: of two staff expiring it at once, one expires it and the other
    is told it has ended, on SQLite (where a read-then-write transaction that lost the race
    would fail as "database is locked") as on PostgreSQL."""
    when = _utc(now)
    ident = silence_id.strip()
    running = Q(ends_at__gt=when) & (Q(expired_at__isnull=True) | Q(expired_at__gt=when))
    if not AlarmSilence.objects.filter(running, id=ident).update(expired_at=when):
        if not AlarmSilence.objects.filter(id=ident).exists():
            raise LookupError(f"no silence {_shown(silence_id)}")
        raise SilenceError(f"silence {ident} has already ended")
    log.info("silence %s expired by %s", ident, _one_line(by) or "unknown")
    row: AlarmSilence = AlarmSilence.objects.get(id=ident)
    return row


# Acknowledgements.


def find_alarm(name: str) -> Alarm:
    """An alarm by incident id, by target, or by key when that key has one open alarm.

    LookupError when nothing is called that; ValueError when a key names several."""
    name = name.strip()
    found: Optional[Alarm] = Alarm.objects.filter(incident=name).first()
    if found is None:
        found = Alarm.objects.filter(target=name, closed_at__isnull=True).first()
    if found is None:
        by_key = list(Alarm.objects.filter(key=name, closed_at__isnull=True)[:2])
        if len(by_key) > 1:
            raise ValueError(f"key {_shown(name)} has several open alarms: name one "
                             "by its incident or target")
        found = by_key[0] if by_key else None
    if found is None:
        raise LookupError(f"no open alarm or incident {_shown(name)}")
    return found


def _change_open(name: str, acknowledged: bool, **fields: Any) -> Alarm:
    """Set `fields` on the open alarm `name` if its acknowledgement is as `acknowledged`
    says; one conditional UPDATE, so of two staff at once one wins and the other is told
    why not (closed, or acknowledged by the winner), on SQLite as on PostgreSQL."""
    found = find_alarm(name)
    if Alarm.objects.filter(pk=found.pk, closed_at__isnull=True,
                            acknowledged_at__isnull=not acknowledged).update(**fields):
        done: Alarm = Alarm.objects.get(pk=found.pk)
        return done
    now_row: Alarm = Alarm.objects.get(pk=found.pk)
    if now_row.closed_at is not None:
        raise ValueError(f"alarm {now_row.target} (incident {now_row.incident}) is closed: "
                         "only an open alarm can be acknowledged")
    if now_row.acknowledged_at is not None:
        raise ValueError(f"alarm {now_row.target} is already acknowledged by "
                         f"{now_row.acknowledged_by}")
    raise ValueError(f"alarm {now_row.target} is not acknowledged")


def ack_comment(comment: str) -> str:
    """An acknowledgement's comment on one line; SilenceError (a ValueError, the same words
    as a silence's) when it is too long or holds control characters."""
    comment = _one_line(comment)
    if len(comment) > MAX_ACK_COMMENT_CHARS:
        raise SilenceError(f"the comment is longer than {MAX_ACK_COMMENT_CHARS} characters")
    if not comment.isprintable():
        raise SilenceError(silences.PRINTABLE_COMMENT)
    return comment


def acknowledge(alarm_key_or_id: str, *, author: str, comment: str, now: float) -> Alarm:
    """Mark an open alarm as taken care of ("I'm on it"); ValueError if it is closed or
    already acknowledged, LookupError if there is no such alarm."""
    comment = ack_comment(comment)
    author = _one_line(author)[:_AUTHOR_CHARS] or "unknown"
    alarm = _change_open(alarm_key_or_id, False, acknowledged_by=author,
                         acknowledged_at=_utc(now), ack_comment=comment)
    log.info("alarm %s (incident %s) acknowledged by %s", alarm.target, alarm.incident, author)
    return alarm


def unacknowledge(alarm_key_or_id: str, *, by: str, now: float) -> Alarm:
    """Take an acknowledgement back while the alarm is open (someone else should look);
    ValueError if it is closed or not acknowledged."""
    alarm = _change_open(alarm_key_or_id, True, acknowledged_by="", acknowledged_at=None,
                         ack_comment="")
    log.info("alarm %s (incident %s) acknowledgement withdrawn by %s at %s", alarm.target,
             alarm.incident, _one_line(by) or "unknown", silences.utc(now))
    return alarm
