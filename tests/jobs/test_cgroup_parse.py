"""Parsers of cgroup file contents, on fixture text and on this host's real cgroup v1 files."""

from __future__ import annotations

import os
from typing import Any

import pytest

from clusterwatch.jobs.cgroup_parse import (
    MAX_CPUS,
    U64_MAX,
    parse_cpulist,
    parse_device_minors,
    parse_flat_keyed,
    parse_int,
    parse_limit,
    parse_percpu,
    parse_procs,
)


@pytest.mark.parametrize(("text", "expected"), [
    ("0-1,3,5,10-13\n", (0, 1, 3, 5, 10, 11, 12, 13)),
    ("7", (7,)),
    ("\n", ()),
])
def test_it_parses_cpu_lists(text: str, expected: tuple[int, ...]) -> None:
    assert parse_cpulist(text) == expected


@pytest.mark.parametrize("text", [
    "3-1", "a", "1-", "-1", f"0-{MAX_CPUS}", f"{10**400}",
    ",".join([f"0-{MAX_CPUS // 2}"] * 3),  # overlapping ranges: bounded work too
])
def test_it_rejects_bad_cpu_lists(text: str) -> None:
    with pytest.raises(ValueError):
        parse_cpulist(text)


@pytest.mark.parametrize(("text", "expected"), [
    ("max\n", None), ("9223372036854771712\n", None), ("1073741824\n", 1073741824)])
def test_it_reads_unlimited_as_none(text: str, expected: int | None) -> None:
    assert parse_limit(text) == expected


@pytest.mark.parametrize("text", [
    "user 10\nsystem lots\n", "user -7\nsystem 3\n", f"user {U64_MAX + 1}\nsystem 3\n",
    f"oom_kill {10**400}\n",
])
def test_it_rejects_a_bad_flat_keyed_file(text: str) -> None:
    with pytest.raises(ValueError):
        parse_flat_keyed(text)


@pytest.mark.parametrize("parse", [parse_int, parse_limit, parse_percpu, parse_procs])
@pytest.mark.parametrize("text", ["-1\n", f"{U64_MAX + 1}\n", f"{10**400}\n"])
def test_it_takes_only_unsigned_64_bit_numbers(parse: Any, text: str) -> None:
    with pytest.raises(ValueError):
        parse(text)
    assert parse(f"{U64_MAX}\n") in (U64_MAX, None, (U64_MAX,), [U64_MAX])  # None: unlimited


def test_it_reads_nvidia_minors_and_ignores_wildcards() -> None:
    assert parse_device_minors("c 195:0 rwm\nc 195:3 rw\nc 10:200 rwm\n", 195) == (0, 3)
    assert parse_device_minors("a *:* rwm\n", 195) == ()
    assert parse_device_minors("c 195:* m\nc 195:1 rwm\n", 195) == ()


@pytest.mark.skipif(not os.path.exists("/sys/fs/cgroup/cpuacct/cpuacct.usage_percpu"),
                    reason="this host has no cgroup v1 cpuacct hierarchy")
def test_it_parses_this_hosts_real_cgroup_v1_files() -> None:
    def read(path: str) -> str:
        with open(path) as file:
            return file.read()

    percpu = parse_percpu(read("/sys/fs/cgroup/cpuacct/cpuacct.usage_percpu"))
    assert len(percpu) >= os.cpu_count()  # type: ignore[operator]
    ticks = parse_flat_keyed(read("/sys/fs/cgroup/cpuacct/cpuacct.stat"))
    assert set(ticks) == {"user", "system"}
    memory = parse_flat_keyed(read("/sys/fs/cgroup/memory/memory.stat"))
    assert {"total_rss", "total_cache", "total_shmem"} <= set(memory)
    assert parse_cpulist(read("/sys/fs/cgroup/cpuset/cpuset.cpus"))
