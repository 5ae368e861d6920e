"""The launcher's stderr: startup and lifetime lines in the default and configured formats."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterwatch.reporter.launcher_stderr import (
    LIFETIME_GROUPS,
    PatternError,
    compile_patterns,
    parse_stderr,
    read_head,
    stderr_evidence,
)
from tests.support.admission_section import FILES, LIFETIME, STARTUP

NO_LINE = "no line of the launcher's stderr matched"


def test_it_reads_the_default_startup_and_lifetime_lines() -> None:
    found = stderr_evidence(str(FILES / "stderr_refusal.err"), STARTUP, LIFETIME)

    assert found == {"execution_queue": "BNL_OSG_1", "execution_host": "wn01.example.edu",
                     "remaining_lifetime_s": 3400, "required_lifetime_s": 7200, "missing": {}}


def test_it_says_why_each_lifetime_is_missing_when_the_launcher_wrote_none() -> None:
    found = stderr_evidence(str(FILES / "stderr_no_lifetime.err"), STARTUP, LIFETIME)

    assert found["execution_host"] == "wn03.example.edu"
    assert found["remaining_lifetime_s"] is None and found["required_lifetime_s"] is None
    assert found["missing"] == {"remaining_lifetime_s": NO_LINE, "required_lifetime_s": NO_LINE}


def test_it_takes_a_sites_own_patterns_on_separate_lines_and_the_last_value() -> None:
    lifetime = compile_patterns([r"proxy left: (?P<remaining>\d+)", r"need (?P<required>\d+)"],
                                LIFETIME_GROUPS, "--lifetime-pattern")
    text = "proxy left: 10\nneed 600\nproxy left: 500\n"

    found = parse_stderr(text, [], lifetime)

    assert (found["remaining_lifetime_s"], found["required_lifetime_s"]) == (500, 600)
    assert found["missing"] == {"execution_queue": NO_LINE, "execution_host": NO_LINE}


def test_it_never_takes_a_non_number_for_seconds() -> None:
    lifetime = compile_patterns([r"remaining=(?P<remaining>\S+)"], LIFETIME_GROUPS, "-l")

    found = parse_stderr("remaining=-5\n", [], lifetime)

    assert found["remaining_lifetime_s"] is None
    assert found["missing"]["remaining_lifetime_s"] == "not a number of seconds: '-5'"


@pytest.mark.parametrize("pattern", ["(unclosed", r"left=(?P<left>\d+)", r"x=(?P<remaining>\d+)"
                                     r" (?P<other>\d+)"])
def test_it_refuses_a_pattern_that_does_not_compile_or_names_other_groups(pattern: str) -> None:
    with pytest.raises(PatternError, match="--lifetime-pattern"):
        compile_patterns([pattern], LIFETIME_GROUPS, "--lifetime-pattern")


def test_it_reads_through_nul_bytes_and_bad_utf8(tmp_path: Path) -> None:
    path = tmp_path / "x.err"
    path.write_bytes(b"\xff\xfe garbage\x00\n[launcher] lifetime: remaining=3\x0000s "
                     b"required=60s\n")

    found = stderr_evidence(str(path), STARTUP, LIFETIME)

    assert (found["remaining_lifetime_s"], found["required_lifetime_s"]) == (300, 60)


def test_it_drops_a_line_cut_at_the_read_limit(tmp_path: Path) -> None:
    path = tmp_path / "x.err"
    path.write_bytes(b"lifetime: remaining=1s required=2s\nlifetime: remaining=34000s")

    text = read_head(str(path), max_bytes=50)

    assert text == "lifetime: remaining=1s required=2s\n"


@pytest.mark.parametrize("kind", ["missing", "directory", "no path"])
def test_it_reports_an_unreadable_stderr_as_missing_evidence(tmp_path: Path, kind: str) -> None:
    path = {"missing": str(tmp_path / "absent.err"), "directory": str(tmp_path),
            "no path": None}[kind]

    found = stderr_evidence(path, STARTUP, LIFETIME)

    assert found["execution_host"] is None and found["remaining_lifetime_s"] is None
    assert found["error"].startswith(("cannot read the launcher's stderr: ", "no local path"))
    assert set(found["missing"]) == {"execution_queue", "execution_host",
                                     "remaining_lifetime_s", "required_lifetime_s"}
