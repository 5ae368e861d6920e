"""`clusterwatch watch silence add|list|expire`: silences in the watch's state.

Each change takes the state lock the poll takes, so it waits for a running poll instead of
losing its write or the poll's, then reads, changes and saves the state atomically. Every
argument is checked before the lock is taken: a usage error stores nothing.
"""

from __future__ import annotations

import getpass
import json
import logging
import time
from collections.abc import Sequence
from typing import IO, Any, Optional

from clusterwatch.errors import ConfigError, UsageError
from clusterwatch.notify.silences import (
    Matcher,
    Silence,
    SilenceError,
    matches,
    new_silence,
    parse_duration,
    parse_matcher,
    parse_time,
    prune,
    utc,
)
from clusterwatch.watch import state
from clusterwatch.watch.config import WatchConfig
from clusterwatch.watch.holds import MATCHER_KINDS, target_facts
from clusterwatch.watch.inventory import (
    GPU_PREFIX,
    GPUS_FILE,
    NODE_PREFIX,
    NODES_FILE,
    read_inventory,
)

log = logging.getLogger(__name__)


def parse_request(
    matchers: Sequence[str], duration: Optional[str], until: Optional[str],
    comment: Optional[str], now: float,
) -> tuple[tuple[Matcher, ...], float]:
    """The matchers and the end of a silence asked for on the command line; UsageError."""
    if not matchers:
        raise UsageError("silence add needs at least one MATCHER, e.g. node:wn1* or "
                         "gpu:10.1.2.*:9100")
    if (duration is None) == (until is None):
        raise UsageError("silence add needs exactly one of --for DURATION and --until TIME")
    if comment is None or not comment.strip():
        raise UsageError("silence add needs a comment (--comment TEXT): say why")
    try:
        found = tuple(parse_matcher(text, MATCHER_KINDS) for text in matchers)
        ends = now + parse_duration(duration) if duration is not None else parse_time(
            str(until))
    except SilenceError as exc:
        raise UsageError(str(exc)) from None
    if ends <= now:
        raise UsageError(f"--until {str(until)[:40]!r} is not in the future: that silence "
                         "would already have ended")
    return found, ends


def add(config: WatchConfig, matchers: Sequence[str], duration: Optional[str],
        until: Optional[str], comment: Optional[str], author: Optional[str],
        out: IO[str]) -> bool:
    """Store a new silence; print a line about it and its id last. False: the state file was
    damaged (moved aside, what it held kept, the silence stored all the same)."""
    now = time.time()
    found, ends = parse_request(matchers, duration, until, comment, now)
    try:
        silence = new_silence(found, now, ends, str(comment), author or login_name(), now)
    except SilenceError as exc:
        raise UsageError(str(exc)) from None
    with state.locked(config.state_dir, config.lock_timeout_s):
        watch_state = state.load(config.state_dir,
                                 channel_names=[channel.name for channel in config.channels])
        watch_state.silences = [*prune(watch_state.silences, now), silence]
        state.save(config.state_dir, watch_state)
    out.write(f"silenced {describe(silence)}\n{silence.id}\n")
    covered = covered_targets(config, silence)
    if covered is not None and covered[0] == 0:
        # Stored all the same (the target may be added later), but a typo is likelier.
        log.warning("silence %s matches none of the %d expected targets (patterns match "
                    "whole names: node:wn1* but not node:wn1 for wn1.example.org)",
                    silence.id, covered[1])
    return watch_state.damage is None


def covered_targets(config: WatchConfig, silence: Silence) -> Optional[tuple[int, int]]:
    """(expected targets the silence covers, expected targets); None: no inventories."""
    try:
        nodes = read_inventory(config.config_dir / NODES_FILE)
        gpus = read_inventory(config.config_dir / GPUS_FILE)
    except ConfigError:
        return None
    names = frozenset(nodes)
    targets = [NODE_PREFIX + node for node in nodes] + [GPU_PREFIX + gpu for gpu in gpus]
    return sum(matches(silence.matchers, target_facts(target, names))
               for target in targets), len(targets)


def expire(config: WatchConfig, ident: str, out: IO[str]) -> bool:
    """End a silence now (an ended one is left as it is: expiring twice is no error)."""
    now = time.time()
    with state.locked(config.state_dir, config.lock_timeout_s):
        watch_state = state.load(config.state_dir,
                                 channel_names=[channel.name for channel in config.channels])
        silences = prune(watch_state.silences, now)
        index = next((i for i, s in enumerate(silences) if s.id == ident.strip()), None)
        if index is None:
            raise UsageError(f"no silence with id {ident.strip()[:40]!r} (see `clusterwatch "
                             "watch silence list`)")
        found = silences[index]
        if found.ended_at <= now:
            out.write(f"silence {found.id} had already ended at {utc(found.ended_at)}; "
                      "nothing changed\n")
            return watch_state.damage is None
        silences[index] = found.expire(now)
        watch_state.silences = silences
        state.save(config.state_dir, watch_state)
    out.write(f"expired silence {found.id} ({matcher_words(found)}); alerts it held go out "
              "at the next poll if their incidents are still open\n")
    return watch_state.damage is None


def silence_state(silence: Silence, now: float) -> str:
    """active; ended (at its planned end); expired (ended by hand before it)."""
    if silence.active(now):
        return "active"
    by_hand = silence.expired_at is not None and silence.expired_at < silence.ends_at
    if silence.starts_at > now and not by_hand:
        return "pending"  # `add` starts silences now: only a clock set back shows this
    return "expired" if by_hand else "ended"


def listing(silences: Sequence[Silence], now: float) -> list[dict[str, Any]]:
    """Active and recently ended silences, newest end first, as `list --json` prints them."""
    kept = sorted(prune(silences, now), key=lambda s: (-s.ended_at, s.id))
    return [{"id": s.id, "state": silence_state(s, now),
             "matchers": [str(m) for m in s.matchers], "from": s.starts_at,
             "until": s.ended_at, "planned_until": s.ends_at, "author": s.author,
             "comment": s.comment, "created_at": s.created_at, "expired_at": s.expired_at}
            for s in kept]


def print_list(silences: Sequence[Silence], out: IO[str], as_json: bool = False) -> None:
    rows = listing(silences, time.time())
    if as_json:
        json.dump(rows, out, indent=2)
        out.write("\n")
        return
    if not rows:
        out.write("no silences\n")
        return
    for row in rows:
        out.write(f"{row['id']}  {row['state']:<7}  {utc(row['from'])} to {utc(row['until'])}"
                  f"  {' '.join(row['matchers'])}  by {row['author']}: {row['comment']}\n")


def describe(silence: Silence) -> str:
    return (f"{matcher_words(silence)} from {utc(silence.starts_at)} until "
            f"{utc(silence.ends_at)} by {silence.author}: {silence.comment}")


def matcher_words(silence: Silence) -> str:
    return " ".join(str(m) for m in silence.matchers)


def login_name() -> str:
    try:
        return getpass.getuser()
    except (OSError, KeyError, ImportError):  # no LOGNAME and no passwd entry
        return "unknown"
