from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from clusterwatch.monitor.usage.accounting.sacct_fields import (
    parse_duration,
    parse_req_mem,
    parse_size,
    parse_state,
    parse_time,
    parse_time_limit,
    parse_tres,
    tres_gpus,
)

GiB = 1024**3
MiB = 1024**2


@pytest.mark.parametrize(("text", "expected"), [
    ("", None), ("0", 0), ("1234", 1234), ("204800K", 204800 * 1024), ("1.5G", 3 * GiB // 2),
    ("2T", 2 * 1024 * GiB),
])
def test_it_reads_sizes_in_binary_units(text: str, expected: int | None) -> None:
    assert parse_size(text) == expected


@pytest.mark.parametrize(("text", "cpus", "nodes", "expected"), [
    ("4000M", 4, 1, 4000 * MiB),
    ("8G", 2, 1, 8 * GiB),
    ("4000", 1, 1, 4000 * MiB),  # a bare ReqMem is in MiB
    ("1000Mc", 4, 1, 4000 * MiB),  # Slurm < 21.08: per CPU
    ("1000Mn", 4, 3, 3000 * MiB),  # Slurm < 21.08: per node
    ("0n", 4, 1, None),
    ("", 4, 1, None),
])
def test_it_reads_memory_requests_of_every_slurm_version(
        text: str, cpus: int, nodes: int, expected: int | None) -> None:
    assert parse_req_mem(text, cpus, nodes) == expected


@pytest.mark.parametrize("text", ["8 G", "lots", "8Q", "-1M"])
def test_it_refuses_sizes_it_cannot_read(text: str) -> None:
    with pytest.raises(ValueError, match="not a"):
        parse_req_mem(text, 1, 1)
    with pytest.raises(ValueError, match="not a size"):
        parse_size(text)


def test_it_counts_gpus_once_when_tres_lists_plain_and_typed_counts() -> None:
    tres = parse_tres("billing=8,cpu=8,gres/gpu:a100=12,gres/gpu=12,mem=64G,node=1")
    assert tres["mem"] == "64G"
    assert tres_gpus(tres) == 12  # never 24, never split into characters


def test_it_adds_typed_gpu_counts_when_no_plain_count_is_listed() -> None:
    assert tres_gpus(parse_tres("gres/gpu:a100=2,gres/gpu:v100=1")) == 3
    assert tres_gpus(parse_tres("cpu=1,mem=1G")) == 0
    assert tres_gpus(parse_tres("")) == 0


@pytest.mark.parametrize(("text", "seconds"), [
    ("", None), ("00:00", 0), ("01:05", 65), ("02:03:04", 7384), ("1-02:03:04", 93784),
    ("12-00:00:00", 12 * 86400), ("00:01.250", 1.25), ("59:00.500", 3540.5),
])
def test_it_reads_durations(text: str, seconds: float | None) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["1:2:3:4", "abc", "1-", "-01:00"])
def test_it_refuses_malformed_durations(text: str) -> None:
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration(text)


@pytest.mark.parametrize(("text", "seconds"), [
    ("UNLIMITED", None), ("Partition_Limit", None), ("INVALID", None),
    ("02:00:00", 7200), ("7-00:00:00", 604800),
])
def test_it_reads_time_limits(text: str, seconds: int | None) -> None:
    assert parse_time_limit(text) == seconds


def test_it_reads_epoch_and_iso_times_and_knows_missing_ones() -> None:
    assert parse_time("1700000000") == datetime(2023, 11, 14, 22, 13, 20, tzinfo=timezone.utc)
    plus2 = timezone(timedelta(hours=2))
    assert parse_time("2023-11-15T00:13:20", plus2) == parse_time("1700000000")
    assert parse_time("2023-11-14T22:13:20+00:00") == parse_time("1700000000")
    for missing in ("Unknown", "None", ""):
        assert parse_time(missing) is None
    with pytest.raises(ValueError, match="not a time"):
        parse_time("yesterday")


@pytest.mark.parametrize(("text", "state"), [
    ("COMPLETED", ("COMPLETED", "")),
    ("CANCELLED by 1000", ("CANCELLED", "by 1000")),
    ("CANCELLED+", ("CANCELLED", "")),
    ("OUT_OF_MEMORY", ("OUT_OF_MEMORY", "")),
    ("running", ("RUNNING", "")),
])
def test_it_splits_the_state_from_its_reason(text: str, state: tuple[str, str]) -> None:
    assert parse_state(text) == state
