"""One poll a minute on loopback with a condor_status that prints LastHeardFrom: a node that
loses power alerts 15 minutes after it was last heard; `[thresholds] node_silence_s`."""

from __future__ import annotations

from typing import Any, Optional

import pytest

from clusterwatch.errors import ConfigError

from .support import T0, Pool

W1, W2 = "worker1.example.org", "worker2.example.org"


def lose_power(pool: Pool, lifetime_s: float = 900, heard: bool = True) -> Any:
    """worker2's last update reaches the collector at T0; its ads live `lifetime_s` more.
    worker1's two slots were heard 10 and 130 s before each poll: the collector's clock, as
    the rest of a pool whose nodes update at spread offsets shows it."""
    def setup(now: float) -> None:
        pool.all_healthy(now)
        lines = [f"{W1} {int(now) - 130}", f"{W1} {int(now) - 10}"]
        if now - T0 < lifetime_s:
            lines.append(f"{W2} {int(min(now, T0))}" if heard else W2)
        pool.set_machines(lines if heard else [line.split()[0] for line in lines])
    return setup


def minutes(pool: Pool, start: int, stop: int, setup: Any
            ) -> list[tuple[int, str, str, str]]:
    decisions = []
    for m in range(start, stop):
        now = T0 + m * 60
        setup(now)
        decisions += [(m, d.action.value, d.target, d.status.value)
                      for d in pool.poll(now).decisions]
    return decisions


def test_a_node_that_loses_power_alerts_15_minutes_after_it_was_last_heard(
        pool: Pool) -> None:
    """Last heard at 14:00:00 as the collector's clock puts it, which the answer shows 10 s
    behind the poll's: 14:00:10 on the watch's clock, so the alert is the poll at 14:16."""
    assert minutes(pool, -3, 31, lose_power(pool)) == [(16, "alert", f"node:{W2}", "missing")]
    text = pool.slack.requests[0].json()["text"]
    assert "2026-10-02 14:16:00Z ALERT node:worker2.example.org (missing)" in text


def test_without_last_heard_it_alerts_as_before(pool: Pool) -> None:
    assert minutes(pool, -3, 31, lose_power(pool, heard=False)) == [
        (30, "alert", f"node:{W2}", "missing")]


def test_with_a_longer_ad_lifetime_it_alerts_on_the_silence(pool: Pool) -> None:
    assert minutes(pool, -3, 17, lose_power(pool, lifetime_s=3600)) == [
        (16, "alert", f"node:{W2}", "silent")]
    assert "ALERT node:worker2.example.org (silent)" in pool.slack.requests[0].json()["text"]


@pytest.mark.parametrize(("silence", "alert_at"), [(None, 16), (300, 16), (1200, 21)])
def test_it_takes_the_silence_from_watch_toml(pool: Pool, silence: Optional[int],
                                              alert_at: int) -> None:
    if silence is not None:
        pool.write_toml(f"[thresholds]\nnode_silence_s = {silence}\n")
    assert pool.config().thresholds.node_silence_s == (silence or 600)
    assert minutes(pool, -3, 25, lose_power(pool, lifetime_s=3600)) == [
        (alert_at, "alert", f"node:{W2}", "silent")]


@pytest.mark.parametrize("value", ["0", "-1", "inf", '"600"', "true"])
def test_it_refuses_a_silence_that_is_no_duration(pool: Pool, value: str) -> None:
    pool.write_toml(f"[thresholds]\nnode_silence_s = {value}\n")
    with pytest.raises(ConfigError, match="node_silence_s"):
        pool.config()
