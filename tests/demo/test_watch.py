"""`clusterwatch watch demo`: the exercise, then the watch against real node_exporter and
Prometheus on loopback, so that the demonstration cannot rot."""

from __future__ import annotations

import io
from typing import Callable

import pytest

from clusterwatch.demo.watch import run_demo

pytestmark = pytest.mark.integration


def test_it_alerts_and_recovers_through_a_fake_slack(
    need_binary: Callable[[str], str],
) -> None:
    need_binary("prometheus")
    need_binary("prometheus-node-exporter")
    printed = io.StringIO()
    assert run_demo(printed) == 0
    out = printed.getvalue()
    assert "Part 1: the decision rules on simulated polls" in out
    assert "poll (file 20 minutes old): ALERT (stale); incident open" in out
    assert "poll (fresh write): RECOVER (fresh)" in out
    slack = [line for line in out.splitlines() if "Slack received:" in line]
    assert len(slack) == 2 and "ALERT" in slack[0] and "RECOVER" in slack[1]
    assert "open incidents: 0" in out
