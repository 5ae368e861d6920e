"""docs/reporter.md "Admission" says what the code does: the default patterns verbatim, every
reason a value is not available, the options and their defaults, the bounds."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from clusterwatch.reporter import admission, admission_collect, admission_evidence, condor_events
from clusterwatch.reporter import launcher_stderr as ls
from clusterwatch.reporter.main import build_parser

DOC = Path(__file__).resolve().parents[2] / "docs" / "reporter.md"


def _section() -> str:
    text = DOC.read_text(encoding="utf-8")
    start = text.index("## Admission (telemetry 1.4)")
    return " ".join(text[start:text.index("\n## ", start + 1)].split())


@pytest.mark.parametrize("name", [n for n in dir(admission_evidence) if n.startswith("NO_")])
def test_it_words_each_missing_evidence_reason_as_the_code_does(name: str) -> None:
    assert f"`{getattr(admission_evidence, name)}`" in _section()


def test_it_gives_the_default_patterns_verbatim() -> None:
    assert f"`{ls.DEFAULT_STARTUP_PATTERN}`" in _section()
    assert f"`{ls.DEFAULT_LIFETIME_PATTERN}`" in _section()


def test_it_documents_each_admission_option_with_its_default() -> None:
    defaults = {action.option_strings[0]: action.default for action in build_parser()._actions}
    section = _section()
    for option in ("--refusal-exit-codes", "--startup-pattern", "--lifetime-pattern"):
        assert re.search(rf"\| `{option} [A-Z]+` \|", section), option
    assert defaults["--refusal-exit-codes"] == "73" and "default `73`" in section


def test_it_states_the_bounds_the_code_keeps() -> None:
    section = _section()
    assert admission_collect.MAX_RECORDS == 4000 and "At most 4,000 startup records" in section
    assert admission_collect.WORKER_LIMIT == 20000 and "at most 20,000" in section
    assert admission.WINDOW_S == 3600 and "(`window_s`: 3600)" in section
    assert admission.MAX_GROUPS == 50 and "(50 at most)" in section
    assert ls.DEFAULT_HEAD_BYTES == 256 * 1024 and "its first 256 KiB" in section
    assert condor_events.DEFAULT_MAX_BYTES == 1024 * 1024 and "its last 1 MiB" in section
