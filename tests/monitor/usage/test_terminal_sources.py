"""The monitor as `clusterwatch usage` reads it, through the HTTP seam: every answer that is
not a document (garbage, a wrong shape, a refusal, an error page, no answer) is one line,
never a traceback; the credential goes in the header, never elsewhere; a URL's password is
never shown."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional

import pytest

from clusterwatch.errors import ConfigError
from clusterwatch.http_client import HttpResponse, TransportError
from clusterwatch.monitor.usage.terminal.settings import MonitorSettings
from clusterwatch.monitor.usage.terminal.sources import MonitorSource, NotFound, SourceError

SECRET = "cwu_s3cret-token-value"


class Seam:
    def __init__(self, status: int = 200, body: bytes = b"{}",
                 error: Optional[TransportError] = None) -> None:
        self.status, self.body, self.error = status, body, error
        self.asked: list[dict[str, Any]] = []

    def __call__(self, method: str, url: str, **options: Any) -> HttpResponse:
        self.asked.append({"method": method, "url": url, **options})
        if self.error is not None:
            raise self.error
        return HttpResponse(self.status, self.body)


def source(seam: Seam, tmp_path: Path, url: str = "https://monitor.example.org") -> MonitorSource:
    token = tmp_path / "token"
    token.write_text(SECRET + "\n")
    token.chmod(0o600)
    return MonitorSource(MonitorSettings(url, token, None, 5.0), http=seam)


@pytest.mark.parametrize(("status", "body", "said"), [
    (200, b"<html>not json", "the monitor's answer is not JSON"),
    (200, b'{"jobs": []}', "the monitor's answer is not a usage document"),
    (200, b"[1, 2]", "the monitor's answer is not a usage document"),
    (200, b"\x00\xff\xfe", "the monitor's answer is not JSON"),
    (403, b'{"error": "the credential was replayed"}',
     "the monitor refused the request: the credential was replayed"),
    (503, b'{"error": "accounting is not available: sacct timed out"}',
     "the monitor answered HTTP 503: accounting is not available: sacct timed out"),
    (502, b"<html>Bad Gateway</html>", "the monitor answered HTTP 502"),
    (400, b'{"error": "' + b"x" * 5000 + b'"}', "the monitor answered HTTP 400: xxx"),
])
def test_an_answer_that_is_no_document_is_one_line(tmp_path: Path, status: int, body: bytes,
                                                   said: str) -> None:
    with pytest.raises(SourceError) as failed:
        source(Seam(status, body), tmp_path).job("4242")
    message = str(failed.value)
    assert message.startswith(said) and "\n" not in message and len(message) < 300
    assert SECRET not in message


def test_no_answer_is_one_line_naming_the_kind(tmp_path: Path) -> None:
    seam = Seam(error=TransportError("timeout", "no answer within 5 s"))
    with pytest.raises(SourceError, match=r"^the monitor did not answer: timeout$"):
        source(seam, tmp_path).job("4242")


def test_a_404_is_an_unknown_job_that_says_no_more(tmp_path: Path) -> None:
    with pytest.raises(NotFound, match=r"^the monitor has no job 4242 that you may see$"):
        source(Seam(404, b'{"error": "no job with this id that you may see"}'),
               tmp_path).job("4242")
    # An array's id that the monitor does not know as an array: no array, not an error.
    assert source(Seam(404, b"{}"), tmp_path).array("4242") is None


def test_the_token_goes_in_the_header_and_the_deadline_and_bound_are_set(tmp_path: Path) -> None:
    document = {"jobid": "4242", "user": "alice"}
    seam = Seam(200, json.dumps(document).encode())
    assert source(seam, tmp_path).job("4242") == document
    (asked,) = seam.asked
    assert asked["url"] == "https://monitor.example.org/api/v1/jobs/4242/usage"
    assert asked["headers"]["Authorization"] == f"Bearer {SECRET}"
    assert asked["timeout"] == 5.0 and asked["max_body"] >= 64 * 1024**2


def test_a_token_file_that_is_wrong_is_configuration(tmp_path: Path) -> None:
    for content, mode, said in ((b"", 0o600, "is empty"), (b"a\nb\n", 0o600, "more than one"),
                                (b"cwu_x\x00y", 0o600, "NUL"), (b"cwu_x", 0o644, "chmod 600")):
        token = tmp_path / "token"
        token.write_bytes(content)
        token.chmod(mode)
        monitor = MonitorSource(MonitorSettings("https://m.example.org", token, None, 5.0),
                                http=Seam())
        with pytest.raises(ConfigError, match=said):
            monitor.job("4242")


def test_a_urls_password_is_never_shown(tmp_path: Path) -> None:
    monitor = source(Seam(), tmp_path, url="https://ops:hunter2@monitor.example.org:8443/cw")
    assert monitor.report_url("4242") == "https://monitor.example.org:8443/cw/usage/jobs/4242/"


def test_a_list_keeps_only_what_started_since_the_moment_asked(tmp_path: Path) -> None:
    jobs = [{"jobid": "1", "start": "2026-12-01T10:00:00Z"},
            {"jobid": "2", "start": "2026-11-20T10:00:00Z"}, {"jobid": "3", "start": None}]
    seam = Seam(200, json.dumps({"jobs": jobs, "cut": False, "unreadable": []}).encode())
    monitor = MonitorSource(source(seam, tmp_path).settings, http=seam,
                            now=datetime(2026, 12, 3, tzinfo=timezone.utc))
    found = monitor.user_jobs("alice", datetime(2026, 11, 25, tzinfo=timezone.utc))
    assert [j["jobid"] for j in found.documents] == ["1", "3"]
    assert seam.asked[0]["url"].endswith("/api/v1/users/alice?days=8")


# What a monitor (or whoever answers for it on plain http) may put in its words: an OSC that
# sets the terminal's title, a screen clear, a bidi override, a NUL, a line break.
DRIVES = "\x1b]0;owned\x07\x1b[2J\u202e\x00\r\nforged line"


def _drives_the_terminal(text: str) -> bool:
    return any(c in text for c in "\x1b\x07\u202e\x00\r")


def test_no_word_of_the_monitors_reaches_the_terminal_with_a_control_character(
        tmp_path: Path) -> None:
    from clusterwatch.monitor.usage.analysis.figures import analyse
    from clusterwatch.monitor.usage.analysis.rules import check
    from clusterwatch.monitor.usage.analysis.summary_json import usage_document
    from clusterwatch.monitor.usage.terminal.job_text import job_report
    from clusterwatch.monitor.usage.terminal.style import Style
    from tests.monitor.usage.usage_support import job_series, one, record

    job = record(memory_requested_bytes=8 * 1024**3)
    summary = analyse(job, job_series(cpu_seconds=[one(lambda t: 1.0 * t)],
                                      memory_rss_bytes=[one(lambda t: 200 * 1024**2)],
                                      memory_shmem_bytes=[one(lambda t: 0)]))
    document: dict[str, Any] = json.loads(json.dumps(
        usage_document(job, summary, check(job, summary))))
    assert document["warnings"]
    for warning in document["warnings"]:
        warning["message"] += DRIVES
        warning["advice"] += DRIVES
        warning["code"] += DRIVES
        warning["figures"] = {f"{key}{DRIVES}": DRIVES for key in warning["figures"]}
    document["notes"] = [DRIVES]
    document["peer_ranks"] = {"window_days": DRIVES, "cpu_efficiency": {"text": DRIVES}}
    text = "\n".join(job_report(document, Style(False)))
    assert "owned" in text and "forged line" in text  # said, on its own line
    assert not _drives_the_terminal(text)
    assert not any(line.startswith("forged line") for line in text.splitlines())

    refused = json.dumps({"error": "refused" + DRIVES}).encode()
    with pytest.raises(SourceError) as failed:
        source(Seam(403, refused), tmp_path).job("4242")
    assert "owned" in str(failed.value) and not _drives_the_terminal(str(failed.value))
    listing = {"jobs": [], "cut": False, "unreadable": [{"reason": "sacct said" + DRIVES}]}
    found = source(Seam(200, json.dumps(listing).encode()), tmp_path).user_jobs(
        "alice", datetime.now(timezone.utc))
    assert found.unreadable and not any(_drives_the_terminal(r) for r in found.unreadable)


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "3601", "soon"])
def test_a_monitor_timeout_that_is_no_number_of_seconds_is_configuration(
        tmp_path: Path, value: str) -> None:
    from clusterwatch.monitor.usage.terminal.settings import read_settings

    system = tmp_path / "usage.toml"
    system.write_text("[usage]\n")
    with pytest.raises(ConfigError, match=r"^CLUSTERWATCH_MONITOR_TIMEOUT_S must be a number "
                                          r"of seconds above 0 and at most 3600, not "):
        read_settings({"CLUSTERWATCH_USAGE_CONFIG": str(system),
                       "CLUSTERWATCH_MONITOR_URL": "https://m.example.org",
                       "CLUSTERWATCH_MONITOR_TIMEOUT_S": value})
