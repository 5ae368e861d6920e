"""Pure parsers for the contents of cgroup files (v1 and v2). Malformed text raises ValueError.

Every number the kernel writes in these files is an unsigned 64-bit integer (or a CPU
number). Anything else, a negative value or one of 400 digits, is not what the kernel wrote
but damage, and malformed: exported, it would be a counter going negative, or a value no
float holds, which fails the whole exposition.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Optional

U64_MAX = (1 << 64) - 1
# No kernel has more CPUs than this (NR_CPUS is at most 8192); a cpuset naming a higher one
# is damage, and a range up to it must not allocate a set of a billion numbers.
MAX_CPUS = 1 << 16
# cgroup v1 writes "no limit" as PAGE_COUNTER_MAX pages (9223372036854771712 with 4 KiB
# pages); v2 writes "max". No real limit comes near 2**62 bytes.
_UNLIMITED_FROM = 2**62


def check_u64(values: Sequence[int], text: str) -> None:
    """ValueError unless every value is an unsigned 64-bit integer (`text`: for the message)."""
    if values and (min(values) < 0 or max(values) > U64_MAX):
        raise ValueError(f"not unsigned 64-bit integers: {text[:80]!r}")


def parse_cpulist(text: str) -> tuple[int, ...]:
    """`0-1,3,5,10-13` -> (0, 1, 3, 5, 10, 11, 12, 13); an empty list -> ()."""
    cpus: set[int] = set()
    listed = 0  # with overlaps: the work, bounded like the result
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        first, dash, last = part.partition("-")
        low = int(first)
        high = int(last) if dash else low
        listed += high - low + 1
        if low < 0 or high < low or high >= MAX_CPUS or listed > MAX_CPUS:
            raise ValueError(f"bad CPU range {part!r}")
        cpus.update(range(low, high + 1))
    return tuple(sorted(cpus))


def parse_flat_keyed(text: str) -> dict[str, int]:
    """`key value` lines (memory.stat, cpu.stat, cpuacct.stat, memory.events) -> a dict."""
    fields = text.split()
    if len(fields) % 2:
        raise ValueError(f"not `key value` lines: {text[:80]!r}")
    values = list(map(int, fields[1::2]))
    check_u64(values, text)
    return dict(zip(fields[::2], values))


def parse_int(text: str) -> int:
    """A single unsigned 64-bit integer (cpuacct.usage, memory.current, memory.failcnt...)."""
    value = int(text.strip())
    if not 0 <= value <= U64_MAX:
        raise ValueError(f"not an unsigned 64-bit integer: {text[:80]!r}")
    return value


def parse_limit(text: str) -> Optional[int]:
    """A memory limit in bytes; `None` for unlimited (`max`, or v1's page-counter maximum)."""
    stripped = text.strip()
    if stripped == "max":
        return None
    value = parse_int(stripped)
    return None if value >= _UNLIMITED_FROM else value


def parse_percpu(text: str) -> tuple[int, ...]:
    """cpuacct.usage_percpu: nanoseconds per CPU, indexed by host CPU number."""
    values = tuple(map(int, text.split()))
    check_u64(values, text)
    return values


def parse_procs(text: str) -> list[int]:
    """cgroup.procs: one PID per line."""
    pids = list(map(int, text.split()))
    check_u64(pids, text)
    return pids


def parse_device_minors(text: str, major: int) -> tuple[int, ...]:
    """devices.list (v1): minors of the character devices of `major` the cgroup may use.

    `c 195:0 rwm` -> 0. A wildcard (`a *:* rwm`, `c 195:* rwm`) allows every device, which
    says nothing about assignment, so it yields ().
    """
    minors: list[int] = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 2:
            continue
        if fields[0] == "a":
            return ()
        if fields[0] != "c":
            continue
        dev_major, _, dev_minor = fields[1].partition(":")
        if dev_major != str(major):
            continue
        if dev_minor == "*":
            return ()
        minors.append(parse_int(dev_minor))
    return tuple(minors)
