"""benchmarks/bench_monitor.py: its records are valid and sized, and `--quick` runs end to end
(gunicorn, real HTTP, the pages) in a few seconds, so the benchmark cannot rot unnoticed."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from clusterwatch.monitor.ingest.validation import schema_problem
from clusterwatch.monitor.record.index import pushes_in, queues_in
from tests.benchmark_module import load_benchmark

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_monitor.py"
AT = dt.datetime(2026, 11, 29, 13, 30, tzinfo=dt.timezone.utc)


def _bench() -> Any:
    return load_benchmark("bench_monitor")


def test_it_lays_out_one_queue_for_everyone_and_the_rest_for_one_or_two() -> None:
    lay = _bench().layout(50, 200)
    servers = {queue: len(lay.servers(queue)) for queue in lay.queues}
    assert servers.pop("SITE000_PanDA") == 50
    assert set(servers.values()) == {1, 2}
    assert sorted(servers.values()).count(1) == 99
    assert all(6 <= len(names) <= 7 for names in lay.served)


def test_it_refuses_too_few_queues_for_the_layout() -> None:
    with pytest.raises(ValueError, match="2 \\* hosts"):
        _bench().layout(10, 20)


def test_it_builds_valid_records_of_the_asked_size_for_their_key() -> None:
    bench = _bench()
    lay = bench.layout(50, 200)
    record = bench.host_record(bench.example(), lay, 7, AT, 100, 200 * 1024)
    size = len(bench.encode(record))
    assert 200 * 1024 <= size < 201 * 1024
    assert schema_problem(record) is None
    assert record["host"] == lay.keys[7] and record["collected_at"] == "2026-11-29T13:30:00Z"
    assert queues_in(record) == set(lay.served[7])
    assert len(list(pushes_in(record))) == bench.RECENT_PUSHES


def test_it_posts_bodies_that_differ_only_where_a_later_record_would() -> None:
    bench = _bench()
    lay = bench.layout(5, 12)
    record = bench.host_record(bench.example(), lay, 2, AT, 10, 50_000)
    template = bench.body_template(record)
    same = json.loads(bench.body_at(template, lay, 2, 10, AT))
    assert same == json.loads(bench.encode(record))
    later = json.loads(bench.body_at(template, lay, 2, 11, AT + dt.timedelta(minutes=5)))
    assert later["collected_at"] == "2026-11-29T13:35:00Z"
    assert schema_problem(later) is None
    assert not {p["pandaid"] for p in later["submission"]["recent_pushes"]} & {
        p["pandaid"] for p in same["submission"]["recent_pushes"]}


def test_it_keeps_older_records_small_and_valid() -> None:
    bench = _bench()
    lay = bench.layout(5, 12)
    record = bench.history_record(bench.example(), lay, 1, AT, 3, 5)
    assert schema_problem(record) is None
    assert len(bench.encode(record)) < 10_000 and record["host"] == lay.keys[1]


def test_it_runs_the_quick_benchmark_through_gunicorn(tmp_path: Path) -> None:
    environ = {name: value for name, value in os.environ.items()
               if not name.startswith("CLUSTERWATCH_") and name != "DJANGO_SETTINGS_MODULE"}
    done = subprocess.run([sys.executable, str(BENCH), "--quick", "--workdir",
                           str(tmp_path / "bench")], capture_output=True, text=True,
                          timeout=180, env=environ, check=False)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    out = done.stdout
    for row in ("HTTP, sequential", "HTTP, 4 connections", "in-process (test client)"):
        line = next(text for text in out.splitlines() if text.strip().startswith(row))
        assert "201x" in line and "FAILED" not in line
    for page in ("queue, 1 harvester", "queue, 2 harvesters", "queue, all 5", "hosts (5",
                 "job "):
        assert any(text.strip().startswith(page) for text in out.splitlines()), page
    assert "target p99 < 50 ms" in out and "target p99 < 150 ms" in out
    assert "server CPU (app + db) <= 10 ms/req" in out
    assert any(text.startswith(("targets: all met", "targets missed: "))
               for text in out.splitlines())
    assert "load average" in out


def test_an_ingest_row_misses_its_cpu_target_on_server_and_database_cpu_together() -> None:
    bench = _bench()

    def row(server_s: float, db_s: float, each_s: float = 0.02) -> Any:
        timings = bench.Timings()
        for _ in range(100):
            timings.add(201, each_s)
        return bench.Row("HTTP, 4 connections", timings, bench.Load(server_cpu_s=server_s,
                                                                   db_cpu_s=db_s),
                         None, "", 50.0, 201, True, 10.0)

    assert row(0.9, 0.0).missed() == [] and "CPU pass (0.90 of target)" in bench.verdict(
        row(0.9, 0.0))
    assert row(0.6, 0.5).missed() == ["CPU"]  # 11 ms a post once PostgreSQL's CPU counts
    assert "CPU MISS (1.10 of target)" in bench.verdict(row(0.6, 0.5))
    assert row(1.2, 0.0, each_s=0.06).missed() == ["p99", "CPU"]


def test_it_reuses_a_database_built_with_the_same_sizes_only(tmp_path: Path) -> None:
    bench = _bench()
    args = bench.parse_args(["--quick"])
    built = bench.Built(history=115, history_pushes=575, latest_sizes=[204_800],
                        reasons_per_queue=[40], seconds=1.5, latest_at=AT, latest_seq=23)
    bench.save_meta(tmp_path, args, built, 42)
    again = bench.load_meta(tmp_path, bench.parse_args(["--quick", "--requests", "3"]))
    assert again is not None
    reused, posted = again
    assert posted == 42 and reused.reused and reused.latest_at == AT
    assert reused.latest_seq == 23 and reused.history == 115
    assert bench.load_meta(tmp_path, bench.parse_args(["--days", "1"])) is None
    assert bench.load_meta(tmp_path / "elsewhere", args) is None


def test_a_reused_database_is_posted_to_after_its_newest_record_and_before_now() -> None:
    bench = _bench()
    args = bench.parse_args(["--quick"])
    built = bench.Built(latest_at=AT, latest_seq=23, reused=True)
    assert bench.post_times(args, built, 0, None, AT) == (AT, dt.timedelta(seconds=300))
    now = AT + dt.timedelta(hours=1)
    newest = AT + dt.timedelta(minutes=50)  # an earlier run posted up to then
    origin, step = bench.post_times(args, built, 42, newest, now)
    assert origin == newest and dt.timedelta(seconds=1) <= step < dt.timedelta(seconds=300)
    lay = bench.layout(5, 12)
    templates = [bench.body_template(bench.host_record(bench.example(), lay, h, AT, 23, 20_000))
                 for h in range(5)]
    poster = bench.Poster(lay, templates, dict.fromkeys(lay.keys, "t"), built, origin, step,
                          posted=42, first_round=42 // 5)
    times: dict[str, list[str]] = {}
    for n in range(5 * args.post_rounds):
        _, path, body, _ = poster.request(n)
        times.setdefault(path, []).append(json.loads(body)["collected_at"])
    assert len(times) == 5
    for dates in times.values():  # the text's order is the time's
        assert dates == sorted(set(dates)) and bench.utc(origin) < dates[0] <= dates[-1]
        assert dates[-1] <= bench.utc(now)
    with pytest.raises(SystemExit, match="no room before now"):
        bench.post_times(args, built, 42, now - dt.timedelta(seconds=5), now)
