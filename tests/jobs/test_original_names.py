"""examples/prometheus/jobs-original-names.yml, evaluated: the original exporter's names in
its units, recorded by promtool's rule unit tests from series the installed `clusterwatch
jobs collect` really printed, scrape after scrape, while the jobs' counters moved on."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path

from prometheus_client import CollectorRegistry

from clusterwatch.jobs.exporter import JobsCollector
from tests.jobs.exporter_process import SeriesKey, collect, series
from tests.jobs.fake_tree import ALICE, PAGE, Tree, user_name, v1_slurm_job, v2_job

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "examples" / "prometheus" / "jobs-original-names.yml"
# petricore's jobs_exporter (reference/job-metrics-field.md, 3.1): its 16 names.
ORIGINAL_NAMES = {
    "jobs_cpu_percent", "jobs_cpu_percent_per_core", "jobs_rss", "jobs_spawned_processes",
    "jobs_opened_files", "jobs_thread_count", "jobs_user_time", "jobs_system_time",
    "jobs_cpu_time_total", "jobs_cpu_time_core", "jobs_uses_scratch", "jobs_read_mb",
    "jobs_write_mb", "jobs_read_count", "jobs_write_count", "jobs_gpus_used",
}
MB = 1048576  # the original's MB: it divided bytes by 1048576
SCRAPES = 5  # at the shipped scrape interval: a 2-minute rate() window, edge to edge
INTERVAL_S = 30
TARGET = {"instance": "node001:9306", "job": "jobs"}  # what the scrape adds
GPU_UUIDS = ("GPU-11111111-2222-3333-4444-555555555555",
             "GPU-66666666-7777-8888-9999-000000000000")


def jobs_at(tree: Tree, step: int) -> None:
    """Job 42 (cgroup v1, two processes, two GPUs) and job 43 (v2), `step` scrapes in: each
    scrape interval, 42 burns 45 CPU seconds (30 of them user) on its two cores and 43
    burns 15, and both read and write at a steady pace."""
    v1_slurm_job(tree, "42", tasks={"step_0/task_0": [101], "step_1/task_0": [102]},
                 usage_ns=12_500_000_000 + 45_000_000_000 * step,
                 ticks=(1000 + 3000 * step, 200 + 600 * step),
                 percpu=(0, 2_000_000_000 + 20_000_000_000 * step,
                         3_000_000_000 + 25_000_000_000 * step, 0),
                 cpus="1-2")
    v2_job(tree, "system.slice/slurmstepd.scope", "job_43",
           tasks={"step_0/user/task_0": [103]},
           cpu_usec=(7_000_000 + 15_000_000 * step, 5_000_000 + 12_000_000 * step,
                     2_000_000 + 3_000_000 * step))
    tree.io(101, (MB * (4 + 10 * step), MB // 2 * (1 + 4 * step), 100 + 50 * step,
                  40 + 10 * step))
    tree.io(102, (MB // 2 * step, 0, 7 * step, 0))
    tree.io(103, (MB * step, 0, 10 * step, 5 * step))


def processes(tree: Tree) -> None:
    gpus = {"SLURM_JOB_ID": "42", "SLURM_JOB_GPUS": "0,1"}
    tree.process(101, threads=3, rss_pages=25_600, fds=["/a", "/b", "/c"], environ=gpus)
    tree.process(102, threads=5, rss_pages=12_800, fds=["/a", "/d"], environ=gpus)
    tree.process(103, threads=2, rss_pages=2_560, environ={"SLURM_JOB_ID": "43"})
    for minor, uuid in enumerate(GPU_UUIDS):  # no NVML here: the driver's own files
        tree.files(tree.proc / f"driver/nvidia/gpus/0000:{minor + 3}b:00.0",
                   {"information": f"Device Minor: \t {minor}\nGPU UUID: \t {uuid}\n"})


def scrapes(tree: Tree, need_binary: Callable[[str], str]) -> list[dict[SeriesKey, float]]:
    processes(tree)
    taken = []
    for step in range(SCRAPES):
        jobs_at(tree, step)
        result = collect(tree, need_binary)
        assert result.returncode == 0, result.stderr
        taken.append(series(result.stdout))
    return taken


def selector(name: str, labels: Mapping[str, str]) -> str:
    # json.dumps escapes as PromQL's double-quoted strings do (for these values: plainly).
    inside = ",".join(f"{key}={json.dumps(value)}" for key, value in sorted(labels.items()))
    return f"{name}{{{inside}}}"


def input_series(taken: list[dict[SeriesKey, float]]) -> list[dict[str, str]]:
    """Every series of the first scrape, with its values at each scrape, as Prometheus
    stores what it scrapes (the target's labels added)."""
    out = []
    for name, labels in taken[0]:
        values = [scrape[(name, labels)] for scrape in taken]
        out.append({"series": selector(name, {**dict(labels), **TARGET}),
                    "values": " ".join(repr(value) for value in values)})
    return out


def expected(taken: list[dict[SeriesKey, float]]) -> dict[str, list[tuple[dict[str, str],
                                                                          float]]]:
    """Each original name's samples at the last scrape, in the original's units, from what
    the fake jobs did (not from the exporter's figures)."""
    last = SCRAPES - 1
    user = user_name(ALICE)

    def job(jobid: str, **extra: str) -> dict[str, str]:
        return {**TARGET, "jobid": jobid, "user": user, "slurm_job": jobid, **extra}

    gpus = [dict(labels) for name, labels in taken[-1] if name == "jobs_gpu_info"]
    assert sorted(g["gpu"] for g in gpus) == ["0", "1"], gpus
    return {
        # 45 CPU seconds per 30 s on 2 cores; 15 per 30 s on 4 cores.
        "jobs_cpu_percent": [(job("42"), 150.0), (job("43"), 50.0)],
        "jobs_cpu_percent_per_core": [(job("42"), 75.0), (job("43"), 12.5)],
        "jobs_rss": [(job("42"), (25_600 + 12_800) * PAGE / MB),
                     (job("43"), 2_560 * PAGE / MB)],
        "jobs_spawned_processes": [(job("42"), 8.0), (job("43"), 2.0)],  # threads alive
        "jobs_opened_files": [(job("42"), 5.0), (job("43"), 1.0)],
        "jobs_thread_count": [(job("42"), 5.0), (job("43"), 2.0)],
        # USER_HZ ticks: cpuacct.stat's own numbers on v1; v2's microseconds / 10,000.
        "jobs_user_time": [(job("42"), 1000.0 + 3000 * last),
                           (job("43"), (5_000_000 + 12_000_000 * last) / 10_000)],
        "jobs_system_time": [(job("42"), 200.0 + 600 * last),
                             (job("43"), (2_000_000 + 3_000_000 * last) / 10_000)],
        "jobs_cpu_time_total": [(job("42"), 12.5 + 45 * last), (job("43"), 7.0 + 15 * last)],
        "jobs_cpu_time_core": [(job("42", core="1"), 2.0 + 20 * last),
                               (job("42", core="2"), 3.0 + 25 * last)],
        "jobs_read_mb": [(job("42"), 4 + 10 * last + 0.5 * last), (job("43"), 1.0 * last)],
        "jobs_write_mb": [(job("42"), 0.5 * (1 + 4 * last)), (job("43"), 0.0)],
        "jobs_read_count": [(job("42"), 100 + 50 * last + 7 * last), (job("43"), 10 * last)],
        "jobs_write_count": [(job("42"), 40.0 + 10 * last), (job("43"), 5.0 * last)],
        "jobs_gpus_used": [(job("42", gpu=g["gpu"], gpu_uuid=g["gpu_uuid"], gpuid=g["gpu"]),
                            1.0) for g in gpus],
    }


def unit_test_file(tmp_path: Path, taken: list[dict[SeriesKey, float]]) -> Path:
    at = f"{(SCRAPES - 1) * INTERVAL_S}s"
    tests = [{
        "interval": f"{INTERVAL_S}s",
        "input_series": input_series(taken),
        "promql_expr_test": [
            {"expr": name, "eval_time": at,
             "exp_samples": [{"labels": selector(name, labels), "value": value}
                             for labels, value in samples]}
            for name, samples in expected(taken).items()],
    }]
    path = tmp_path / "original-names-test.yml"  # JSON is YAML
    path.write_text(json.dumps({"rule_files": [str(RULES)], "evaluation_interval":
                                f"{INTERVAL_S}s", "tests": tests}, indent=1))
    return path


def test_it_records_the_original_names_in_their_units_from_real_scrapes(
        tree: Tree, tmp_path: Path, need_binary: Callable[[str], str]) -> None:
    promtool = need_binary("promtool")
    taken = scrapes(tree, need_binary)
    assert {name for name, _ in taken[0]} >= {"jobs_cpu_core_seconds_total", "jobs_gpu_info"}
    assert expected(taken).keys() == ORIGINAL_NAMES - {"jobs_uses_scratch"}
    checked = subprocess.run([promtool, "test", "rules", str(unit_test_file(tmp_path, taken))],
                             capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_it_ships_original_name_rules_that_promtool_accepts(
        need_binary: Callable[[str], str]) -> None:
    checked = subprocess.run([need_binary("promtool"), "check", "rules", str(RULES)],
                             capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS: 15 rules found" in checked.stdout


def test_it_records_each_other_original_name_once_from_exported_metrics(
        tmp_path: Path) -> None:
    text = RULES.read_text()
    records = re.findall(r"^\s*- record: (\S+)$", text, re.MULTILINE)
    assert sorted(records) == sorted(ORIGINAL_NAMES - {"jobs_uses_scratch"})
    registry = CollectorRegistry()
    registry.register(JobsCollector(tmp_path, tmp_path, nvml=None))
    exported = {family.name + ("_total" if family.type == "counter" else "")
                for family in registry.collect()}
    expressions = "\n".join(re.findall(r"^\s*expr: (.*(?:\n\s{10,}\S.*)*)", text, re.MULTILINE))
    used = set(re.findall(r"\b(jobs_[a-z_]+)\b", expressions))
    assert used and used <= exported, used - exported
