"""Pushgateway mode against a real Pushgateway on loopback: one group per job, ended jobs'
groups deleted, also those a previous run left behind."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Callable

import pytest
from prometheus_client.parser import text_string_to_metric_families

from clusterwatch import cli
from clusterwatch.jobs.exporter import JobsCollector
from clusterwatch.jobs.push import Pusher, PushError
from clusterwatch.loopback.pushgateway import BINARY, groups, metrics_text, pushgateway
from clusterwatch.loopback.services import Service, free_port
from tests.jobs.fake_tree import ALICE, Tree, user_name, v1_slurm_job

pytestmark = pytest.mark.integration


@pytest.fixture
def gateway(tmp_path: Path, need_binary: Callable[[str], str]) -> Iterator[Service]:
    binary = need_binary(BINARY)
    with pushgateway(tmp_path / "pushgateway", binary=binary) as service:
        yield service


def job_groups(url: str) -> list[tuple[str, str, str]]:
    return sorted((g["job"], g["instance"], g.get("jobid", "")) for g in groups(url))


def settled_groups(url: str, expected: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """The groups once `expected` shows up (or after 5 s): the gateway answers a DELETE with
    202 Accepted and applies it a moment later."""
    deadline = time.monotonic() + 5
    while (found := job_groups(url)) != expected and time.monotonic() < deadline:
        time.sleep(0.05)
    return found


def samples(url: str, name: str) -> dict[tuple[str, str], float]:
    found = {}
    for family in text_string_to_metric_families(metrics_text(url)):
        for sample in family.samples:
            if sample.name == name:
                found[(sample.labels.get("jobid", ""), sample.labels["instance"])] = sample.value
    return found


def test_it_pushes_one_group_per_job_and_deletes_the_groups_of_ended_jobs(
        tree: Tree, gateway: Service) -> None:
    v1_slurm_job(tree, "42", tasks={"step_0/task_0": [101]})
    job_43 = v1_slurm_job(tree, "43")
    tree.process(101)
    pusher = Pusher(JobsCollector(tree.cgroup, tree.proc, nvml=None), gateway.url, "node1")
    assert pusher.push_once() == (2, 0)
    assert job_groups(gateway.url) == [
        ("jobs_exporter", "node1", ""), ("jobs_exporter", "node1", "42"),
        ("jobs_exporter", "node1", "43")]
    assert samples(gateway.url, "jobs_processes") == {("42", "node1"): 1, ("43", "node1"): 0}

    for directory in job_43.values():
        shutil.rmtree(directory)
    assert pusher.push_once() == (1, 1)
    expected = [("jobs_exporter", "node1", ""), ("jobs_exporter", "node1", "42")]
    assert settled_groups(gateway.url, expected) == expected
    assert samples(gateway.url, "jobs_cpu_seconds_total") == {("42", "node1"): 12.5}


def test_it_deletes_groups_a_previous_run_left_but_not_other_nodes_groups(
        tree: Tree, gateway: Service) -> None:
    v1_slurm_job(tree, "50")
    Pusher(JobsCollector(tree.cgroup, tree.proc, nvml=None), gateway.url, "node2").push_once()
    Pusher(JobsCollector(tree.cgroup, tree.proc, nvml=None), gateway.url, "node1").push_once()
    shutil.rmtree(tree.cgroup)
    tree.cgroup.mkdir()
    # A new process (exporter restarted): it never pushed job 50 itself.
    status = cli.main(["jobs", "push", "--gateway", gateway.url, "--instance", "node1",
                       "--cgroup-root", str(tree.cgroup), "--proc-root", str(tree.proc)])
    assert status == 0
    expected = [("jobs_exporter", "node1", ""), ("jobs_exporter", "node2", ""),
                ("jobs_exporter", "node2", "50")]
    assert settled_groups(gateway.url, expected) == expected


def test_it_labels_pushed_series_with_job_id_and_user(tree: Tree, gateway: Service) -> None:
    v1_slurm_job(tree, "42")
    Pusher(JobsCollector(tree.cgroup, tree.proc, nvml=None), gateway.url, "node1").push_once()
    text = metrics_text(gateway.url)
    line = next(line for line in text.splitlines() if line.startswith("jobs_cpus{"))
    assert 'jobid="42"' in line and f'user="{user_name(ALICE)}"' in line
    assert 'instance="node1"' in line and 'job="jobs_exporter"' in line


def test_it_fails_with_exit_1_when_the_gateway_is_unreachable(
        tree: Tree, capsys: pytest.CaptureFixture[str]) -> None:
    v1_slurm_job(tree, "42")
    url = f"http://127.0.0.1:{free_port()}"
    status = cli.main(["jobs", "push", "--gateway", url, "--cgroup-root", str(tree.cgroup),
                       "--proc-root", str(tree.proc)])
    assert status == 1
    assert "push to" in capsys.readouterr().err


def test_it_raises_push_error_naming_the_gateway(tree: Tree) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    pusher = Pusher(JobsCollector(tree.cgroup, tree.proc, nvml=None), url, "n")
    with pytest.raises(PushError, match=r"127\.0\.0\.1"):
        pusher.push_once()


def test_it_pushes_every_interval_until_sigterm(tree: Tree, gateway: Service) -> None:
    v1_slurm_job(tree, "42")
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": f"{root / 'src'}{os.pathsep}{root}"}
    process = subprocess.Popen(
        [sys.executable, "-m", "clusterwatch", "jobs", "push", "--gateway", gateway.url,
         "--interval", "0.2", "--instance", "node9", "--cgroup-root", str(tree.cgroup),
         "--proc-root", str(tree.proc)], stderr=subprocess.PIPE, text=True, env=env)
    try:
        expected = [("jobs_exporter", "node9", ""), ("jobs_exporter", "node9", "42")]
        assert settled_groups(gateway.url, expected) == expected
        first = samples(gateway.url, "push_time_seconds")
        deadline = time.monotonic() + 5
        while samples(gateway.url, "push_time_seconds") == first:
            assert time.monotonic() < deadline, "no second push"
            time.sleep(0.05)
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=10)
        assert process.returncode == 0, stderr
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
