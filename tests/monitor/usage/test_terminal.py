"""`clusterwatch usage` computing locally (sacct + Prometheus, no monitor), through the
command line's own entry point: the reports of a lazy, a memory-hogging and a good job agree
with the API's documents, an array gets its summary, a two-node job its per-node lines, a
user's jobs their table; every bad input and source failure its exit status and one line."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from clusterwatch.cli import main
from tests.monitor.usage.page_support import client_of
from tests.monitor.usage.site import GiB, UsageSite

MiB = 1024**2
NOW = datetime.now(timezone.utc).replace(microsecond=0)


@pytest.fixture
def site(usage_site: UsageSite, tmp_path: Path,
         monkeypatch: pytest.MonkeyPatch) -> Iterator[UsageSite]:
    """The usage site with three ended jobs of alice's, and no system file in the way."""
    system = tmp_path / "usage.toml"
    system.write_text("[usage]\n")
    monkeypatch.setenv("CLUSTERWATCH_USAGE_CONFIG", str(system))
    for name in ("CLUSTERWATCH_MONITOR_URL", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("USER", "alice")
    monkeypatch.setenv("LOGNAME", "alice")
    start = NOW - timedelta(hours=5)
    for jobid, busy, memory, req_mem in (("501", 0.3, 3 * GiB, "4G"),     # lazy
                                         ("502", 2.0, 900 * MiB, "64G"),  # memory hog
                                         ("503", 1.95, 3 * GiB, "4G")):   # good
        begun, ended = usage_site.job(jobid, start=start, hours=1.0, cpus=2, req_mem=req_mem,
                                      name=f"job {jobid}")
        usage_site.measured(jobid, begun, ended, busy_cpus=busy, memory_bytes=memory)
        start += timedelta(minutes=70)
    yield usage_site


def usage(capsys: pytest.CaptureFixture[str], *arguments: str) -> tuple[int, str, str]:
    status = main(["usage", "--color", "never", *arguments])
    out, err = capsys.readouterr()
    return status, out, err


def codes(document: dict[str, Any]) -> set[str]:
    return {w["code"] for w in document["warnings"]}


@pytest.mark.django_db
def test_the_json_of_each_job_is_the_apis_document(site: UsageSite,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = usage(capsys, "--json", "501", "502", "503")
    assert (status, err) == (0, "")
    lazy, hog, good = json.loads(out)
    assert "low_cpu_efficiency" in codes(lazy) and lazy["cpu_efficiency"] == pytest.approx(
        0.15, abs=0.01)
    assert codes(hog) == {"memory_over_request"}
    assert codes(good) == set()
    alice = client_of("alice")
    for document in (lazy, hog, good):
        served = alice.get(f"/api/v1/jobs/{document['jobid']}/usage").json()
        # Peer ranks need the monitor's kept summaries: the one key a login node cannot
        # compute.
        served.pop("peer_ranks")
        assert served == document
    # One id: the document itself, not a list.
    status, out, _err = usage(capsys, "--json", "503")
    assert status == 0 and json.loads(out)["jobid"] == "503"


def test_the_text_report_says_asked_vs_used_and_what_to_change(
        site: UsageSite, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = usage(capsys, "501", "502")
    assert (status, err) == (0, "")
    lazy, hog = out.split("\n\nJob ")
    assert lazy.startswith("Job 501  job 501")
    assert re.search(r"CPU +\[[█#]{4,5} {25,26}\] +15\.\d %", lazy)
    assert re.search(r"GPUs +none asked", lazy)
    assert "asked 2 CPUs; used 0.30 CPUs on average" in lazy
    assert "! Low CPU efficiency" in lazy and "What to change:" in lazy
    assert "Memory over-requested" in hog and "--mem=2G" in hog
    assert "\x1b[" not in out  # --color never


def test_colour_only_on_request_or_on_a_terminal(site: UsageSite,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["usage", "501"]) == 0
    assert "\x1b[" not in capsys.readouterr().out  # captured: not a terminal
    assert main(["usage", "--color", "always", "501"]) == 0
    assert "\x1b[31m" in capsys.readouterr().out


def test_a_two_node_job_gets_a_line_per_node(site: UsageSite,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    begun, ended = site.job("600", start=NOW - timedelta(hours=3), cpus=4)
    site.measured("600", begun, ended, busy_cpus=2.0, memory_bytes=1 * GiB)
    t0 = begun.timestamp()
    scrapes = [(t0 + 30 * i, 0.5 * 30 * i) for i in range(121)]
    site.series("600", "jobs_cpu_seconds_total", scrapes, instance="node02")
    site.series("600", "jobs_memory_rss_bytes", [(t, 300.0 * MiB) for t, _v in scrapes],
                instance="node02")
    status, out, _err = usage(capsys, "600")
    assert status == 0
    assert re.search(r"node01 +CPU 2 h \(2\.00 busy on average\) +memory peak 1\.0 GiB", out)
    assert re.search(r"node02 +CPU 30 min \(0\.50 busy on average\) +memory peak 300\.0 MiB",
                     out)
    status, out, _err = usage(capsys, "--json", "600")
    nodes = json.loads(out)["per_node"]
    assert [n["node"] for n in nodes] == ["node01", "node02"]
    assert nodes[1]["cpu_used_s"] == pytest.approx(1800, rel=0.02)


def test_an_arrays_id_gives_one_summary_with_advice_for_the_array(
        site: UsageSite, capsys: pytest.CaptureFixture[str]) -> None:
    start = NOW - timedelta(hours=10)
    for task in range(1, 11):
        # The last task keeps the array's own number, as Slurm gives it.
        raw = "700" if task == 10 else str(700 + task)
        site.job(f"700_{task}", raw_id=raw, start=start, hours=0.25 + task / 40, cpus=1,
                 req_mem="16G", max_rss=f"{900 + 20 * task}M", total_cpu="00:10:00",
                 state="FAILED" if task == 3 else "COMPLETED")
    status, out, err = usage(capsys, "700")
    assert (status, err) == (0, "")
    assert out.startswith("Array 700 of alice: 10 tasks (9 COMPLETED, 1 FAILED)")
    assert re.search(r"Peak memory +p10 +920\.0 MiB +p50 +1000\.0 MiB +p90 +1\.1 GiB", out)
    assert "ask --mem=1300M" in out  # p90 1,080 MiB + 20 %, up to whole hundreds of MiB
    assert "ask --time=00:36:00" in out  # the longest, 30 min, + 20 %: 2 h were asked
    status, out, _err = usage(capsys, "--json", "700")
    array = json.loads(out)
    assert array["summary"]["states"] == {"COMPLETED": 9, "FAILED": 1}
    assert [t["jobid"] for t in array["tasks"]] == [f"700_{n}" for n in range(1, 11)]
    assert [a["option"] for a in array["summary"]["advice"]] == ["--mem=1300M",
                                                                 "--time=00:36:00"]
    status, out, _err = usage(capsys, "--tasks", "700")
    assert status == 0 and out.count("\n700_") == 10
    # A task by its own id is a job, not the array.
    status, out, _err = usage(capsys, "700_3")
    assert status == 0 and out.startswith("Job 700_3")


def test_the_table_of_a_users_jobs_with_states_and_a_parsable_form(
        site: UsageSite, capsys: pytest.CaptureFixture[str]) -> None:
    site.job("800", start=NOW - timedelta(hours=1), state="TIMEOUT", name="a|b\x1b[2J")
    site.job("801", user="bob", start=NOW - timedelta(hours=1))
    status, out, _err = usage(capsys)
    lines = out.splitlines()
    assert status == 0 and lines[0].split() == ["JobID", "State", "Elapsed", "TimeEff",
                                                "CPUEff", "MemEff", "GPUEff", "Name"]
    assert [line.split()[0] for line in lines[1:]] == ["800", "503", "502", "501"]
    assert "801" not in out and "\x1b" not in out  # bob's; the name's escape
    status, out, _err = usage(capsys, "--state", "timeout", "--parsable")
    assert out.splitlines() == ["JobID|State|Elapsed|TimeEff|CPUEff|MemEff|GPUEff|Name",
                                "800|TIMEOUT|3600|0.5000|0.5000|0.0244||a b [2J"]
    status, out, _err = usage(capsys, "--user", "bob", "--days", "2", "--json")
    assert [j["jobid"] for j in json.loads(out)["jobs"]] == ["801"]
    status, out, _err = usage(capsys, "--state", "FAILED")
    assert status == 0 and out.startswith("No jobs of alice since ")


def test_a_job_name_cannot_drive_the_terminal(site: UsageSite,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    site.job("900", start=NOW - timedelta(hours=2), name="\x1b]0;pwned\x07\x1b[31mred\r\nx")
    status, out, _err = usage(capsys, "900")
    assert status == 0 and "\x1b" not in out and "\x07" not in out and "\r" not in out


@pytest.mark.parametrize(("arguments", "message"), [
    (["12a"], "not a job id: '12a'"),
    (["123_[1-5]"], "not a job id"),
    (["501", "--user", "bob"], "--user is for the table of a user's jobs, not with JOBID"),
    (["--tasks"], "--tasks is for an array's id"),
    (["--days", "0"], "--days must be 1 to 366, not 0"),
    (["--since", "tomorrow"], "--since: not a date: 'tomorrow'"),
    (["--since", "2999-01-01"], "is in the future"),
    (["--state", "DONE"], "--state: not a Slurm job state: 'DONE'"),
    (["--user", "a/b"], "not a user name"),
])
def test_bad_arguments_are_exit_2_with_one_line(site: UsageSite,
                                                capsys: pytest.CaptureFixture[str],
                                                arguments: list[str], message: str) -> None:
    status, out, err = usage(capsys, *arguments)
    assert (status, out) == (2, "")
    assert message in err and err.count("\n") == 1


def test_an_unknown_job_is_exit_1_and_the_others_are_still_reported(
        site: UsageSite, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = usage(capsys, "77", "503")
    assert status == 1 and out.startswith("Job 503")
    assert err == "clusterwatch: job 77 is unknown to accounting\n"


def test_failed_sources_are_exit_1_in_one_line(site: UsageSite,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    site.prometheus.fail_with(503, b"down")
    status, out, err = usage(capsys, "503")
    assert (status, out) == (1, "")
    assert err.startswith("clusterwatch: job 503: Prometheus") and err.count("\n") == 1
    site.fail("sacct: error: Problem talking to the database: Connection refused")
    status, out, err = usage(capsys)
    assert (status, out) == (1, "")
    assert "Problem talking to the database" in err and err.count("\n") == 1


def test_configuration_errors_are_exit_78(site: UsageSite, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLUSTERWATCH_SACCT", str(tmp_path / "missing"))
    status, _out, err = usage(capsys, "503")
    assert status == 78 and "sacct program not found" in err
    monkeypatch.delenv("CLUSTERWATCH_PROMETHEUS_URL")
    status, _out, err = usage(capsys, "503")
    assert status == 78 and "no source of figures" in err
    system = tmp_path / "bad.toml"
    for text, said in (("[usage]\nprometheus = 'x'\n", "[usage] has no key 'prometheus'"),
                       ("[usage\n", "bad.toml"), ("[other]\n", "unknown table or key 'other'"),
                       ("[usage]\nmonitor_url = 'ftp://x'\n", "CLUSTERWATCH_MONITOR_URL must")):
        system.write_text(text)
        monkeypatch.setenv("CLUSTERWATCH_USAGE_CONFIG", str(system))
        status, _out, err = usage(capsys, "503")
        assert status == 78 and said in err, text
    monkeypatch.setenv("CLUSTERWATCH_USAGE_CONFIG", str(tmp_path / "absent.toml"))
    status, _out, err = usage(capsys, "503")
    assert status == 78 and "absent.toml does not exist" in err


def test_the_system_file_configures_a_login_node(site: UsageSite, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    system = tmp_path / "login.toml"
    system.write_text(f"[usage]\nprometheus_url = {site.prometheus.url!r}\n"
                      f"sacct = {str(site.sacct)!r}\nscrape_interval_s = 30\n")
    monkeypatch.setenv("CLUSTERWATCH_USAGE_CONFIG", str(system))
    monkeypatch.delenv("CLUSTERWATCH_PROMETHEUS_URL")
    monkeypatch.delenv("CLUSTERWATCH_SACCT")
    status, out, _err = usage(capsys, "--json", "503")
    assert status == 0 and json.loads(out)["cpu_efficiency"] == pytest.approx(0.975, abs=0.01)
    # The environment wins over the file.
    monkeypatch.setenv("CLUSTERWATCH_SACCT", str(tmp_path / "missing"))
    assert usage(capsys, "503")[0] == 78
