"""The end-of-job email's words (mail_content, mail_html, mail_message): the subject, what was
asked for and used, the warnings, the links; hostile job names kept to one escaped line."""

from __future__ import annotations

import re
from email import message_from_bytes, policy
from typing import Any, Optional

import pytest

from clusterwatch.monitor.usage.analysis.figures import analyse
from clusterwatch.monitor.usage.analysis.rules import check
from clusterwatch.monitor.usage.analysis.summary_json import UsageDocument, usage_document
from clusterwatch.monitor.usage.mail.content import one_line, subject_of
from clusterwatch.monitor.usage.mail.message import build_message, compose, describe
from clusterwatch.monitor.usage.metrics.series import JobSeries
from tests.monitor.usage.usage_support import START, GiB, good_series, job_series, one, record

BASE = "https://monitor.example.org"
HOSTILE = 'x"><script>alert(1)</script>\r\nBcc: victim@example.org\u202e\tend'


def document(series: Optional[JobSeries] = None, **changes: Any) -> UsageDocument:
    job = record(**changes)
    summary = analyse(job, series)
    return usage_document(job, summary, check(job, summary))


def wasteful() -> UsageDocument:
    """Half the CPUs idle, 200 MiB of 8 GiB used: two warnings."""
    return document(job_series(cpu_seconds=[one(lambda t: 1.0 * t)],
                               memory_rss_bytes=[one(lambda t: 200 * 1024**2)],
                               memory_shmem_bytes=[one(lambda t: 0)]),
                    memory_requested_bytes=8 * GiB)


def test_its_subject_says_the_job_its_state_and_what_it_used() -> None:
    assert subject_of(wasteful()) == (
        "Job 4242 (good) COMPLETED: used 50% of its CPUs, 2% of its memory (2 warnings)")
    assert subject_of(document(good_series())).endswith("of its memory")  # no warnings


def test_its_subject_says_not_measured_rather_than_zero() -> None:
    unmeasured = document(None, max_rss_bytes=None, total_cpu_s=None)
    assert unmeasured["cpu_efficiency"] is None and unmeasured["memory_efficiency"] is None
    assert subject_of(unmeasured) == "Job 4242 (good) COMPLETED: usage not measured"
    tiny = document(None, total_cpu_s=1.0, max_rss_bytes=GiB)
    assert "used <1% of its CPUs, 25% of its memory" in subject_of(tiny)


def test_it_says_what_was_asked_for_and_used_and_what_to_change() -> None:
    content = compose(wasteful(), greeting="Alice", base_url=BASE + "/")
    for part in (content.text, content.html):
        assert "Hello Alice," in part
        assert "8.0 GiB" in part and "200.0 MiB at peak" in part
        assert "Low CPU efficiency" in part and "Memory over-requested" in part
        assert "What to change" in part and "--mem=1G" in part
        assert f"{BASE}/usage/jobs/4242/" in part and f"{BASE}/pdf/4242" in part
    assert "What it asked for and what it used" in content.text
    assert re.search(r"CPU\s+2 CPUs\s+1\.00 CPUs on average.*50\.0 %", content.text)


def test_a_job_without_warnings_says_there_is_nothing_to_change() -> None:
    content = compose(document(good_series()), greeting="alice", base_url=BASE)
    assert "Nothing to change" in content.text and "Nothing to change" in content.html
    assert "What to change next time" not in content.text


def test_its_html_part_has_inline_css_and_no_external_asset() -> None:
    html = compose(wasteful(), greeting="alice", base_url=BASE).html
    assert html.startswith("<!DOCTYPE html>") and 'style="' in html
    assert "<style" not in html and "<script" not in html and "<link" not in html
    assert " src=" not in html
    assert set(re.findall(r'href="([^"]+)"', html)) == {f"{BASE}/usage/jobs/4242/",
                                                       f"{BASE}/pdf/4242"}


def test_it_keeps_a_hostile_job_name_to_one_escaped_line() -> None:
    hostile = document(good_series(), name=HOSTILE, partition="<i>p</i>")
    content = compose(hostile, greeting="Bob\r\nX-Injected: 1", base_url=BASE)
    assert "\n" not in content.subject and "\r" not in content.subject
    assert "\u202e" not in content.subject + content.text
    assert "<script>" not in content.html and "&lt;script&gt;" in content.html
    assert "<i>p</i>" not in content.html
    assert not any(line.startswith(("Bcc:", "X-Injected:")) for line in
                   content.text.splitlines())
    message = build_message(content, jobid="4242", pdf=b"%PDF-1.4 test", sender="cw@example.org",
                            recipient="alice@example.org", queued_at=START)
    parsed = message_from_bytes(message.message().as_bytes(), policy=policy.default)
    assert parsed["Bcc"] is None and parsed["X-Injected"] is None
    assert parsed["To"] == "alice@example.org"


def test_it_escapes_warning_and_note_text_in_html() -> None:
    doc = wasteful()
    doc["warnings"][0]["message"] = "<b>bold</b> & co"
    doc["notes"] = ["<a href='http://evil.example'>click</a>"]
    html = compose(doc, greeting="alice", base_url=BASE).html
    assert "&lt;b&gt;bold&lt;/b&gt; &amp; co" in html and "evil.example'>" not in html


def test_a_running_job_is_said_to_be_running() -> None:
    running = document(good_series(), state="RUNNING", end=None)
    assert running["running"] is True
    content = compose(running, greeting="alice", base_url=BASE)
    assert "still running" in content.subject and "is still running" in content.text


def test_the_message_attaches_the_pdf_and_dry_run_describes_it() -> None:
    content = compose(wasteful(), greeting="alice", base_url=BASE)
    message = build_message(content, jobid="4242_7", pdf=b"%PDF-1.4 " + b"x" * 91,
                            sender="cw@example.org", recipient="alice@example.org",
                            queued_at=START)
    parsed = message_from_bytes(message.message().as_bytes(), policy=policy.default)
    [attachment] = list(parsed.iter_attachments())
    assert attachment.get_filename() == "job-4242_7-usage.pdf"
    assert attachment.get_content_type() == "application/pdf"
    assert parsed["Message-ID"] == f"<usage-4242_7.{int(START.timestamp())}@example.org>"
    printed = describe(message)
    assert "Subject: Job 4242 (good) COMPLETED" in printed
    assert "[attachment: job-4242_7-usage.pdf, application/pdf, 100 bytes]" in printed
    assert "%PDF" not in printed and "<html" not in printed


@pytest.mark.parametrize(("text", "limit", "expected"), [
    ("a\nb\r\nc", 20, "a b c"), ("  tab\there  ", 20, "tab here"),
    ("x" * 30, 10, "x" * 9 + "…"), ("rtl\u202eoverride\u200b", 40, "rtl override"),
])
def test_one_line_removes_line_breaks_and_format_characters(text: str, limit: int,
                                                             expected: str) -> None:
    assert one_line(text, limit) == expected
