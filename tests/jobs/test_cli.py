"""`clusterwatch jobs collect|serve|push` as commands: output, signals, exit statuses."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from clusterwatch import cli
from clusterwatch.jobs.serve import parse_listen
from tests.jobs.exporter_process import served
from tests.jobs.fake_tree import ALICE, Tree, user_name, v1_slurm_job, v2_job

ROOT = Path(__file__).resolve().parents[2]


def fixture_jobs(tree: Tree) -> None:
    v1_slurm_job(tree, "42", tasks={"step_0/task_0": [101]})
    v2_job(tree, "system.slice/slurmstepd.scope", "job_43", tasks={"step_0/user/task_0": [102]})
    tree.process(101, fds=["/scratch/alice/f"])
    tree.process(102, environ={"SLURM_JOB_ID": "43"})


def run_cli(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
    return subprocess.run([sys.executable, "-m", "clusterwatch", *args], capture_output=True,
                          text=True, timeout=timeout, env=env, check=False)


def test_it_prints_one_collection_that_parses(
        tree: Tree, capsys: pytest.CaptureFixture[str]) -> None:
    fixture_jobs(tree)
    status = cli.main(["jobs", "collect", "--cgroup-root", str(tree.cgroup), "--proc-root",
                       str(tree.proc), "--scratch", "/scratch", "--scratch", "/work"])
    assert status == 0
    families = {f.name: f for f in text_string_to_metric_families(capsys.readouterr().out)}
    cpu = {s.labels["jobid"]: s.value for s in families["jobs_cpu_seconds"].samples}
    assert cpu == {"42": 12.5, "43": 7.0}
    assert families["jobs_cpu_seconds"].type == "counter"
    scratch = {(s.labels["jobid"], s.labels["user"]): s.value
               for s in families["jobs_uses_scratch"].samples}
    assert scratch == {("42", user_name(ALICE)): 1.0, ("43", user_name(ALICE)): 0.0}
    assert families["jobs_exporter_jobs"].samples[0].value == 2


def test_it_serves_metrics_until_sigterm(
        tree: Tree, need_binary: Callable[[str], str], tmp_path: Path) -> None:
    fixture_jobs(tree)
    with served(tree, need_binary, tmp_path) as exporter:  # then SIGTERM: must exit 0
        status, _headers, body = exporter.request()
        assert status == 200, exporter.log()
        families = {f.name: f for f in text_string_to_metric_families(body.decode())}
        assert {s.labels["jobid"] for s in families["jobs_processes"].samples} == {"42", "43"}
    assert "SIGTERM received" in exporter.log()


def test_it_exits_0_on_sigint_too(
        tree: Tree, need_binary: Callable[[str], str], tmp_path: Path) -> None:
    with served(tree, need_binary, tmp_path) as exporter:
        # An answer first: serve installs its signal handlers after it listens.
        assert exporter.request()[0] == 200, exporter.log()
        exporter.process.send_signal(signal.SIGINT)
        assert exporter.process.wait(timeout=10) == 0, exporter.log()


def test_it_fails_with_exit_1_when_the_port_is_taken(tree: Tree) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_cli("jobs", "serve", "--listen", f"127.0.0.1:{port}", "--cgroup-root",
                         str(tree.cgroup), "--proc-root", str(tree.proc))
    assert result.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr


@pytest.mark.parametrize(("args", "message"), [
    (["serve", "--listen", "9306"], "--listen"),
    (["serve", "--listen", "::1:9306"], "brackets"),
    (["serve", "--listen", "host:99999"], "--listen"),
    (["collect", "--scratch", "scratch"], "absolute"),
    (["collect", "--cgroup-root", "/nonexistent/cgroup"], "not a directory"),
    (["collect", "--proc-root", "/nonexistent/proc"], "not a directory"),
    (["collect", "--scheduler", "pbs"], "invalid choice"),
    (["push", "--gateway", "http://127.0.0.1:1", "--interval", "0"], "positive"),
    (["push", "--gateway", "ftp://gateway"], "http(s) URL"),
    (["push"], "--gateway"),
])
def test_it_exits_2_on_bad_options(
        tree: Tree, args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    roots = ["--cgroup-root", str(tree.cgroup), "--proc-root", str(tree.proc)]
    try:  # a repeated option's last value wins: the case's own roots override the fixture's
        status = cli.main(["jobs", args[0], *roots, *args[1:]])
    except SystemExit as exit_:
        status = int(exit_.code or 0)
    assert status == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(("text", "expected"), [
    (":9306", ("", 9306)), ("127.0.0.1:0", ("127.0.0.1", 0)), ("[::1]:9306", ("::1", 9306)),
    ("node1:80", ("node1", 80)),
])
def test_it_parses_listen_addresses(text: str, expected: tuple[str, int]) -> None:
    assert parse_listen(text) == expected


def test_it_explains_itself_in_help() -> None:
    result = run_cli("jobs", "serve", "--help")
    assert result.returncode == 0
    for option in ("--listen", "--cgroup-root", "--proc-root", "--scratch", "--scheduler"):
        assert option in result.stdout
    assert ":9306" in result.stdout
