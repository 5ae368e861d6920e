"""A poll pauses the cyclic garbage collector and gives it back as it found it."""

from __future__ import annotations

import gc

import pytest

from clusterwatch.watch import poll

from .support import T0, Pool


@pytest.mark.parametrize("enabled", [True, False])
def test_it_leaves_the_garbage_collector_as_it_found_it(pool: Pool, enabled: bool) -> None:
    pool.all_healthy(T0)
    was_enabled = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        pool.poll(T0)
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was_enabled else gc.disable)()


def test_it_pauses_the_garbage_collector_while_it_polls(pool: Pool, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    seen: list[bool] = []
    evaluate = poll.evaluate

    def watching(*args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(gc.isenabled())
        return evaluate(*args, **kwargs)

    monkeypatch.setattr(poll, "evaluate", watching)
    pool.all_healthy(T0)
    assert gc.isenabled()
    pool.poll(T0)
    assert seen == [False] and gc.isenabled()
