"""A job's name as every report shows it (usage/rendering/shown_text.py): the job page, the
user's list and the PDF show it as the email does, on one line, without bidirectional controls
(U+202E made a name read reversed on the pages while the email stripped it), and at most
SHOWN_LIMIT characters, so a 100,000-character name neither floods a page nor holds the
PDF for seconds (reportlab took 9 s to lay it out); the JSON keeps every character.
The PDF's time is measured by benchmarks/bench_usage_render.py --long-names."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from clusterwatch.monitor.usage.rendering.shown_text import (
    MARKS_LIMIT,
    SHOWN_LIMIT,
    one_line,
    shown,
)
from tests.components import need_binary
from tests.monitor.usage.page_support import client_of, text_of
from tests.monitor.usage.site import UsageSite

pytestmark = pytest.mark.django_db

# Every bidirectional control: embeddings and overrides, isolates, the marks.
BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
HOSTILE = f"evil\u202egnp.exe{BIDI}tail"
LONG = "x" * 100_000
# 100,000 combining accents on one letter: one "character" to the eye, a tower of accents
# drawn up over the page when the name kept 299 of them.
ZALGO = "a" + "\u0301" * 100_000 + "b"


def pdf_text(pdf: bytes, tmp_path: Path) -> str:
    source = tmp_path / "report.pdf"
    source.write_bytes(pdf)
    done = subprocess.run(
        [need_binary("pdftotext"), str(source), "-"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return done.stdout


def test_it_strips_bidi_controls_from_the_job_page_and_the_user_list(usage_site: UsageSite) -> None:
    usage_site.job("4242", name=HOSTILE)
    client = client_of("alice")
    for path in ("/usage/jobs/4242/", "/usage/users/alice/", "/mail/4242"):
        answer = client.get(path)
        assert answer.status_code == 200, path
        content = answer.content.decode()
        assert not set(BIDI) & set(content), (path, sorted(set(BIDI) & set(content)))
        assert "evil gnp.exe tail" in text_of(answer), path
    # The document keeps what the user typed.
    assert client.get("/api/v1/jobs/4242/usage").json()["name"] == HOSTILE


def test_a_100000_character_name_is_shortened_where_shown_and_whole_in_the_json(
    usage_site: UsageSite, tmp_path: Path
) -> None:
    usage_site.job("4242", name=LONG)
    client = client_of("alice")
    assert client.get("/api/v1/jobs/4242/usage").json()["name"] == LONG
    assert client.get("/api/v1/users/alice").json()["jobs"][0]["name"] == LONG
    shortened = "x" * (SHOWN_LIMIT - 1) + "…"
    for path in ("/usage/jobs/4242/", "/usage/users/alice/"):
        answer = client.get(path)
        assert answer.status_code == 200
        content = answer.content.decode()
        assert shortened in content and "x" * SHOWN_LIMIT not in content, path
        assert len(content) < 60_000, path
    answer = client.get("/pdf/4242")
    assert answer.status_code == 200 and answer["Content-Type"] == "application/pdf"
    text = pdf_text(answer.content, tmp_path)
    # The name may wrap over lines: its runs of x together, the words' lone x's aside.
    shown_xs = sum(len(run) for run in re.findall(r"x{5,}", text))
    assert SHOWN_LIMIT // 2 < shown_xs < SHOWN_LIMIT and "…" in text, shown_xs


def test_the_staff_page_shows_accounts_and_users_as_every_report_does(
    usage_site: UsageSite,
) -> None:
    usage_site.job("4242", account=f"phys\u202eics{BIDI}")
    client = client_of("carol", staff=True)
    assert client.get("/usage/jobs/4242/").status_code == 200  # ended a day ago: now kept
    answer = client.get("/usage/staff/")
    assert answer.status_code == 200
    assert not set(BIDI) & set(answer.content.decode())
    assert "phys ics" in text_of(answer) and "4242" in text_of(answer)


def test_a_run_of_combining_marks_is_shortened_where_shown(usage_site: UsageSite) -> None:
    usage_site.job("4242", name=ZALGO)
    client = client_of("alice")
    kept = "a" + "\u0301" * MARKS_LIMIT + "b"
    for path in ("/usage/jobs/4242/", "/usage/users/alice/", "/mail/4242"):
        answer = client.get(path)
        assert answer.status_code == 200, path
        content = answer.content.decode()
        assert kept in content and "\u0301" * (MARKS_LIMIT + 1) not in content, path
    assert client.get("/api/v1/jobs/4242/usage").json()["name"] == ZALGO


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (HOSTILE, "evil gnp.exe tail"),
        ("a\nb\u2028c\x1bd", "a b c d"),
        ("x" * (SHOWN_LIMIT + 1), "x" * (SHOWN_LIMIT - 1) + "…"),
        ("x" * SHOWN_LIMIT, "x" * SHOWN_LIMIT),
        ("", ""),
        ("e\u0301\u0302", "e\u0301\u0302"),
        ("a" + "\u0301" * 40 + "b\u20dd", "a" + "\u0301" * MARKS_LIMIT + "b\u20dd"),
        ("\u05d1\u05bc\u05b8\u0591\u05bd", "\u05d1\u05bc\u05b8\u0591\u05bd"),
    ],
)
def test_shown_is_the_emails_one_line_at_the_pages_length(text: str, expected: str) -> None:
    assert shown(text) == expected == one_line(text, SHOWN_LIMIT)
