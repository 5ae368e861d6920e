"""How scripts/test spreads the suite over pytest-xdist workers (`--dist loadgroup`).

Each test module is one group, run whole by one worker, so a module's fixtures start once
(as in a single process) and its tests keep their order. A test or module may name its own
group with `pytest.mark.xdist_group("NAME")` to run with others on the same worker:
`SERIAL` is the group of the few tests whose premise is a machine that does little else
(benchmark smoke runs), so that at least they never overlap each other.
"""

from __future__ import annotations

import pytest

SERIAL = "serial"


def group_by_module(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.pluginmanager.hasplugin("xdist"):
        return
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::", 1)[0]))
