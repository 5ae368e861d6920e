import gzip
import os
import random
import shutil
from pathlib import Path
from typing import Any, Optional

import pytest

from clusterwatch.reporter.log_position import LogPosition, position_json
from clusterwatch.reporter.tail import FINGERPRINT_BYTES, read_new

Saved = Optional[dict[str, Any]]


def append(path: Path, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)


def line(n: int, width: int = 80) -> bytes:
    text = f"2026-10-02 18:20:{n % 60:02d},{n % 1000:03d} panda.log.job_fetcher: INFO     line {n} "
    return (text + "x" * max(0, width - len(text))).encode() + b"\n"


def gzip_file(src: Path, dst: Path) -> None:
    with open(src, "rb") as fin, gzip.open(dst, "wb") as fout:
        shutil.copyfileobj(fin, fout)
    src.unlink()


def read_json(path: Path, saved: Any, **kw: Any) -> tuple[list[bytes], dict[str, Any],
                                                           dict[str, Any]]:
    """read_new over positions in their state-file form, as the record's assembly uses it."""
    chunks, new_saved, info = read_new(str(path), LogPosition.from_json(saved), **kw)
    return chunks, position_json(new_saved), info


def run(path: Path, saved: Saved, **kw: Any) -> tuple[bytes, dict[str, Any], dict[str, Any]]:
    chunks, new_saved, info = read_json(path, saved, **kw)
    for chunk in chunks:
        assert chunk.endswith(b"\n")
    return b"".join(chunks), new_saved, info


@pytest.fixture()
def log(tmp_path: Path) -> Path:
    path = tmp_path / "panda-job_fetcher.log"
    append(path, line(0) + line(1))
    return path


def test_it_only_sets_the_position_on_the_first_run(log: Path) -> None:
    data, saved, info = run(log, None)
    assert data == b""
    assert info == {"bytes": 0, "rotated": False, "truncated": False, "first_run": True}
    assert saved["offset"] == log.stat().st_size
    assert saved["inode"] == log.stat().st_ino
    assert run(log, {})[2]["first_run"] is True


def test_it_reads_appended_lines_and_leaves_a_partial_line_for_the_next_run(log: Path) -> None:
    _, saved, _ = run(log, None)
    append(log, line(2) + b"2026-10-02 partial")
    data, saved, info = run(log, saved)
    assert data == line(2)
    assert info == {"bytes": len(line(2)), "rotated": False, "truncated": False}
    append(log, b" rest\n")
    data, saved, info = run(log, saved)
    assert data == b"2026-10-02 partial rest\n"
    assert run(log, saved)[0] == b""


def test_it_starts_after_the_last_complete_line_on_the_first_run(log: Path) -> None:
    append(log, b"begun before the first run")
    _, saved, _ = run(log, None)
    append(log, b", finished after\n")
    assert run(log, saved)[0] == b"begun before the first run, finished after\n"


def test_it_finishes_a_renamed_file_before_reading_the_new_one(log: Path) -> None:
    _, saved, _ = run(log, None)
    append(log, line(2))
    log.rename(log.with_name(log.name + ".1"))
    append(log, line(3))
    data, saved, info = run(log, saved)
    assert data == line(2) + line(3)
    assert info == {"bytes": len(line(2) + line(3)), "rotated": True, "truncated": False,
                    "rotated_files": 1}
    append(log, line(4))
    data, new_saved, info = run(log, saved)
    assert data == line(4)
    assert info == {"bytes": len(line(4)), "rotated": False, "truncated": False}
    assert new_saved["inode"] == saved["inode"] == log.stat().st_ino
    assert new_saved["offset"] == saved["offset"] + len(line(4)) == log.stat().st_size


def test_it_finds_a_compressed_rotated_file_by_its_first_bytes(log: Path) -> None:
    _, saved, _ = run(log, None)
    append(log, line(2))
    rotated = log.with_name(log.name + ".1")
    log.rename(rotated)
    gzip_file(rotated, log.with_name(log.name + ".1.gz"))
    append(log, line(3))
    data, _, info = run(log, saved)
    assert data == line(2) + line(3)
    assert info["rotated"] is True
    assert "error" not in info


@pytest.mark.parametrize("days", [1, 2])
def test_it_finds_a_dateext_rotated_file_among_older_ones(log: Path, days: int) -> None:
    """... and reads every day rotated after it (the last with delaycompress: still plain)."""
    older = log.with_name(log.name + "-20261001")
    older.write_bytes(b"an older day's log\n" * 5)
    gzip_file(older, log.with_name(log.name + "-20261001.gz"))
    _, saved, _ = run(log, None)
    append(log, line(2))
    for day in range(2, 2 + days):
        dated = log.with_name(log.name + f"-2026100{day}")
        log.rename(dated)
        if day < 1 + days:
            gzip_file(dated, log.with_name(dated.name + ".gz"))
        append(log, line(day + 1))
    data, _, info = run(log, saved)
    assert data == b"".join(line(n) for n in range(2, 3 + days))
    assert info["rotated_files"] == days and "error" not in info


def test_it_reads_the_copy_after_a_copytruncate(log: Path) -> None:
    _, saved, _ = run(log, None)
    append(log, line(2))
    shutil.copyfile(log, log.with_name(log.name + ".1"))
    os.truncate(log, 0)
    append(log, line(3))
    data, _, info = run(log, saved)
    assert data == line(2) + line(3)
    assert info["rotated"] is True


def test_it_detects_a_copytruncate_after_which_the_log_grew_past_the_old_offset(
    log: Path,
) -> None:
    _, saved, _ = run(log, None)
    shutil.copyfile(log, log.with_name(log.name + ".1"))
    os.truncate(log, 0)
    new = b"".join(line(n) for n in range(10, 20))
    append(log, new)
    assert log.stat().st_size > saved["offset"]
    data, _, info = run(log, saved)
    assert data == new
    assert info["rotated"] is True


def test_it_treats_a_reused_inode_as_rotation(log: Path) -> None:
    _, saved, _ = run(log, None)
    append(log, line(2))
    rotated = log.with_name(log.name + ".1")
    log.rename(rotated)
    gzip_file(rotated, log.with_name(log.name + ".1.gz"))
    append(log, line(3))
    # The filesystem gave the new log the inode the old one had.
    reused = dict(saved, dev=log.stat().st_dev, inode=log.stat().st_ino)
    data, _, info = run(log, reused)
    assert data == line(2) + line(3)
    assert info["rotated"] is True


def test_it_reports_lost_lines_when_the_rotated_file_is_gone(log: Path) -> None:
    _, saved, _ = run(log, None)
    append(log, line(2))
    log.unlink()
    append(log, line(3))
    data, new_saved, info = run(log, saved)
    assert data == line(3)
    assert info["rotated"] is True
    assert info["error"] == (
        f"rotated file not found: lines after byte {saved['offset']} of the previous file are "
        "lost (how many is unknown: the file is gone)"
    )
    assert info["lost_bytes"] is None
    assert new_saved["offset"] == len(line(3))


def test_it_does_not_report_lost_lines_of_a_log_that_was_empty(tmp_path: Path) -> None:
    path = tmp_path / "panda-x.log"
    path.touch()
    _, saved, _ = run(path, None)
    path.unlink()
    append(path, line(1))
    data, _, info = run(path, saved)
    assert data == line(1)
    # Whether the new file got the old inode back (then it looks like the same file grown)
    # is up to the filesystem; either way nothing is reported lost.
    assert "error" not in info
    assert info["bytes"] == len(line(1))


def test_it_skips_a_damaged_compressed_candidate(log: Path) -> None:
    log.with_name(log.name + ".1.gz").write_bytes(b"\x1f\x8b not really gzip")
    _, saved, _ = run(log, None)
    append(log, line(2))
    rotated = log.with_name(log.name + "-20261002")
    log.rename(rotated)
    gzip_file(rotated, log.with_name(rotated.name + ".gz"))
    append(log, line(3))
    data, _, info = run(log, saved)
    assert data == line(2) + line(3)
    assert "error" not in info


def test_it_delivers_the_unterminated_last_line_of_a_rotated_file(log: Path) -> None:
    _, saved, _ = run(log, None)
    append(log, line(2) + b"cut short by a crash")
    log.rename(log.with_name(log.name + ".1"))
    append(log, line(3))
    assert run(log, saved)[0] == line(2) + b"cut short by a crash\n" + line(3)


def test_it_caps_a_run_on_a_line_boundary_and_continues_next_run(log: Path) -> None:
    _, saved, _ = run(log, None)
    lines = [line(n) for n in range(2, 12)]
    assert {len(x) for x in lines} == {81}
    append(log, b"".join(lines))
    data, saved, info = run(log, saved, max_bytes=200)
    assert data == lines[0] + lines[1]
    assert info == {"bytes": 162, "rotated": False, "truncated": True}
    got = [data]
    while info["truncated"]:
        data, saved, info = run(log, saved, max_bytes=200)
        got.append(data)
    assert b"".join(got) == b"".join(lines)
    assert info["truncated"] is False


@pytest.mark.parametrize("rotations", [1, 2])
def test_it_resumes_a_capped_rotated_file_before_the_new_one(log: Path, rotations: int) -> None:
    """... and before every generation rotated after it."""
    _, saved, _ = run(log, None)
    old = []
    for r in range(rotations):
        old.append(b"".join(line(n) for n in range(2 + 4 * r, 6 + 4 * r)))
        append(log, old[-1])
        one = log.with_name(log.name + ".1")
        if one.exists():
            one.rename(log.with_name(log.name + ".2"))
        log.rename(one)
    new = b"".join(line(n) for n in range(20, 23))
    append(log, new)
    got = []
    infos = []
    for _ in range(12):
        data, saved, info = run(log, saved, max_bytes=170)
        got.append(data)
        infos.append(info)
    assert b"".join(got) == b"".join(old) + new
    assert infos[0] == {"bytes": 162, "rotated": True, "truncated": True, "rotated_files": 1}
    assert infos[-1] == {"bytes": 0, "rotated": False, "truncated": False}
    assert not any("error" in info for info in infos)


def test_it_splits_a_line_longer_than_the_cap(log: Path) -> None:
    _, saved, _ = run(log, None)
    append(log, b"a" * 25 + b"\n")
    data1, saved, info1 = run(log, saved, max_bytes=10)
    data2, saved, _ = run(log, saved, max_bytes=10)
    data3, saved, info3 = run(log, saved, max_bytes=10)
    assert (data1, data2, data3) == (b"a" * 10 + b"\n", b"a" * 10 + b"\n", b"a" * 5 + b"\n")
    assert info1["truncated"] is True
    assert info3["truncated"] is False


def test_it_keeps_the_position_when_the_log_is_missing(log: Path) -> None:
    _, saved, _ = run(log, None)
    log.rename(log.with_name(log.name + ".1"))
    data, new_saved, info = run(log, saved)
    assert data == b""
    assert new_saved == saved
    assert info == {
        "bytes": 0,
        "rotated": False,
        "truncated": False,
        "error": f"cannot open {log}: No such file or directory",
    }


def test_it_reads_from_the_start_a_log_that_was_absent_on_the_first_run(tmp_path: Path) -> None:
    path = tmp_path / "panda-submitter.log"
    _, saved, info = run(path, None)
    assert saved == {"offset": 0, "known": []}
    assert "No such file" in info["error"]
    append(path, line(1))
    data, saved, info = run(path, saved)
    assert data == line(1)
    assert info == {"bytes": len(line(1)), "rotated": False, "truncated": False}


def test_it_reports_an_unreadable_path_without_raising(tmp_path: Path) -> None:
    saved = {"offset": 5, "dev": 1, "inode": 2, "fp": "ab", "fp_len": 5}
    chunks, new_saved, info = read_json(tmp_path, saved)
    assert chunks == []
    assert new_saved == saved
    assert info["error"].startswith(f"cannot open {tmp_path}: ")


@pytest.mark.parametrize(
    "saved",
    [{"offset": -1}, {"offset": "7"}, {"offset": 5, "inode": 3}, ["not", "a", "dict"]],
)
def test_it_treats_an_unusable_saved_position_as_a_first_run(log: Path, saved: Any) -> None:
    data, new_saved, info = run(log, saved)
    assert data == b""
    assert info["first_run"] is True
    assert new_saved["offset"] == log.stat().st_size


def test_it_extends_the_fingerprint_as_a_short_log_grows(tmp_path: Path) -> None:
    path = tmp_path / "panda-x.log"
    append(path, line(0))
    _, saved, _ = run(path, None)
    assert saved["fp_len"] == len(line(0))
    append(path, b"".join(line(n) for n in range(1, 10)))
    _, saved, _ = run(path, saved)
    assert saved["fp_len"] == FINGERPRINT_BYTES


# Several rotations between two runs (issue 9, defect 2): every generation newer than the
# saved position is read, oldest first, before the live log; when the file read last is gone,
# the info says what was lost and why.


def test_it_reads_every_numbered_generation_after_two_rotations(log: Path) -> None:
    _, saved, _ = run(log, None)
    append(log, line(2))
    log.rename(log.with_name(log.name + ".1"))  # rotation 1 (RotatingFileHandler)
    append(log, line(3))
    one = log.with_name(log.name + ".1")
    one.rename(log.with_name(log.name + ".2"))  # rotation 2, then logrotate's compress
    gzip_file(log.with_name(log.name + ".2"), log.with_name(log.name + ".2.gz"))
    log.rename(one)
    append(log, line(4))
    data, saved, info = run(log, saved)
    assert data == line(2) + line(3) + line(4)
    assert info == {"bytes": len(data), "rotated": True, "truncated": False,
                    "rotated_files": 2}
    append(log, line(5))
    assert run(log, saved)[0] == line(5)


def test_it_reads_the_newer_generation_when_the_file_read_last_is_gone(log: Path) -> None:
    """`rotate 1`, rotated twice: the file read last was deleted; the one after it is read
    whole, and the info says what was lost and why."""
    _, saved, _ = run(log, None)
    append(log, line(2) + b"2026-10-02 18:20:59,000 a line still being writ")
    one = log.with_name(log.name + ".1")
    _, saved, _ = run(log, saved)  # the partial line waits in the file
    log.rename(one)
    append(log, line(3))
    one.unlink()
    log.rename(one)
    append(log, line(4))
    data, _, info = run(log, saved)
    assert data == line(3) + line(4)
    assert info["rotated"] is True and info["rotated_files"] == 1
    assert info["lost_bytes"] is None  # what the deleted file got after the last run: unknown
    assert info["error"] == (
        f"rotated file not found: lines after byte {saved['offset']} of the previous file "
        f"are lost (at least {len(b'2026-10-02 18:20:59,000 a line still being writ')} bytes; "
        "the rest it got after the last run is unknown)")


def test_it_says_how_much_a_damaged_newer_generation_lost(log: Path) -> None:
    _, saved, _ = run(log, None)
    append(log, line(2))
    log.rename(log.with_name(log.name + ".2"))
    damaged = log.with_name(log.name + ".1.gz")
    with gzip.open(damaged, "wb") as out:
        out.write(line(3) * 2000)
    damaged.write_bytes(damaged.read_bytes()[:200])  # cut short: the stream ends early
    append(log, line(4))
    data, _, info = run(log, saved)
    assert data == line(2) + line(4)
    assert info["lost_bytes"] is None  # how much a damaged compressed file held: unknown
    assert info["error"].startswith(f"cannot read {damaged}: ")
    assert info["rotated_files"] == 1


# Every way of rotating, any number of times between two runs, at random points, with partial
# lines and caps: over all runs the chunks are exactly the complete lines written after the
# first run, none lost or repeated.


def _rotate_keeping(path: Path, how: str, day: list[int]) -> None:
    """One rotation that keeps the older generations (numbered ones move up by one)."""
    if how == "dateext":
        day[0] += 1
        dated = path.with_name(f"{path.name}-202610{day[0]:02d}")
        path.rename(dated)
        if day[0] % 2:
            gzip_file(dated, path.with_name(dated.name + ".gz"))
        path.touch()
        return
    numbered = sorted((p for p in path.parent.iterdir()
                       if p.name.startswith(path.name + ".")),
                      key=lambda p: -int(p.name[len(path.name) + 1:].split(".")[0]))
    for older in numbered:  # NAME.N[.gz] -> NAME.N+1[.gz], oldest first
        n, _, ext = older.name[len(path.name) + 1:].partition(".")
        older.rename(path.with_name(f"{path.name}.{int(n) + 1}" + (f".{ext}" if ext else "")))
    one = path.with_name(path.name + ".1")
    if how == "copytruncate":
        shutil.copyfile(path, one)
        os.truncate(path, 0)
    else:
        path.rename(one)
        path.touch()
    two = path.with_name(path.name + ".2")
    if how == "delaycompress" and two.exists():
        gzip_file(two, path.with_name(two.name + ".gz"))
    elif how == "compress":
        gzip_file(one, path.with_name(one.name + ".gz"))


@pytest.mark.parametrize("seed", range(80))
def test_it_never_loses_or_repeats_a_line_across_rotations(tmp_path: Path, seed: int) -> None:
    rnd = random.Random(seed)
    path = tmp_path / "panda-communicator.log"
    append(path, line(0) + b"partial before the first run")
    _, saved, _ = run(path, None)
    append(path, b" ends after it\n")
    written = [b"partial before the first run ends after it\n"]
    got: list[bytes] = []
    day = [0]
    dated = rnd.random() < 0.3  # a log's generations are all numbered or all dated
    pending = b""  # an unfinished line in the current file
    n = 1
    cap = rnd.choice([64 * 1024 * 1024, 130, 250, 1000])  # every line fits a cap
    for _ in range(60):
        action = rnd.random()
        if action < 0.5:
            for _ in range(rnd.randint(1, 6)):
                data = line(n, rnd.randint(40, 120))
                n += 1
                written.append(data)
                if rnd.random() < 0.2:  # a line written in two pieces across a run
                    cut = rnd.randint(1, len(data) - 1)
                    append(path, pending + data[:cut])
                    pending = data[cut:]
                    break
                append(path, pending + data)
                pending = b""
        elif action < 0.7 and not pending:
            # One or more rotations before the next run (also while a capped read is
            # still behind), each at a line end, some generations left empty.
            for _ in range(rnd.randint(1, 3)):
                how = "dateext" if dated else rnd.choice(
                    ["handler", "compress", "delaycompress", "copytruncate"])
                _rotate_keeping(path, how, day)
                if rnd.random() < 0.7:
                    written.append(line(n))
                    append(path, line(n))
                    n += 1
        else:
            data, saved, info = run(path, saved, max_bytes=cap)
            assert "error" not in info, info
            got.append(data)
    append(path, pending)
    for _ in range(400):
        data, saved, info = run(path, saved, max_bytes=cap)
        got.append(data)
        if not info["truncated"]:
            break
    assert b"".join(got) == b"".join(written)
