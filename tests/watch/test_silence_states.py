"""`silence list`'s state words under a clock set back: a silence that starts later (made
before the clock stepped back) is pending, and once expired by hand it says so, never
pending again."""

from __future__ import annotations

from clusterwatch.notify.silences import new_silence, parse_matcher
from clusterwatch.watch.holds import MATCHER_KINDS
from clusterwatch.watch.silence_cli import silence_state

T = 1_800_000_000.0


def test_an_expired_silence_that_had_not_started_is_expired_not_pending() -> None:
    made = new_silence((parse_matcher("node:wn1*", MATCHER_KINDS),), T, T + 7200, "reboots",
                       "alice", T)
    back = T - 600  # the clock stepped back ten minutes after the silence was made
    assert silence_state(made, back) == "pending"
    expired = made.expire(back)
    assert not expired.active(back) and not expired.active(T + 60)
    assert silence_state(expired, back) == "expired"
    assert silence_state(expired, T + 60) == "expired"
