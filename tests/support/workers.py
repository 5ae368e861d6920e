"""How scripts/test spreads the suite over pytest-xdist workers (`--dist loadgroup`).

Each test module is one group, run whole by one worker, so a module's fixtures start once
(as in a single process) and its tests keep their order. Two groups gather several modules:

- `slurm`: every module with a test that reaches a real Slurm cluster (`SlurmCluster`). They
  run one after another on one worker, so that clusters never compete for the node's cgroups
  and CPU-time figures, and the clusters the harness shares per session start once. Being
  the longest group, it is put first, so a worker starts on it at once.
- `serial`: the benchmark smoke runs (modules named `test_bench_*`), whose figures mean most
  on a machine that does little else: they never overlap each other. A test with that
  premise elsewhere joins with `pytest.mark.xdist_group("serial")`.

A test or module may name another group with `pytest.mark.xdist_group("NAME")`.
"""

from __future__ import annotations

import pytest

from tests.support.tiers import REACHED

SERIAL = "serial"
SLURM = "slurm"


def group_by_module(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.pluginmanager.hasplugin("xdist"):
        return
    slurm_modules = {_module(item) for item in items
                     if "SlurmCluster" in item.stash[REACHED]}
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            module = _module(item)
            if module in slurm_modules:
                group = SLURM
            elif module.rsplit("/", 1)[-1].startswith("test_bench_"):
                group = SERIAL
            else:
                group = module
            item.add_marker(pytest.mark.xdist_group(group))


def longest_first(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The Slurm group first, so a worker starts on it at once; each module's tests together.

    pytest-django sorts the tests by the kind of database they use, which splits a module
    whose tests differ: in a group of several modules that would start its module fixtures
    again. Within a module its order is kept. Every worker sorts alike (pytest-xdist checks
    that they collected the same order).
    """
    if not config.pluginmanager.hasplugin("xdist"):
        return
    first_seen: dict[str, int] = {}
    for index, item in enumerate(items):
        first_seen.setdefault(_module(item), index)

    def key(item: pytest.Item) -> tuple[bool, int]:
        group = item.get_closest_marker("xdist_group")
        return (group is None or group.args[:1] != (SLURM,), first_seen[_module(item)])

    items.sort(key=key)


def _module(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]
