"""A log's saved position: typed in the reporter, its JSON form in the state file unchanged,
so a state file written by the previous version loads and the reading goes on from it."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from clusterwatch.reporter.log_position import (
    FileMark,
    LogPosition,
    is_position,
    position_json,
)
from clusterwatch.reporter.tail import read_new

# `logs` entries exactly as the reporter before the typed position wrote them (state.json).
WRITTEN_BEFORE = {
    "panda-job_fetcher.log": {
        "dev": 64769, "fp": "9f" * 32, "fp_len": 256, "inode": 1835011,
        "known": ["0a1b2c3d4e5f6071", "inode:64769:1835020"], "mtime_ns": 1790000000123456789,
        "offset": 52311, "size": 52400,
    },
    "panda-submitter.log": {"offset": 0, "known": []},  # absent at the previous run
    "panda-propagator.log": {  # saved before generations were known (no `known`)
        "dev": 64769, "fp": "", "fp_len": 0, "inode": 1835012, "offset": 0,
        "mtime_ns": 1790000000000000000, "size": 0,
    },
    "panda-communicator.log": {  # from before mtime and size were kept
        "dev": 64769, "fp": "ab" * 32, "fp_len": 80, "inode": 1835013, "offset": 80,
    },
    "panda-worker_adjuster.log": {},  # nothing to save
}


@pytest.mark.parametrize("name", sorted(WRITTEN_BEFORE))
def test_it_writes_back_exactly_what_the_previous_version_wrote(name: str) -> None:
    entry = WRITTEN_BEFORE[name]
    assert is_position(entry)
    assert position_json(LogPosition.from_json(entry)) == entry


def test_it_types_each_part_of_the_file_being_read() -> None:
    position = LogPosition.from_json(WRITTEN_BEFORE["panda-job_fetcher.log"])
    assert position is not None
    assert position.offset == 52311
    assert position.known == ["0a1b2c3d4e5f6071", "inode:64769:1835020"]
    assert position.file == FileMark(dev=64769, inode=1835011, fp="9f" * 32, fp_len=256,
                                     mtime_ns=1790000000123456789, size=52400)
    absent = LogPosition.from_json(WRITTEN_BEFORE["panda-submitter.log"])
    assert absent is not None and absent.file is None and absent.known == []


@pytest.mark.parametrize("entry", [
    5, None, ["not", "a", "dict"], {"offset": -1}, {"offset": "7"}, {"offset": True},
    {"offset": 5, "inode": 3}, {"offset": 5, "dev": 1, "inode": 2, "fp": 7, "fp_len": 5},
    {"offset": 5, "dev": 1, "inode": 2, "fp": "", "fp_len": 0},
])
def test_it_takes_a_damaged_entry_for_none(entry: Any) -> None:
    assert LogPosition.from_json(entry) is None
    assert not is_position(entry)


def test_it_goes_on_from_a_state_file_the_previous_version_wrote(tmp_path: Path) -> None:
    log = tmp_path / "panda-job_fetcher.log"
    counted = b"".join(b"2026-10-02 18:20:%02d counted before the upgrade\n" % n
                       for n in range(10))
    log.write_bytes(counted)
    st = log.stat()
    head = counted[:256]
    state = json.loads(json.dumps({"logs": {log.name: {  # as state.json held it
        "dev": st.st_dev, "inode": st.st_ino, "offset": len(counted),
        "fp": hashlib.sha256(head).hexdigest(), "fp_len": len(head),
        "mtime_ns": st.st_mtime_ns, "size": st.st_size, "known": [],
    }}}, sort_keys=True))
    with log.open("ab") as f:
        f.write(b"2026-10-02 18:25:00 new since\n")

    chunks, position, info = read_new(str(log), LogPosition.from_json(state["logs"][log.name]))

    assert chunks == [b"2026-10-02 18:25:00 new since\n"]
    assert info == {"bytes": 30, "rotated": False, "truncated": False}
    saved = position_json(position)
    assert sorted(saved) == sorted(state["logs"][log.name])  # the same keys, same types
    assert saved["offset"] == log.stat().st_size
    assert {key: type(value) for key, value in saved.items()} == {
        key: type(value) for key, value in state["logs"][log.name].items()}
