"""Silences and maintenance windows: which targets' alerts are held back, and until when.

Shared by the pool watch and the monitor's alarms, which store silences in their own state
and read windows from their own configuration; this module is pure (no I/O, no clock).

A silence or window names its targets by matchers, `KIND:PATTERN`, PATTERN a shell-style glob
(`node:wn1*`, `gpu:10.1.2.*:9100`, `queue:BNL_*`). Each engine describes a target as facts,
kind -> the target's values of that kind (a harvester serves several queues). Matchers of
one kind are alternatives; matchers of different kinds must all hold, as Alertmanager's
matchers do across labels, among the kinds the target has: a kind missing from its facts is
not about it (a pool-watch node has no `gpu`, so `node:wn12* gpu:10.1.12.*` holds both the
node and the GPU file), while a kind present with no value fails (a monitor alarm that is not
a disk alarm has `filesystem` empty, so `key:X filesystem:/data` holds X's disk alarm only).
A silence none of whose kinds the target has does not hold it.

Holding changes delivery only: the engines still observe a held target and open and close
its incident; they leave its alert out of the outbox while it is held and append it at the
first evaluation after the hold ends, if the incident is still open.
"""

from __future__ import annotations

import datetime as dt
import math
import re
import secrets
import time
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from fnmatch import fnmatchcase
from typing import Any, Optional

from clusterwatch.errors import ConfigError

Facts = Mapping[str, Collection[str]]

KEEP_ENDED_S = 7 * 86400  # an ended silence stays listed this long, for the record
MAX_SPAN_S = 366 * 86400  # a longer silence is a typo more often than a plan
MAX_COMMENT_CHARS = 500
MAX_PATTERN_CHARS = 300
MAX_DURATION_CHARS = 40  # "52w2d" is 5; longer is a paste, not a duration
PRINTABLE_COMMENT = "the comment must be printable text, without control characters"
_KIND = re.compile(r"[a-z][a-z_]{0,31}")
_DURATION = re.compile(r"(?:([0-9]+)w)?(?:([0-9]+)d)?(?:([0-9]+)h)?(?:([0-9]+)m)?(?:([0-9]+)s)?")
_UNIT_S = (7 * 86400, 86400, 3600, 60, 1)
_ID = re.compile(r"[0-9a-f]{12}")
WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


class SilenceError(ValueError):
    """Bad matcher, duration, time or silence: one line, a usage error on a command line."""


@dataclass(frozen=True)
class Matcher:
    kind: str
    pattern: str

    def matches(self, value: str) -> bool:
        return fnmatchcase(value, self.pattern)

    def __str__(self) -> str:
        return f"{self.kind}:{self.pattern}"


def parse_matcher(text: str, kinds: Collection[str]) -> Matcher:
    kind, sep, pattern = text.partition(":")
    choices = ", ".join(sorted(kinds))
    if not sep or not _KIND.fullmatch(kind):
        raise SilenceError(f"matcher {_shown(text)} is not KIND:PATTERN (KIND one of {choices}, "
                           "e.g. node:wn1*)")
    if kind not in kinds:
        raise SilenceError(f"matcher {_shown(text)}: unknown kind {kind!r} (one of {choices})")
    if not pattern:
        raise SilenceError(f"matcher {_shown(text)} has an empty pattern")
    if len(pattern) > MAX_PATTERN_CHARS or not pattern.isprintable() or pattern != pattern.strip():
        raise SilenceError(f"matcher {_shown(text)}: the pattern must be printable, without "
                           f"spaces around it, at most {MAX_PATTERN_CHARS} characters")
    return Matcher(kind, pattern)


def parse_duration(text: str) -> float:
    """`90m`, `2h`, `3d`, `1w`, `1h30m`, `45s`: seconds, positive and at most 366 days."""
    # A wall of digits is refused before int() would (past 4300 digits, with a ValueError).
    match = _DURATION.fullmatch(text.strip()) if len(text) <= MAX_DURATION_CHARS else None
    if not text.strip() or match is None:
        raise SilenceError(f"duration {_shown(text)} is not like 90m, 2h, 3d or 1h30m")
    seconds = sum(int(part) * unit for part, unit in zip(match.groups(), _UNIT_S) if part)
    if seconds <= 0:
        raise SilenceError(f"duration {_shown(text)} is not positive")
    if seconds > MAX_SPAN_S:
        raise SilenceError(f"duration {_shown(text)} is longer than 366 days")
    return float(seconds)


def parse_time(text: str) -> float:
    """ISO 8601 with a zone (`2026-12-10T08:00:00Z`, `2026-12-10 09:00+01:00`): epoch seconds."""
    value = text.strip()
    if value[-1:] in ("Z", "z"):
        value = value[:-1] + "+00:00"
    try:
        parsed = dt.datetime.fromisoformat(value)
    except ValueError:
        raise SilenceError(f"time {_shown(text)} is not ISO 8601 (e.g. "
                           "2026-12-10T08:00:00Z)") from None
    return _aware_epoch(parsed, f"time {_shown(text)}", SilenceError)


def matches(matchers: Sequence[Matcher], facts: Facts) -> bool:
    """Any matcher of each kind, every kind the target has; at least one such kind.

    Give every kind an engine knows for a target in `facts` (empty when it has no value),
    and leave out only the kinds that cannot be about this sort of target.
    """
    by_kind: dict[str, list[Matcher]] = {}
    for matcher in matchers:
        if matcher.kind in facts:
            by_kind.setdefault(matcher.kind, []).append(matcher)
    return bool(by_kind) and all(
        any(matcher.matches(value) for matcher in group for value in facts[kind])
        for kind, group in by_kind.items()
    )


@dataclass(frozen=True)
class Silence:
    id: str
    matchers: tuple[Matcher, ...]
    starts_at: float
    ends_at: float
    comment: str
    author: str
    created_at: float
    expired_at: Optional[float] = None  # when expired by hand

    @property
    def ended_at(self) -> float:
        return self.ends_at if self.expired_at is None else min(self.ends_at, self.expired_at)

    def active(self, now: float) -> bool:
        return self.starts_at <= now < self.ended_at

    def covers(self, facts: Facts, now: float) -> bool:
        return self.active(now) and matches(self.matchers, facts)

    def expire(self, now: float) -> Silence:
        if self.ended_at <= now:
            raise SilenceError(f"silence {self.id} has already ended")
        return replace(self, expired_at=now)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": self.id, "matchers": [str(m) for m in self.matchers],
            "starts_at": self.starts_at, "ends_at": self.ends_at, "comment": self.comment,
            "author": self.author, "created_at": self.created_at,
        }
        if self.expired_at is not None:
            data["expired_at"] = self.expired_at
        return data

    @classmethod
    def from_json(cls, data: Any) -> Silence:
        """Raises ValueError for anything `to_json` would not have written."""
        if not isinstance(data, dict):
            raise ValueError("a silence must be an object")
        ident = data.get("id")
        if not isinstance(ident, str) or not _ID.fullmatch(ident):
            raise ValueError("a silence's id must be 12 hex characters")
        raw = data.get("matchers")
        if not isinstance(raw, list) or not raw or not all(isinstance(m, str) for m in raw):
            raise ValueError("a silence's matchers must be a list of strings")
        found = tuple(_any_matcher(text) for text in raw)
        times = [_number(data.get(name), name) for name in ("starts_at", "ends_at", "created_at")]
        expired = data.get("expired_at")
        comment, author = data.get("comment"), data.get("author")
        if not isinstance(comment, str) or not isinstance(author, str):
            raise ValueError("a silence's comment and author must be strings")
        return cls(ident, found, times[0], times[1], comment, author, times[2],
                   None if expired is None else _number(expired, "expired_at"))


def new_silence(
    matchers: Sequence[Matcher], starts_at: float, ends_at: float, comment: str, author: str,
    now: float,
) -> Silence:
    if not matchers:
        raise SilenceError("a silence needs at least one matcher")
    comment = " ".join(comment.split())
    if not comment:
        raise SilenceError("a silence needs a comment (--comment): say why")
    if len(comment) > MAX_COMMENT_CHARS:
        raise SilenceError(f"the comment is longer than {MAX_COMMENT_CHARS} characters")
    if not comment.isprintable():
        # A NUL cannot be stored by PostgreSQL, and a terminal escape would reach every
        # operator who lists the silences.
        raise SilenceError(PRINTABLE_COMMENT)
    if ends_at <= starts_at:
        raise SilenceError("a silence must end after it starts")
    if ends_at <= now:
        raise SilenceError("that silence would already have ended")
    if ends_at - starts_at > MAX_SPAN_S:
        raise SilenceError("a silence may last at most 366 days")
    author = "".join(c for c in " ".join(author.split()) if c.isprintable()) or "unknown"
    return Silence(secrets.token_hex(6), tuple(matchers), starts_at, ends_at, comment,
                   author[:100], now)


def prune(silences: Iterable[Silence], now: float) -> list[Silence]:
    return [s for s in silences if s.ended_at > now - KEEP_ENDED_S]


@dataclass(frozen=True)
class Window:
    """A maintenance window from configuration: one-off (start, end) or weekly."""

    comment: str
    matchers: tuple[Matcher, ...]
    start: Optional[float] = None
    end: Optional[float] = None
    weekday: Optional[int] = None  # 0 = Monday
    at_minute: Optional[int] = None  # minutes after local midnight
    duration_s: Optional[float] = None
    zone: Optional[str] = None  # IANA name; UTC when None

    def open_at(self, now: float) -> Optional[tuple[float, float]]:
        if self.start is not None and self.end is not None:
            return (self.start, self.end) if self.start <= now < self.end else None
        assert self.weekday is not None and self.at_minute is not None
        assert self.duration_s is not None
        zone = _zone(self.zone or "UTC")
        today = dt.datetime.fromtimestamp(now, zone).date()
        # An occurrence that began up to `duration` ago may still be open.
        for back in range(math.ceil(self.duration_s / 86400) + 1):
            day = today - dt.timedelta(days=back)
            if day.weekday() != self.weekday:
                continue
            local = dt.datetime.combine(day, dt.time(self.at_minute // 60, self.at_minute % 60),
                                        zone)
            start = local.timestamp()
            if start <= now < start + self.duration_s:
                return start, start + self.duration_s
        return None

    def covers(self, facts: Facts, now: float) -> bool:
        return self.open_at(now) is not None and matches(self.matchers, facts)

    def describe(self) -> str:
        """`Tuesday reboots (node:wn2*): weekly, tue 06:00 Europe/Zurich for 2h`."""
        which = " ".join(str(m) for m in self.matchers)
        if self.start is not None and self.end is not None:
            return f"{self.comment} ({which}): {utc(self.start)} to {utc(self.end)}"
        assert self.weekday is not None and self.at_minute is not None
        assert self.duration_s is not None
        return (f"{self.comment} ({which}): weekly, {WEEKDAYS[self.weekday]} "
                f"{self.at_minute // 60:02d}:{self.at_minute % 60:02d} {self.zone or 'UTC'} "
                f"for {span(self.duration_s)}")


def parse_windows(
    raw: Any, kinds: Collection[str], where: str = "maintenance"
) -> tuple[Window, ...]:
    """The `[[maintenance]]` tables of a parsed TOML document; ConfigError when wrong.

    One-off: `comment`, `matchers`, `start`, `end` (TOML datetimes with an offset, or ISO
    strings with a zone). Weekly: `comment`, `matchers`, `day` (mon ... sun), `time` (HH:MM,
    local to `zone`), `duration` (2h, 90m ...) and optional `zone` (IANA, default UTC).
    """
    if not isinstance(raw, list):
        raise ConfigError(f"{where} must be an array of tables ([[{where}]])")
    windows: list[Window] = []
    for index, item in enumerate(raw):
        place = f"{where}[{index}]"
        if not isinstance(item, dict):
            raise ConfigError(f"{place} must be a table")
        unknown = sorted(set(item) - {"comment", "matchers", "start", "end", "day", "time",
                                      "duration", "zone"})
        if unknown:
            raise ConfigError(f"{place}: unknown key {unknown[0]!r}")
        comment = item.get("comment")
        if not isinstance(comment, str) or not comment.strip():
            raise ConfigError(f"{place} needs a comment (say what the maintenance is)")
        windows.append(_window(item, " ".join(comment.split()), kinds, place))
    return tuple(windows)


def _window(item: dict[str, Any], comment: str, kinds: Collection[str], place: str) -> Window:
    texts = item.get("matchers")
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
        raise ConfigError(f"{place}.matchers must be a non-empty list of strings like "
                          "\"node:wn1*\"")
    try:
        found = tuple(parse_matcher(text, kinds) for text in texts)
    except SilenceError as exc:
        raise ConfigError(f"{place}: {exc}") from None
    one_off = {"start", "end"} & set(item)
    weekly = {"day", "time", "duration", "zone"} & set(item)
    if one_off and weekly:
        raise ConfigError(f"{place}: either start and end (one-off) or day, time and duration "
                          "(weekly), not both")
    if one_off:
        start = _config_time(item.get("start"), f"{place}.start")
        end = _config_time(item.get("end"), f"{place}.end")
        if end <= start:
            raise ConfigError(f"{place}: end must be after start")
        return Window(comment, found, start=start, end=end)
    if not {"day", "time", "duration"} <= set(item):
        raise ConfigError(f"{place} needs start and end, or day, time and duration")
    day = item["day"]
    if not isinstance(day, str) or day.strip().lower()[:3] not in WEEKDAYS or (
        len(day.strip()) > 3 and not _full_weekday(day.strip().lower())
    ):
        raise ConfigError(f"{place}.day must be a weekday name (mon ... sun)")
    zone_name = item.get("zone", "UTC")
    if not isinstance(zone_name, str):
        raise ConfigError(f"{place}.zone must be a zone name like Europe/Zurich")
    try:
        _zone(zone_name)
    except ValueError:
        raise ConfigError(f"{place}.zone {zone_name!r} is not a known time zone") from None
    duration = item["duration"]
    try:
        seconds = parse_duration(duration) if isinstance(duration, str) else -1.0
    except SilenceError as exc:
        raise ConfigError(f"{place}.duration: {exc}") from None
    if seconds <= 0:
        raise ConfigError(f"{place}.duration must be a string like \"2h\" or \"90m\"")
    if seconds > 7 * 86400:
        raise ConfigError(f"{place}.duration: a weekly window may last at most 7 days")
    return Window(comment, found, weekday=WEEKDAYS.index(day.strip().lower()[:3]),
                  at_minute=_minute_of_day(item["time"], f"{place}.time"),
                  duration_s=seconds, zone=zone_name)


@dataclass(frozen=True)
class Hold:
    """Why a target's delivery is held now: a silence or an open maintenance window."""

    by: str  # "silence 3f2a9c0d1e4b" or "maintenance window 'Tuesday reboots'"
    author: str
    comment: str
    until: float

    def describe(self) -> str:
        who = f"silenced by {self.author}" if self.by.startswith("silence") else "in maintenance"
        return f"{who} until {utc(self.until)} ({self.by}: {self.comment})"


def hold_for(
    facts: Facts, now: float, silences: Iterable[Silence], windows: Iterable[Window] = ()
) -> Optional[Hold]:
    """The covering silence or open window that ends last; None when nothing holds."""
    best: Optional[Hold] = None
    for silence in silences:
        if silence.covers(facts, now) and (best is None or silence.ended_at > best.until):
            best = Hold(f"silence {silence.id}", silence.author, silence.comment,
                        silence.ended_at)
    for window in windows:
        opened = window.open_at(now)
        if opened is not None and matches(window.matchers, facts) and (
            best is None or opened[1] > best.until
        ):
            best = Hold(f"maintenance window {window.comment!r}", "maintenance",
                        window.comment, opened[1])
    return best


def utc(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%MZ", time.gmtime(t))


def span(seconds: float) -> str:
    """`2h`, `1h30m`, `3d`: the duration words parse_duration reads."""
    left, words = int(seconds), []
    for unit, name in zip(_UNIT_S[1:], "dhms"):
        if left >= unit:
            words.append(f"{left // unit}{name}")
            left %= unit
    return "".join(words) or "0s"


def _any_matcher(text: str) -> Matcher:
    kind, sep, pattern = text.partition(":")
    if not sep or not _KIND.fullmatch(kind) or not pattern:
        raise ValueError(f"not a matcher: {_shown(text)}")
    return Matcher(kind, pattern)


def _number(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"a silence's {name} must be a number")
    return float(value)


def _aware_epoch(value: dt.datetime, what: str, error: type[Exception]) -> float:
    if value.tzinfo is None or value.utcoffset() is None:
        raise error(f"{what} has no zone: add Z or an offset like +01:00")
    try:
        return value.timestamp()
    except (OverflowError, OSError, ValueError):
        raise error(f"{what} is out of range") from None


def _config_time(value: Any, what: str) -> float:
    if isinstance(value, str):
        try:
            return parse_time(value)
        except SilenceError as exc:
            raise ConfigError(f"{what}: {exc}") from None
    if isinstance(value, dt.datetime):
        return _aware_epoch(value, what, ConfigError)
    raise ConfigError(f"{what} must be a date and time with a zone, e.g. 2026-12-10T08:00:00Z")


def _minute_of_day(value: Any, what: str) -> int:
    if isinstance(value, dt.time):
        if value.second or value.microsecond:
            raise ConfigError(f"{what} must be whole minutes")
        return value.hour * 60 + value.minute
    match = re.fullmatch(r"([01]?[0-9]|2[0-3]):([0-5][0-9])", value.strip()) if isinstance(
        value, str) else None
    if match is None:
        raise ConfigError(f"{what} must be a time of day like \"06:00\"")
    return int(match.group(1)) * 60 + int(match.group(2))


def _full_weekday(text: str) -> bool:
    return text in ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


def _zone(name: str) -> dt.tzinfo:
    """The IANA zone; ValueError when unknown."""
    if name == "UTC":
        return dt.timezone.utc
    import zoneinfo

    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        raise ValueError(name) from None


def _shown(text: str) -> str:
    """A bounded repr for messages: a pasted wall of text stays one short line."""
    return repr(text if len(text) <= 80 else text[:77] + "...")
