"""usage_watch's reading: one instant query per rule over every running job (counted at the
HTTP seam, however many jobs), the answers read per job (NaN kept for the rules to judge),
and the three queries evaluated by Prometheus' own engine (promtool) over exporter series."""

from __future__ import annotations

import math
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Optional

import pytest

from clusterwatch.http_client import HttpResponse, request
from clusterwatch.loopback.running_prometheus import RunningPrometheus
from clusterwatch.loopback.services import free_port
from clusterwatch.monitor.usage.metrics.prometheus_api import PrometheusError
from clusterwatch.monitor.usage.metrics.running_figures import (
    cpu_query,
    gpu_query,
    memory_query,
    read_running_figures,
)
from tests.components import need_binary

GiB = 1024**3


class Counted:
    def __init__(self) -> None:
        self.queries: list[bytes] = []

    def __call__(self, method: str, url: str, body: Optional[bytes],
                 headers: Optional[Mapping[str, str]], timeout: float,
                 max_body: int) -> HttpResponse:
        self.queries.append(body or b"")
        return request(method, url, body, headers, timeout, max_body)


def test_it_asks_one_query_per_rule_however_many_jobs_run() -> None:
    with RunningPrometheus() as prometheus:
        for number in range(300):
            prometheus.job(str(1000 + number), gpus={"GPU-a": 0.0}, cores_busy=1.0,
                           memory={"node01": (2.0 * GiB, 8.0 * GiB)})
        prometheus.job("77", gpus={"GPU-a": math.nan, "GPU-b": 0.5}, cores_busy=math.inf,
                       memory={"node01": (GiB, None), "node02": (3.0 * GiB, 4.0 * GiB)})
        counted = Counted()
        figures = read_running_figures(prometheus.url, 3600, 1.7e9, 5.0, counted)
    assert len(counted.queries) == 3 == len(prometheus.queries)
    assert len(figures) == 301
    assert figures["1000"].cores_busy == 1.0
    assert figures["1000"].gpu_peak_utilization == {"node01/GPU-a": 0.0}
    odd = figures["77"]
    assert math.isnan(odd.gpu_peak_utilization["node01/GPU-a"])  # kept: the rules judge it
    assert odd.cores_busy == math.inf
    assert odd.memory["node01"].limit_bytes is None
    assert odd.memory["node02"].used_bytes == 3.0 * GiB


def test_a_prometheus_that_fails_is_a_prometheus_error() -> None:
    with RunningPrometheus() as prometheus:
        prometheus.fail_with(503, b'{"status":"error","error":"overloaded"}')
        with pytest.raises(PrometheusError) as failed:
            read_running_figures(prometheus.url, 3600, 1.7e9, 5.0)
    assert failed.value.kind == "unavailable"
    with pytest.raises(PrometheusError) as down:
        read_running_figures(f"http://127.0.0.1:{free_port()}", 3600, 1.7e9, 5.0)
    assert down.value.kind == "down"


PROMTOOL_TEST = """\
rule_files: [{rules}]
evaluation_interval: 30s
tests:
  - interval: 30s
    input_series:
      - series: 'jobs_gpu_utilization_ratio{{jobid="11",instance="n1",gpu_uuid="G-a",user="u"}}'
        values: '0x130'
      - series: 'jobs_gpu_utilization_ratio{{jobid="11",instance="n1",gpu_uuid="G-b",user="u"}}'
        values: '0x100 0.4x30'
      - series: 'jobs_cpu_seconds_total{{jobid="11",instance="n1",user="u"}}'
        values: '0+15x130'
      - series: 'jobs_cpu_seconds_total{{jobid="12",instance="n1",user="v"}}'
        values: '0+60x130'
      - series: 'jobs_cpu_seconds_total{{jobid="12",instance="n2",user="v"}}'
        values: '0+30x130'
      - series: 'jobs_memory_rss_bytes{{jobid="12",instance="n1",user="v"}}'
        values: '7000x130'
      - series: 'jobs_memory_shmem_bytes{{jobid="12",instance="n1",user="v"}}'
        values: '500x130'
      - series: 'jobs_memory_limit_bytes{{jobid="12",instance="n1",user="v"}}'
        values: '8000x130'
      - series: 'jobs_memory_rss_bytes{{jobid="12",instance="n2",user="v"}}'
        values: '100x130'
    promql_expr_test:
      - expr: '{gpu}'
        eval_time: 65m
        exp_samples:
          - labels: '{{jobid="11",instance="n1",gpu_uuid="G-a"}}'
            value: 0
          - labels: '{{jobid="11",instance="n1",gpu_uuid="G-b"}}'
            value: 0.4
      - expr: '{cpu}'
        eval_time: 65m
        exp_samples:
          - labels: '{{jobid="11"}}'
            value: 0.5
          - labels: '{{jobid="12"}}'
            value: 3
      - expr: '{memory}'
        eval_time: 65m
        exp_samples:
          - labels: '{{jobid="12",instance="n1",figure="used"}}'
            value: 7500
          - labels: '{{jobid="12",instance="n1",figure="limit"}}'
            value: 8000
          - labels: '{{jobid="12",instance="n2",figure="used"}}'
            value: 100
"""


def test_prometheus_evaluates_the_three_queries_as_the_rules_read_them(tmp_path: Path) -> None:
    promtool = need_binary("promtool")
    rules = tmp_path / "none.yml"
    rules.write_text("groups: []\n")
    test = tmp_path / "watch_test.yml"
    quoted = {name: query.replace("'", "''") for name, query in
              (("gpu", gpu_query(3600)), ("cpu", cpu_query(3600)), ("memory", memory_query()))}
    test.write_text(PROMTOOL_TEST.format(rules=rules.name, **quoted))
    done = subprocess.run([promtool, "test", "rules", test.name], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
