"""The harvester log parsers: exact counts on hand-written logs of both harvester generations
(shared/reference/harvester-formats.md section 2), and the fast parsers against a plain
line-by-line reference on generated logs."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from clusterwatch.loopback.harvester_files import HARVESTER_LOGS
from clusterwatch.reporter import harvester_log
from clusterwatch.reporter.harvester_log import (
    adjustment_section,
    failed_calls_section,
    fetching_section,
    submission_section,
)

from .harvester_log_support import bench

LOGS = HARVESTER_LOGS


def chunks(name: str) -> list[bytes]:
    return [(LOGS / name).read_bytes()]


def line(ts: str, daemon: str, level: str, rest: str) -> str:
    return f"{ts},000 panda.log.{daemon}: {level:<8} {rest}\n"


SSL_OUTCOME = (
    "failed to POST with <class 'requests.exceptions.SSLError'>:HTTPSConnectionPool("
    "host='pandaserver01.sdcc.bnl.gov', port=25443): Max retries exceeded with url: "
    "/api/v1/pilot/acquire_jobs (Caused by SSLError(...))")


# --- job fetcher ---------------------------------------------------------------------------

def test_it_counts_the_fetch_attempts_of_a_new_harvester_exactly() -> None:
    assert fetching_section(chunks("new/panda-job_fetcher.log")) == {"queues": {
        "BNL_PanDA_1": {
            "attempts": 6, "jobs_asked": 180, "jobs_got": 47, "failed": 4,
            "errors": {"SSLError": 2, "ReadTimeout": 1, "database timeout": 1},
            "last": {"at": "2026-10-02T18:27:05Z", "label": "managed", "asked": 20, "got": 12,
                     "outcome": "OK", "error_class": None},
            "last_got_jobs_at": "2026-10-02T18:27:05Z",
            # four failures (18:23:05-18:26:05) ended by the success at 18:27:05
            "last_ok_at": "2026-10-02T18:27:05Z", "failing_since": None, "failing_errors": {}},
        "UM_GREX_PanDA_1": {
            "attempts": 2, "jobs_asked": 10, "jobs_got": 0, "failed": 0, "errors": {},
            "last": {"at": "2026-10-02T18:24:44Z", "label": "managed", "asked": None, "got": 0,
                     "outcome": "No jobs in PanDA", "error_class": None},
            "last_got_jobs_at": None,
            # an empty answer is no failure
            "last_ok_at": "2026-10-02T18:24:44Z", "failing_since": None, "failing_errors": {}},
    }}


def test_it_delivers_a_failed_fetch_with_its_error_and_without_the_traceback() -> None:
    text = (
        line("2026-10-02 18:23:05", "job_fetcher", "DEBUG",
             "run <queueName=BNL_PanDA_1> getting 35 jobs for prodSourceLabel=managed "
             "rtype=None")
        + line("2026-10-02 18:23:05", "job_fetcher", "INFO",
               "run <queueName=BNL_PanDA_1> got 0 jobs for prodSourceLabel=managed rtype=None "
               f"with {SSL_OUTCOME} Traceback (most recent call last):")
        + '  File "...", line 703, in urlopen\n'
        + "requests.exceptions.SSLError: HTTPSConnectionPool(...)\n"
        + "  : took 0.091 sec\n")
    q = fetching_section([text.encode()])["queues"]["BNL_PanDA_1"]
    assert (q["attempts"], q["failed"], q["errors"], q["last_got_jobs_at"]) == (
        1, 1, {"SSLError": 1}, None)
    assert q["last"] == {"at": "2026-10-02T18:23:05Z", "label": "managed", "asked": 35,
                         "got": 0, "outcome": SSL_OUTCOME, "error_class": "SSLError"}


def test_it_counts_the_fetch_attempts_of_an_old_harvester_exactly() -> None:
    assert fetching_section(chunks("old/panda-job_fetcher.log")) == {"queues": {
        "CERN-PROD": {
            "attempts": 4, "jobs_asked": 32, "jobs_got": 8, "failed": 2,
            "errors": {"ConnectionError": 1, "StatusCode=503": 1},
            "last": {"at": "2020-03-02T10:03:00Z", "label": "managed", "asked": 8, "got": 0,
                     "outcome": "StatusCode=503 Service Unavailable",
                     "error_class": "StatusCode=503"},
            "last_got_jobs_at": "2020-03-02T10:00:01Z",
            # the empty answer at 10:02 ended the first failure; the last attempt failed
            "last_ok_at": "2020-03-02T10:02:00Z", "failing_since": "2020-03-02T10:03:00Z",
            "failing_errors": {"StatusCode=503": 1}},
    }}


def test_it_leaves_jobs_asked_unknown_when_the_fetcher_logs_at_info() -> None:
    queues = fetching_section(chunks("info/panda-job_fetcher.log"))["queues"]
    assert queues["BNL_PanDA_1"] == {
        "attempts": 2, "jobs_asked": None, "jobs_got": 39, "failed": 0, "errors": {},
        "last": {"at": "2026-10-02T18:22:44Z", "label": "managed", "asked": None, "got": 4,
                 "outcome": "OK", "error_class": None},
        "last_got_jobs_at": "2026-10-02T18:22:44Z",
        "last_ok_at": "2026-10-02T18:22:44Z", "failing_since": None, "failing_errors": {}}
    assert queues["UM_GREX_PanDA_1"]["last"]["outcome"] == "no jobs in PanDA"
    assert queues["UM_GREX_PanDA_1"]["failed"] == 0


@pytest.mark.parametrize("outcome", ["no jobs in PanDA", "No jobs in PanDA", "NO JOBS IN PANDA",
                                     "StatusCode=20", "no need to get job"])
def test_it_does_not_count_an_empty_answer_as_a_failure(outcome: str) -> None:
    text = line("2026-10-02 18:21:44", "job_fetcher", "INFO",
                f"run <queueName=Q> got 0 jobs with {outcome}  : took 0.2 sec")
    q = fetching_section([text.encode()])["queues"]["Q"]
    assert (q["attempts"], q["failed"], q["errors"]) == (1, 0, {})
    assert (q["last"]["outcome"], q["last"]["error_class"]) == (outcome, None)


def test_it_counts_no_attempt_in_a_traceback_line_nor_in_other_got_lines() -> None:
    text = (
        line("2026-10-02 18:20:41", "job_fetcher", "DEBUG",
             "run <id=host_2911-7f3e9a1fb700> got 2 queues")
        + "    run <queueName=Q> got 9 jobs with OK  : took 0.1 sec\n"
        + line("2026-10-02 18:20:42", "job_fetcher", "DEBUG",
               "run <queueName=Q> Converting of 35 jobs  : took 0.002 sec")
        + line("2026-10-02 18:20:43", "job_fetcher", "DEBUG",
               "run <queueName=Q\n> got 3 jobs with OK  : took 0.1 sec"))
    assert fetching_section([text.encode()]) == {"queues": {}}


def test_it_returns_no_queues_for_nothing_read() -> None:
    assert fetching_section([]) == {"queues": {}}
    assert fetching_section([b""]) == {"queues": {}}


def test_it_survives_bytes_that_are_not_utf8() -> None:
    text = line("2026-10-02 18:21:44", "job_fetcher", "INFO",
                "run <queueName=Q\xe9> got 1 jobs with OK").encode("latin-1")
    assert list(fetching_section([text])["queues"]) == ["Q\ufffd"]


# --- submitter -----------------------------------------------------------------------------

def test_it_counts_submissions_including_pull_mode_queues() -> None:
    assert submission_section(chunks("new/panda-submitter.log")) == {
        "queues": {
            "BNL_PanDA_1": {
                "workers_submitted": 2, "submit_failures": 2,
                "workers_status": {"nQueue": 12, "nReady": 1, "nRunning": 80, "nNewWorkers": 0},
                "workers_status_at": "2026-10-02T18:26:10Z",
                "job_chunks": 3, "job_chunks_at": "2026-10-02T18:23:10Z"},
            "UM_GREX_PanDA_1": {  # pull mode: no `submitted a workerID` line
                "workers_submitted": 2, "submit_failures": 0,
                "workers_status": {"nQueue": 2, "nReady": 0, "nRunning": 40, "nNewWorkers": 2},
                "workers_status_at": "2026-10-02T18:24:10Z",
                "job_chunks": 2, "job_chunks_at": "2026-10-02T18:24:10Z"},
        },
        "recent_pushes": [
            {"at": "2026-10-02T18:23:14Z", "queue": "BNL_PanDA_1", "workerid": 8812345,
             "pandaid": 6723451},
            {"at": "2026-10-02T18:23:14Z", "queue": "BNL_PanDA_1", "workerid": 8812347,
             "pandaid": 6723452},
        ]}


def test_it_reads_the_old_submitter_token_and_key_order() -> None:
    section = submission_section(chunks("old/panda-submitter.log"))
    assert section["queues"] == {"CERN-PROD": {
        "workers_submitted": 2, "submit_failures": 2,
        "workers_status": {"nQueue": 5, "nReady": 1, "nRunning": 200, "nNewWorkers": 4},
        "workers_status_at": "2020-03-02T10:00:10Z",
        "job_chunks": 4, "job_chunks_at": "2020-03-02T10:00:10Z"}}
    assert [p["workerid"] for p in section["recent_pushes"]] == [101, 102]


def test_it_reads_workers_status_without_evaluating_it(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("evaluated")

    monkeypatch.setattr("builtins.eval", refuse)
    monkeypatch.setattr("ast.literal_eval", refuse)
    marker = tmp_path / "ran"
    text = line("2026-10-02 18:23:10", "submitter", "DEBUG",
                "run <id=submitter-x queue=Q jtype=managed> workers status: {'nQueue': "
                f"__import__('os').system('touch {marker}'), 'nReady': 3, 'nRunning': 7}}")
    q = submission_section([text.encode()])["queues"]["Q"]
    assert q["workers_status"] == {"nQueue": None, "nReady": 3, "nRunning": 7,
                                   "nNewWorkers": None}
    assert not marker.exists()


def test_it_keeps_only_the_last_twenty_pushes() -> None:
    text = "".join(
        line("2026-10-02 18:23:14", "submitter", "INFO",
             f"run <id=submitter-x queue=Q jtype=managed> submitted a workerID={i} for "
             f"PandaID={1000 + i} with submissionHost=h,h:9618 batchID={i}.0")
        for i in range(25))
    pushes = submission_section([text.encode()])["recent_pushes"]
    assert [p["workerid"] for p in pushes] == list(range(5, 25))
    assert pushes[-1] == {"at": "2026-10-02T18:23:14Z", "queue": "Q", "workerid": 24,
                          "pandaid": 1024}


def test_it_skips_submitter_lines_without_a_queue() -> None:
    text = line("2026-10-02 18:23:10", "submitter", "DEBUG",
                "run <id=submitter-x> got 1 job chunks")
    assert submission_section([text.encode()]) == {"queues": {}, "recent_pushes": []}


# --- worker adjuster -----------------------------------------------------------------------

OLD_ADJUSTER = {
    "CERN-PROD": {"at": "2020-03-02T10:00:09Z", "limit": 10,
                  "limit_name": "n_queue_limit_per_rt", "against": {"n_queue": 12},
                  "message": "No nNewWorkers since nQueue(12)>=nQueueLimitPerRT(10)"},
    "CERN-TEST": {"at": "2020-03-02T10:05:09Z", "limit": 0, "limit_name": "n_new_workers",
                  "against": {"reason": "by BnlThrottler:too many failures"},
                  "message": "set nNewWorkers=0 by BnlThrottler:too many failures"},
}


def test_it_reads_the_limits_the_adjuster_applied() -> None:
    section, state = adjustment_section(chunks("new/panda-worker_adjuster.log"), {})
    assert section == state
    assert section["queues"] == {
        "UM_GREX_PanDA_1": {
            "at": "2026-10-02T18:00:11Z", "limit": 4, "limit_name": "max_queued_workers",
            "against": {"n_activated": 4, "queue_limit": 10},
            "message": "limiting max_queued_workers to min(n_activated=4, queue_limit=10)"},
        "BNL_PanDA_1": {  # the 18:30 line replaces the 18:00 one
            "at": "2026-10-02T18:30:10Z", "limit": 400, "limit_name": "max_workers",
            "against": {"n_queue": 5, "n_ready": 0, "n_running": 412},
            "message": "No n_new_workers since n_queue(5) + n_ready(0) + n_running(412) >= "
                       "max_workers(400)"},
        "BNL_ARM_1": {
            "at": "2026-10-02T18:30:11Z", "limit": 0, "limit_name": "n_new_workers",
            "against": {"reason": "since status=offline"},
            "message": "set n_new_workers=0 since status=offline"},
        "MWT2_UCORE": {
            "at": "2026-10-02T18:30:12Z", "limit": 7, "limit_name": "max_queued_workers",
            "against": {"n_activated": 7, "queue_limit": None},
            "message": "limiting max_queued_workers to min(n_activated=7, queue_limit=None)"},
    }


def test_it_delivers_the_adjusters_last_limits_on_every_run() -> None:
    first, state = adjustment_section(chunks("old/panda-worker_adjuster.log"), {})
    assert first == {"queues": OLD_ADJUSTER}
    state = json.loads(json.dumps(state))  # the lead stores it as JSON
    quiet, state = adjustment_section([], state)
    assert quiet == {"queues": OLD_ADJUSTER}
    later = line("2020-03-02 10:35:09", "worker_adjuster", "DEBUG",
                 "define_num_workers <site=CERN-PROD> No nNewWorkers since nQueue(3)>="
                 "nQueueLimitPerRT(2)")
    section, state = adjustment_section([later.encode()], state)
    assert section["queues"]["CERN-PROD"]["at"] == "2020-03-02T10:35:09Z"
    assert section["queues"]["CERN-PROD"]["limit"] == 2
    assert section["queues"]["CERN-TEST"] == OLD_ADJUSTER["CERN-TEST"]


@pytest.mark.parametrize("previous", [{}, {"queues": "junk"}, {"other": 1}])
def test_it_starts_afresh_from_an_empty_or_unusable_state(previous: dict[str, Any]) -> None:
    assert adjustment_section([], previous) == ({"queues": {}}, {"queues": {}})


def test_it_bounds_the_adjuster_state(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(harvester_log, "MAX_QUEUES", 2)
    text = "".join(line(f"2026-10-02 18:0{i}:00", "worker_adjuster", "DEBUG",
                        f"define_num_workers <site=Q{i}> set n_new_workers=0 since status=test")
                   for i in range(4))
    section, _ = adjustment_section([text.encode()], {})
    assert list(section["queues"]) == ["Q2", "Q3"]


# --- communicator and propagator -----------------------------------------------------------

def test_it_counts_failed_calls_by_api_path_and_class() -> None:
    section = failed_calls_section(chunks("new/panda-communicator.log"))
    assert section["failed"] == 4  # the traceback line quoting `failed to POST` is no call
    assert section["by_call_and_class"] == {
        "/api/v1/pilot/acquire_jobs SSLError": 2,
        "/api/v1/pilot/update_jobs_bulk SSLError": 1,
        "is_alive ReadTimeout": 1,  # no URL in a read timeout: the method names the call
    }
    assert section["last"] == {
        "at": "2026-10-02T18:24:05Z",
        "line": "2026-10-02 18:24:05,412 panda.log.communicator: ERROR    get_jobs "
                "<siteName=BNL_PanDA_1> " + SSL_OUTCOME + " Traceback (most recent call last):"}


def test_it_counts_the_old_communicators_post_and_put_failures() -> None:
    section = failed_calls_section(chunks("old/panda-communicator.log"))
    assert (section["failed"], section["by_call_and_class"]) == (2, {
        "/server/panda/getJob ConnectionError": 1, "upload_checkpoint ConnectionError": 1})
    assert section["last"]["at"] == "2020-03-02T10:02:00Z"


def test_it_counts_the_propagators_failed_calls() -> None:
    section = failed_calls_section(chunks("new/panda-propagator.log"))
    assert (section["failed"], section["by_call_and_class"]) == (1, {
        "/api/v1/harvester/report_worker_statistics SSLError": 1})
    assert section["last"]["line"].startswith("2026-10-02 18:23:08,300 panda.log.propagator: ")


def test_it_reports_no_failed_call_for_a_quiet_log() -> None:
    assert failed_calls_section([]) == {"failed": 0, "by_call_and_class": {}, "last": None}


# --- chunking and the line-by-line reference -----------------------------------------------

SECTIONS = [
    ("new/panda-job_fetcher.log", fetching_section),
    ("old/panda-job_fetcher.log", fetching_section),
    ("new/panda-submitter.log", submission_section),
    ("new/panda-worker_adjuster.log", lambda c: adjustment_section(c, {})),
    ("new/panda-communicator.log", failed_calls_section),
    ("new/panda-propagator.log", failed_calls_section),
]


@pytest.mark.parametrize(("name", "parse"), SECTIONS, ids=[n for n, _ in SECTIONS])
def test_it_gives_the_same_section_however_the_log_is_chunked(name: str, parse: Any) -> None:
    data = (LOGS / name).read_bytes()
    whole = parse([data])
    lines = data.splitlines(keepends=True)
    assert parse(lines) == whole
    for cut in range(1, len(lines)):
        assert parse([b"".join(lines[:cut]), b"".join(lines[cut:])]) == whole


def _fixture_logs(generation: str) -> dict[str, list[bytes]]:
    logs = {}
    for name in bench().LOGS:
        path = LOGS / generation / name
        if not path.exists():
            path = LOGS / "new" / name
        logs[name] = [path.read_bytes()]
    return logs


@pytest.mark.parametrize("generation", ["new", "old"])
def test_it_finds_what_the_line_by_line_reference_finds_in_the_fixtures(
        generation: str) -> None:
    generator = bench()
    logs = _fixture_logs(generation)
    assert generator.fast_sections(logs) == generator.reference_sections(logs)


@pytest.mark.parametrize("seed", range(12))
def test_it_finds_what_the_line_by_line_reference_finds_in_generated_logs(seed: int) -> None:
    generator = bench()
    rnd = random.Random(seed)
    debug = seed % 3 != 0  # a third of the runs log at INFO
    logs = {}
    for name in generator.LOGS:
        blocks = list(generator.generate(name, rnd.randint(20_000, 120_000), seed, debug=debug,
                                         tricky=0.2, new_share=rnd.random()))
        data = b"".join(blocks)  # empty for the adjuster at INFO
        cuts = sorted(rnd.sample(range(len(data)), min(3, len(data))))
        # chunk ends on a newline, as the tailer guarantees
        ends = [*sorted({data.rfind(b"\n", 0, c) + 1 for c in cuts} - {0}), len(data)]
        logs[name] = [data[a:b] for a, b in zip([0, *ends[:-1]], ends) if b > a]
    fast, ref = generator.fast_sections(logs), generator.reference_sections(logs)
    assert fast == ref
    assert sum(q["attempts"] for q in fast["fetching"]["queues"].values()) > 0
    assert fast["communicator"]["failed"] > 0


def test_it_counts_a_line_naming_two_classes_once_with_the_first() -> None:
    text = line("2026-10-02 18:23:05", "communicator", "ERROR",
                "get_jobs <siteName=Q> failed to POST with <class 'requests.exceptions."
                "ConnectionError'>:HTTPSConnectionPool(...): Max retries exceeded with url: "
                "/api/v1/pilot/acquire_jobs (Caused by <class 'socket.timeout'>: timed out)")
    section = failed_calls_section([text.encode()])
    assert (section["failed"], section["by_call_and_class"]) == (
        1, {"/api/v1/pilot/acquire_jobs ConnectionError": 1})


def test_its_docstring_cites_files_of_this_repository() -> None:
    """The formats it names are in the repository (it cited a file outside it, issue 19)."""
    import re as re_module
    from pathlib import Path

    from clusterwatch.reporter import harvester_log

    root = Path(__file__).resolve().parents[2]
    doc = harvester_log.__doc__ or ""
    cited = re_module.findall(r"(?:src|tests|docs)/[\w./]+[\w/]", doc)
    assert cited and all((root / path).exists() for path in cited), cited
    assert "shared/" not in doc
