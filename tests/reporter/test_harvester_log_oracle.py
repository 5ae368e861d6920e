"""The harvester log parsers against themselves as they were before issue 23 (the oracle,
kept as text from commit harvester_log_support.ORACLE_REV): the same sections, key order included,
on generated logs full of hostile lines (CRLF, NUL bytes, invalid UTF-8, tokens running into
the next line, lines that look like records but are not, very long lines) cut into chunks
anywhere, mid-line too."""

from __future__ import annotations

import json
import random
import subprocess
from typing import Any

import pytest

from clusterwatch.reporter import harvester_log

from .harvester_log_support import ORACLE_REV, PARSERS, ROOT, bench, oracle, oracle_text


def _sections(parsers: Any, chunks: list[bytes]) -> dict[str, Any]:
    return {
        "fetching": parsers.fetching_section(chunks),
        "submission": parsers.submission_section(chunks),
        "adjustment": parsers.adjustment_section(chunks, {})[0],
        "calls": parsers.failed_calls_section(chunks),
    }


# --- the hostile log -----------------------------------------------------------------------

STAMPS = ["2026-10-02 18:23:05,123", "2020-03-02 10:00:01,000", "2026-10-02 18:23:0,123",
          "2026-1-02 18:23:05,123", "2026-10-02T18:23:05,123"]
ODD_HEADS = ["{} a>b:  : WARN\trun ", "{} log: : INFO run ", "{} log:INFO run ",
             "{} x: INFO  a<b ", "{} :: INFO run "]
ODD_TOKENS = ["<queueName=>", "<queueName=Q\udce9>", "<queue=AGLT2>", "<id=x>", "<id=x queue=>",
              "<site=Q\r>", ":", "<queueName=BNL_PanDA_1", "<id=x queue=Q", "<site=Q"]
TOOK = ["  : took 1.234 sec", " : took 0.1 sec  \r", ": took 1.2.3 sec", ": took sec",
        "  : took 0.5 sec : took 0.2 sec", ": took 0.3 sec x", "\t: took 2 sec\t", ""]
OUTCOMES = ["OK", "no jobs in PanDA", "No jobs in PanDA", "StatusCode=20", "StatusCode=500 x",
            "StatusCode=503 <html>busy</html>", "no need to get jobs", "database timeout",
            "failed to POST with <class 'requests.exceptions.SSLError'>:Max retries exceeded "
            "with url: /api/v1/pilot/acquire_jobs (Caused by SSLError()) Traceback (most "
            "recent call last):", "", "  ", "\xa0OK\xa0", "x" * 700, "Traceback (most recent "
            "call last):", "OK <class 'a.B'>"]
# (head, tokens, messages) of each log's records, and of lines that only look like them
FAMILIES = [
    ("{} panda.log.job_fetcher: INFO     run ",
     ["<queueName=BNL_PanDA_1>", "<queueName=UM_GREX>", "<id=h_2911-7f>"], [
         "getting {n} jobs for prodSourceLabel=managed rtype=None",
         "getting {n} jobs for prodSourceLabel user", "getting {n} jobs", "getting {n}jobs",
         "got {n} jobs for prodSourceLabel=test rtype=None with {outcome}{took}",
         "got {n} jobs for prodSourceLabel= rtype= with {outcome}{took}",
         "got {n} jobs with {outcome}{took}", "got {n} jobs  with {outcome}", "got {n} queues",
         "got {n} jobs for prodSourceLabel=managed with {outcome}"]),
    ("{} panda.log.submitter: DEBUG    run ",
     ["<id=submitter-h_1-7f queue=BNL_PanDA_1 jtype=managed>",
      "<id=x queue=UM_GREX rtype=SCORE ptype=PR>", "<id=submitter-h_1-7f>"], [
         "workers status: {{'nQueue': {n}, 'nReady': 1, 'nRunning': 7, 'nNewWorkers': 2}}",
         "workers status: {{'nReady': 0}}", "workers status:{{}}", "got {n} job chunks",
         "submitting {n} workers", "submitting {n}", "done submitting {n} workers : took 4 sec",
         "submitted a workerID={n} for PandaID=6{n}", "submitted a workerID={n} for PandaID=",
         "failed to submit a workerID={n} with schedd not reachable",
         "failed to register a worker for PandaID={n}", "failed to register a workerID={n}",
         "nJobsPerWorker=1", "sent jobs to workerID={n} with True", "done"]),
    ("{} panda.log.worker_adjuster: DEBUG    define_num_workers ",
     ["<site=BNL_PanDA_1>", "<site=UM_GREX>"], [
         "No n_new_workers since n_queue({n})>=n_queue_limit_per_rt(4)",
         "No nNewWorkers since nQueue({n}) + nReady(0) + nRunning(412) >= maxWorkers(400)",
         "No n_new_workers since n_queue({n}) + n_ready(0) >= max_workers(400)",
         "limiting max_queued_workers to min(n_activated={n}, queue_limit=None)",
         "limiting maxQueuedWorkers to min(n_activated={n}, queue_limit=7)",
         "set n_new_workers=0 since status=offline{took}", "set nNewWorkers=0"]),
    ("{} panda.log.communicator: ERROR    get_jobs ",
     ["<siteName=MWT2>", ":", "<id=h_2911-7f PandaID=6>"], [
         "failed to POST with <class 'requests.exceptions.SSLError'>:Max retries exceeded "
         "with url: /api/v1/pilot/acquire_jobs?x=1 (Caused by <class 'socket.timeout'>)",
         "failed to UPLOAD with <class 'ReadTimeout'>: with url: /a with url: /b",
         "failed to put with <class 'requests.ConnectionError'>:",
         "failed to GET with <class ''>", "update done with <class 'x.Y'>",
         "failed to update worker stats (bulk) for Q err=failed to post with <class 'x.Y'>:z"]),
]
# (lone surrogates are written as the invalid UTF-8 bytes they escape)
GLITCHES = ["\r", "\x00", "\udcff", "\udcc3", "\udce2\udc80", "\n", ">", "<", " ", ":", "\t",
            "\x0b", "> got 3 jobs with OK", "> submitting 2 workers", " <class 'a.B'>"]


def _line(rnd: random.Random) -> str:
    head, tokens, messages = rnd.choice(FAMILIES)
    if rnd.random() < 0.15:
        head = rnd.choice(ODD_HEADS)
    token = rnd.choice(ODD_TOKENS if rnd.random() < 0.15 else tokens)
    message = rnd.choice(messages if rnd.random() < 0.9 else rnd.choice(FAMILIES)[2]).format(
        n=rnd.choice(["0", "1", "12", "007", str(rnd.randint(0, 10**7))]),
        outcome=rnd.choice(OUTCOMES), took=rnd.choice(TOOK))
    text = head.format(rnd.choice(STAMPS if rnd.random() < 0.2 else STAMPS[:2])) + token
    text += " " + message
    if rnd.random() < 0.02:  # very long
        text = text.replace(" ", " " + "y" * rnd.randint(2000, 9000) + " ", 1)
    for _ in range(rnd.choice([0, 0, 0, 1, 2])):
        at = rnd.randrange(len(text) + 1)
        text = text[:at] + rnd.choice(GLITCHES) + text[at + rnd.choice([0, 0, 1]):]
    if rnd.random() < 0.08:  # a continuation line: no timestamp, may hold a marker
        text = "    " + text[rnd.randrange(len(text)):]
    return text + rnd.choice(["\n", "\n", "\n", "\r\n"])


def hostile_log(seed: int, lines: int) -> bytes:
    rnd = random.Random(seed)
    return "".join(_line(rnd) for _ in range(lines)).encode("utf-8", "surrogateescape")


def cut_anywhere(data: bytes, seed: int) -> list[bytes]:
    """Chunks cut at random places, some mid-line, some empty."""
    rnd = random.Random(seed)
    cuts = sorted(rnd.sample(range(len(data) + 1), min(len(data) + 1, rnd.randint(0, 12))))
    ends = [*cuts, len(data)]
    return [data[a:b] for a, b in zip([0, *ends], ends)]


def _same(chunks: list[bytes]) -> None:
    """The sections and their key order are the oracle's."""
    want, got = _sections(oracle(), chunks), _sections(harvester_log, chunks)
    assert json.dumps(got) == json.dumps(want)


@pytest.mark.parametrize("seed", range(40))
def test_it_finds_what_the_parsers_before_issue_23_found_in_hostile_logs(seed: int) -> None:
    data = hostile_log(seed, 600)
    _same([data])
    _same(cut_anywhere(data, seed))


@pytest.mark.parametrize("seed", range(6))
def test_it_finds_what_the_parsers_before_issue_23_found_in_generated_logs(seed: int) -> None:
    generator = bench()
    rnd = random.Random(seed)
    for name in generator.LOGS:
        data = b"".join(generator.generate(name, 60_000, seed, debug=seed % 3 != 0, tricky=0.3,
                                       new_share=rnd.random()))
        _same(cut_anywhere(data, seed))


def test_the_hostile_log_holds_every_kind_of_record() -> None:
    """So that the comparisons above compare something."""
    data = b"".join(hostile_log(seed, 600) for seed in range(40))
    sections = _sections(harvester_log, [data])
    fetching = sections["fetching"]["queues"].values()
    assert sum(q["attempts"] for q in fetching) > 100
    assert any(q["failing_since"] for q in fetching) and any(q["last_ok_at"] for q in fetching)
    assert any(q["last"]["asked"] is not None for q in fetching)
    submission = sections["submission"]
    assert len(submission["recent_pushes"]) == 20
    assert any(q["workers_status"] for q in submission["queues"].values())
    assert any(q["job_chunks"] for q in submission["queues"].values())
    assert any(q["submit_failures"] for q in submission["queues"].values())
    assert sections["adjustment"]["queues"] and sections["calls"]["failed"] > 20



@pytest.mark.parametrize("name", ["harvester_lines.py", "harvester_log.py"])
def test_the_oracle_is_the_parsers_of_its_commit(name: str) -> None:
    """Kept as text so that the suite needs no history; the same bytes as in the history,
    where a clone has it (a shallow one, or a source archive, has not)."""
    if subprocess.run(["git", "-C", str(ROOT), "cat-file", "-e", f"{ORACLE_REV}^{{commit}}"],
                      capture_output=True, check=False).returncode != 0:
        pytest.skip(f"commit {ORACLE_REV} is not in this checkout's history")
    shown = subprocess.run(["git", "-C", str(ROOT), "show", f"{ORACLE_REV}:{PARSERS}/{name}"],
                           capture_output=True, text=True, check=True)
    assert oracle_text(name) == shown.stdout
