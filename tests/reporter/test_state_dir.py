"""Which default state directory a key gets on a shared home (reporter/state_dir.py): the
owner mark decides; an unmarked directory goes to the key its log positions name, or with no
position that could tell, to the original design's key; the whole-run tests are in
test_shared_home.py."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from clusterwatch.reporter import state_dir

ONE, TWO = "pandaharvester01", "pandaharvester02"
LOG = "panda-job_fetcher.log"


def shared(home: Path) -> Path:
    return home / state_dir.SHARED_NAME


def old_state(home: Path, head: bytes) -> None:
    """An unmarked directory holding one position in a log that starts with `head`."""
    shared(home).mkdir(parents=True)
    mark = {
        "offset": len(head),
        "dev": 1,
        "inode": 2,
        "fp": hashlib.sha256(head).hexdigest(),
        "fp_len": len(head),
    }
    (shared(home) / "state.json").write_text(json.dumps({"last_run": 1.0, "logs": {LOG: mark}}))


def log_dir(root: Path, content: bytes) -> str:
    root.mkdir(parents=True)
    (root / LOG).write_bytes(content)
    return str(root)


def test_a_new_home_gives_the_unsuffixed_directory_to_the_original_key_only(tmp_path: Path) -> None:
    logs = log_dir(tmp_path / "logs", b"")
    assert state_dir.choose(str(tmp_path), TWO, logs) == state_dir.suffixed(str(tmp_path), TWO)
    assert not shared(tmp_path).exists()
    assert state_dir.choose(str(tmp_path), ONE, logs) == str(shared(tmp_path))
    assert state_dir.choose(str(tmp_path), ONE, logs) == str(shared(tmp_path))  # marked now
    assert state_dir.read_owner(str(shared(tmp_path))) == ONE


def test_positions_decide_an_unmarked_directory(tmp_path: Path) -> None:
    head = b"2026-10-02 18:20:10,507 panda.log.job_fetcher: INFO " * 8  # a full fingerprint
    old_state(tmp_path, head)
    mine = log_dir(tmp_path / "two", head + b"more\n")
    theirs = log_dir(tmp_path / "one", b"x" * 400)
    assert state_dir.choose(str(tmp_path), ONE, theirs) == state_dir.suffixed(str(tmp_path), ONE)
    assert state_dir.choose(str(tmp_path), TWO, mine) == str(shared(tmp_path))
    assert state_dir.read_owner(str(shared(tmp_path))) == TWO


def test_a_rotated_generation_still_names_its_host(tmp_path: Path) -> None:
    head = b"y" * 300
    old_state(tmp_path, head)
    logs = log_dir(tmp_path / "two", b"a new log\n")
    (Path(logs) / (LOG + ".1")).write_bytes(head)
    assert (
        state_dir.positions_owner(
            {LOG: json.loads((shared(tmp_path) / "state.json").read_text())["logs"][LOG]}, logs
        )
        == state_dir.MINE
    )


def test_a_short_head_tells_nothing(tmp_path: Path) -> None:
    """A head under 256 bytes is shared by every host's log of that minute."""
    old_state(tmp_path, b"2026-10-02 18:2")
    logs = log_dir(tmp_path / "two", b"2026-10-02 18:2")
    assert state_dir.choose(str(tmp_path), TWO, logs) == state_dir.suffixed(str(tmp_path), TWO)
    assert state_dir.choose(str(tmp_path), ONE, logs) == str(shared(tmp_path))


def test_print_claims_nothing(tmp_path: Path) -> None:
    logs = log_dir(tmp_path / "logs", b"")
    assert state_dir.choose(str(tmp_path), ONE, logs, claim=False) == str(shared(tmp_path))
    assert not shared(tmp_path).exists()


def test_of_two_claims_one_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Both judged the directory theirs; the second finds the first one's mark in place."""
    logs = log_dir(tmp_path / "logs", b"")
    real_link = os.link

    def raced(source: str, target: str) -> None:
        real_link(source, target)  # the other host's mark lands first...
        monkeypatch.setattr(os, "link", real_link)
        (shared(tmp_path) / "owner").write_text(json.dumps({"key": TWO}))
        raise FileExistsError(target)

    monkeypatch.setattr(os, "link", raced)
    assert state_dir.choose(str(tmp_path), ONE, logs) == state_dir.suffixed(str(tmp_path), ONE)
    assert sorted(p.name for p in shared(tmp_path).iterdir()) == ["owner"]  # no temp left


@pytest.mark.parametrize("content", [b"", b"not json", b'{"key": ""}', b"[1]"])
def test_a_damaged_mark_is_nobody_s_to_take(tmp_path: Path, content: bytes) -> None:
    logs = log_dir(tmp_path / "logs", b"")
    shared(tmp_path).mkdir()
    (shared(tmp_path) / "owner").write_bytes(content)
    with pytest.raises(OSError, match="owner mark names no key"):
        state_dir.choose(str(tmp_path), ONE, logs)


def test_a_fifo_for_a_mark_does_not_hang(tmp_path: Path) -> None:
    logs = log_dir(tmp_path / "logs", b"")
    shared(tmp_path).mkdir()
    os.mkfifo(shared(tmp_path) / "owner")
    with pytest.raises(OSError, match="not a regular file"):
        state_dir.choose(str(tmp_path), ONE, logs)


def test_a_deeply_nested_mark_is_damaged_not_a_crash(tmp_path: Path) -> None:
    """4,000 brackets fit the 4 KiB a mark is read to and pass json's recursion limit."""
    logs = log_dir(tmp_path / "logs", b"")
    shared(tmp_path).mkdir()
    (shared(tmp_path) / "owner").write_bytes(b"[" * 4000)
    with pytest.raises(OSError, match="owner mark names no key"):
        state_dir.choose(str(tmp_path), ONE, logs)


def test_a_mark_linked_to_nothing_is_nobody_s_to_take(tmp_path: Path) -> None:
    """A dangling link in the mark's place is a mark that cannot be read, as a damaged one
    is: the owner is told, instead of silently starting afresh in its suffixed directory
    (and reporting its logs' lines again)."""
    logs = log_dir(tmp_path / "logs", b"")
    shared(tmp_path).mkdir()
    (shared(tmp_path) / "owner").symlink_to(tmp_path / "elsewhere")
    for key in (ONE, TWO):
        with pytest.raises(OSError, match="owner mark"):
            state_dir.choose(str(tmp_path), key, logs)


def test_a_deeply_nested_state_tells_nothing(tmp_path: Path) -> None:
    """An unmarked directory whose state.json nests past json's limit holds no position
    that could tell whose it is: it is the original key's, as with no state."""
    logs = log_dir(tmp_path / "logs", b"")
    shared(tmp_path).mkdir()
    (shared(tmp_path) / "state.json").write_text("[" * 100000)
    assert state_dir.choose(str(tmp_path), TWO, logs) == state_dir.suffixed(str(tmp_path), TWO)
    assert state_dir.choose(str(tmp_path), ONE, logs) == str(shared(tmp_path))
