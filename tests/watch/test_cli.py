"""`clusterwatch watch ...` through the real entry point: verbs, output, exit statuses, secrets."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import sysconfig
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from clusterwatch.cli import main
from clusterwatch.loopback.fake_condor import recorded_argv, write_fake_condor_status
from clusterwatch.loopback.fake_prometheus import error_response, vector_response
from clusterwatch.loopback.http_recorder import HttpRecorder, SlackResponses
from clusterwatch.watch.exercise import SCENARIOS

from .program import child_env
from .support import TOKEN, Pool, cli
from .support import watch_argv as watch

W1, W2, W3 = "worker1.example.org", "worker2.example.org", "worker3.example.org"
G1, G2, G3 = "192.0.2.10:9100", "192.0.2.11:9100", "192.0.2.12:9100"
TRANSITION = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ (ALERT|RECOVER) (node|gpu):\S+ "
                        r"\((missing|stale|present|fresh)\) incident [0-9a-f]+$")


def use_secret_webhook(pool: Pool, timeout_s: float = 0.5) -> str:
    """A Slack channel whose URL carries TOKEN, with a short timeout for the timeout case."""
    url = f"{pool.slack.url}/services/T0CWTEST/B0CWTEST/{TOKEN}"
    path = pool.config_dir / "slack_webhook"
    path.write_text(url + "\n")
    path.chmod(0o600)
    pool.write_toml(f'[[channels]]\ntype = "slack"\nwebhook_file = "slack_webhook"\n'
                    f"timeout_s = {timeout_s}\n")
    return url


def healthy(pool: Pool, stale: Sequence[str] = ()) -> float:
    """Every node present; every GPU file fresh except those in `stale` (2000 s old)."""
    now = time.time()
    pool.set_machines([W1, W1, W2])
    pool.set_gpu_mtimes({g: now - (2000 if g in stale else 20) for g in (G1, G2)}, now)
    return now


def transitions(out: str) -> list[tuple[str, str, str]]:
    lines = out.splitlines()
    assert all(TRANSITION.match(line) for line in lines), out
    return [(line.split()[2].lower(), line.split()[3], line.split()[4]) for line in lines]


def incident_of(out: str, target: str) -> str:
    [line] = [line for line in out.splitlines() if f" {target} " in line]
    return line.rsplit(" ", 1)[1]


def run_child(args: Sequence[str], home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "clusterwatch", *args], env=child_env(home),
                          capture_output=True, text=True, timeout=30, check=False)


# --- help -------------------------------------------------------------------------------------

def test_it_prints_the_top_level_help_with_exit_statuses(capsys) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    out, err = capsys.readouterr()
    assert info.value.code == 0 and err == ""
    assert "watch" in out and "textfile" in out
    assert re.search(r"0 ok .*1 failure, 2 usage error,\s+78 configuration error", out, re.S)


def test_it_prints_the_watch_help_naming_inventories_and_exit_statuses(capsys) -> None:
    with pytest.raises(SystemExit) as info:
        main(["watch", "--help"])
    out, err = capsys.readouterr()
    assert info.value.code == 0 and err == ""
    for word in ("expected_nodes", "gpu_instances", "empty one disables", "slack_webhook",
                 "mode 600", "watch.toml", "~/.config/htcondor-watch",
                 "~/.local/state/htcondor-watch", "discover", "status", "redeliver",
                 "exercise"):
        assert word in out, word
    assert re.search(r"exit status: 0 .*1 a source failed.*2 usage error, 78 configuration",
                     out, re.S)


def test_it_exits_2_with_usage_on_stderr_without_a_part(capsys) -> None:
    with pytest.raises(SystemExit) as info:
        main([])
    out, err = capsys.readouterr()
    assert info.value.code == 2 and out == ""
    assert err.startswith("usage: clusterwatch")


def test_it_exits_2_for_an_unknown_verb(capsys) -> None:
    with pytest.raises(SystemExit) as info:
        main(["watch", "inspect"])
    out, err = capsys.readouterr()
    assert info.value.code == 2 and out == "" and "inspect" in err


# --- the poll ---------------------------------------------------------------------------------

@pytest.mark.parametrize("verb", [[], ["poll"]])
def test_it_runs_one_poll_and_prints_new_transitions(pool: Pool, capsys,
                                                     verb: list[str]) -> None:
    healthy(pool, stale=[G1])
    status, out, err = cli(capsys, *watch(pool, *verb))
    assert status == 0  # alerted, and still 0
    assert transitions(out) == [("alert", f"gpu:{G1}", "(stale)")]
    assert f"ALERT gpu:{G1} (stale)" in err  # logged as well, to stderr
    assert recorded_argv(pool.bin_dir) == [["-af", "Machine", "LastHeardFrom"]]
    assert len(pool.prometheus.queries) == 1
    assert incident_of(out, f"gpu:{G1}") in pool.slack.requests[0].json()["text"]

    status, out, _ = cli(capsys, *watch(pool, *verb))
    assert status == 0 and out == ""  # nothing new: the incident is already open


def test_it_exits_0_and_prints_nothing_when_all_is_well(pool: Pool, capsys) -> None:
    healthy(pool)
    status, out, err = cli(capsys, *watch(pool))
    assert (status, out, err) == (0, "", "")
    assert pool.slack.requests == []


def test_it_exits_1_when_condor_status_fails(pool: Pool, capsys) -> None:
    broken = write_fake_condor_status(pool.root / "broken", pool.machines_file, exit_code=1)
    healthy(pool, stale=[G1])
    status, out, err = cli(capsys, *watch(pool, condor=broken))
    assert status == 1
    assert transitions(out) == [("alert", f"gpu:{G1}", "(stale)")]  # the GPU check went on
    assert "condor_status" in err and "unknown" in err


def test_it_exits_1_when_prometheus_fails(pool: Pool, capsys) -> None:
    healthy(pool)
    pool.prometheus.set_response(error_response("overloaded", "unavailable"), status=503)
    status, out, err = cli(capsys, *watch(pool))
    assert status == 1 and out == ""
    assert "Prometheus" in err and "503" in err


def test_it_logs_with_journald_priorities_under_systemd(pool: Pool, capsys,
                                                       monkeypatch) -> None:
    monkeypatch.setenv("JOURNAL_STREAM", "8:12345")
    pool.prometheus.set_response(error_response("overloaded", "unavailable"), status=503)
    status, out, err = cli(capsys, *watch(pool))
    assert status == 1 and out == ""
    assert any(line.startswith("<3>") and "Prometheus" in line for line in err.splitlines())


# --- status and dead letters ------------------------------------------------------------------

def test_it_shows_incidents_queues_and_dead_letters_in_status(pool: Pool, capsys) -> None:
    status, out, _ = cli(capsys, *watch(pool, "status"))
    assert status == 0 and out.startswith("last poll: never")

    pool.slack.set_default(SlackResponses.no_service())
    healthy(pool, stale=[G1])
    status, first, err = cli(capsys, *watch(pool))
    assert status == 0
    assert "permanently rejected (http_404_no_service)" in err and "dead letter" in err
    healthy(pool, stale=[G1])
    assert cli(capsys, *watch(pool))[:2] == (0, "")
    pool.slack.set_default(SlackResponses.server_error())
    now = healthy(pool, stale=[G1, G2])
    status, second, _ = cli(capsys, *watch(pool))
    assert status == 0 and transitions(second) == [("alert", f"gpu:{G2}", "(stale)")]
    dead_id, pending_id = incident_of(first, f"gpu:{G1}"), incident_of(second, f"gpu:{G2}")

    status, out, err = cli(capsys, *watch(pool, "status"))
    assert status == 0 and err == ""
    assert re.match(r"last poll: \d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ \(\d+ s ago\), 2 nodes, "
                    r"2 GPU workers", out)
    assert "open incidents: 2\n" in out
    assert f"gpu:{G1} (stale) since" in out and f"gpu:{G2} (stale) since" in out
    assert ("channel slack: 1 pending, 1 dead letters, last error http_500_internal_error"
            in out)
    assert re.search(rf"^  DEAD: .*Z ALERT gpu:{G1} \(stale\) incident {dead_id}$", out, re.M)
    assert re.search(rf"^  pending: .*Z ALERT gpu:{G2} \(stale\) incident {pending_id}$",
                     out, re.M)

    status, out, _ = cli(capsys, *watch(pool, "status", "--json"))
    data = json.loads(out)
    assert status == 0
    assert abs(data["last_poll"]["t"] - now) < 60
    assert data["last_poll"]["node_error"] is None and data["last_poll"]["gpu_error"] is None
    assert [i["target"] for i in data["open_incidents"]] == [f"gpu:{G1}", f"gpu:{G2}"]
    slack = data["channels"]["slack"]
    assert [(e["target"], e["incident"]) for e in slack["dead_letters"]] == [
        (f"gpu:{G1}", dead_id)]
    assert [(e["target"], e["incident"]) for e in slack["pending"]] == [
        (f"gpu:{G2}", pending_id)]
    assert slack["last_error"] == "http_500_internal_error"


def test_it_redelivers_dead_letters_once_slack_accepts(pool: Pool, capsys) -> None:
    pool.slack.set_default(SlackResponses.channel_not_found())
    healthy(pool, stale=[G1])
    status, out, _ = cli(capsys, *watch(pool))
    assert status == 0
    rejected = pool.slack.requests[0].json()["text"]

    status, out, err = cli(capsys, *watch(pool, "redeliver", "--channel", "nope"))
    assert status == 2 and out == "" and "'nope'" in err
    assert json.loads(cli(capsys, *watch(pool, "status", "--json"))[1])[
        "channels"]["slack"]["dead_letters"]  # still set aside

    status, out, _ = cli(capsys, *watch(pool, "redeliver"))
    assert status == 0 and out.startswith("1 message(s) queued again")
    slack = json.loads(cli(capsys, *watch(pool, "status", "--json"))[1])["channels"]["slack"]
    assert (len(slack["pending"]), slack["dead_letters"]) == (1, [])

    pool.slack.set_default(SlackResponses.ok())
    pool.slack.clear()
    healthy(pool, stale=[G1])
    status, out, _ = cli(capsys, *watch(pool))
    assert status == 0 and out == ""  # no new transition: the old one is re-sent
    assert [r.json()["text"] for r in pool.slack.requests] == [rejected]  # time and id kept
    healthy(pool, stale=[G1])
    assert cli(capsys, *watch(pool))[0] == 0
    assert len(pool.slack.requests) == 1  # delivered once
    slack = json.loads(cli(capsys, *watch(pool, "status", "--json"))[1])["channels"]["slack"]
    assert (slack["pending"], slack["dead_letters"]) == ([], [])
    assert cli(capsys, *watch(pool, "redeliver", "--channel", "slack"))[1].startswith(
        "0 message(s)")


# --- exercise ---------------------------------------------------------------------------------

ROW = re.compile(r"^\s+(\d+)\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ\s+(?:-|\d+ s)\s+(\w+)\s*"
                 r"(?:(ALERT|RECOVER) \((\w+)\))?$")

# (minute, decision) per scenario, as each scenario's `expect` text names them
EXPECTED = [
    [(17, "ALERT")],
    [(0, "ALERT")],
    [(16, "ALERT"), (30, "RECOVER")],
    [(16, "ALERT"), (33, "RECOVER")],
    [(18, "ALERT"), (35, "RECOVER")],
    [(29, "ALERT")],
]


def parse_exercise(out: str) -> list[dict]:  # type: ignore[type-arg]
    scenarios: list[dict] = []  # type: ignore[type-arg]
    for line in out.splitlines():
        if line.startswith("== "):
            scenarios.append({"title": line[3:], "expect": "", "rows": []})
        elif line.strip().startswith("expected:"):
            scenarios[-1]["expect"] = line.strip()
        elif (match := ROW.match(line)) is not None:
            scenarios[-1]["rows"].append(match.groups())
    return scenarios


def test_it_prints_the_six_exercise_scenarios_with_the_expected_decisions(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))  # no configuration at all: it needs none
    status, out, err = cli(capsys, "watch", "exercise")
    assert status == 0 and err == ""
    scenarios = parse_exercise(out)
    assert len(scenarios) == 6 == len(SCENARIOS)
    for scenario, expected in zip(scenarios, EXPECTED):
        decided = [(int(minute), action) for minute, _, action, _ in scenario["rows"] if action]
        assert decided == expected, scenario["title"]
        for minute, _ in expected:
            if minute:
                assert re.search(rf"\b{minute}\b", scenario["expect"]), scenario
    first, _, resumes, blip, node, gap = scenarios
    assert first["rows"][17][1:] == ("stale", "ALERT", "stale")
    assert first["rows"][16][1] == "aging"
    assert [r[1] for r in blip["rows"][21:24]] == ["fresh", "aging", "fresh"]
    assert node["rows"][18][1:] == ("missing", "ALERT", "missing")
    assert node["rows"][35][1:] == ("present", "RECOVER", "present")
    assert [int(r[0]) for r in gap["rows"]][9:11] == [9, 14]  # the 4-minute gap
    assert not any(r[2] for r in gap["rows"] if int(r[0]) == 15)
    assert resumes["rows"][30][1:] == ("fresh", "RECOVER", "fresh")


# --- discover ---------------------------------------------------------------------------------

def discovered(pool: Pool, instances: Sequence[str]) -> None:
    now = time.time()
    rows = [({"__name__": "node_textfile_mtime_seconds", "job": "node", "instance": i,
              "file": "/var/lib/prometheus/node-exporter/gpu_vram.prom"}, now, repr(now - 30))
            for i in instances]
    pool.prometheus.set_response(vector_response(rows))


def test_it_appends_discovered_names_keeping_comments_and_lines(pool: Pool, capsys) -> None:
    nodes, gpus = pool.config_dir / "expected_nodes", pool.config_dir / "gpu_instances"
    nodes.write_text(f"# execute nodes\n{W1}\n\n# {W2} is being retired\n{W2}")  # no final \n
    nodes.chmod(0o640)
    before_nodes, before_gpus = nodes.read_text(), gpus.read_text()
    pool.set_machines([W1, W1, W3, W3, "bad name.example.org"])  # W2 no longer advertised
    discovered(pool, [G1, G3])
    status, out, err = cli(capsys, *watch(pool, "discover"))
    assert status == 0
    assert out.splitlines() == [f"added node {W3}", f"added gpu {G3}"]
    assert "bad name.example.org" in err  # logged, not added
    assert nodes.read_text().startswith(before_nodes + "\n# added by clusterwatch watch "
                                                      "discover at ")
    assert nodes.read_text().endswith(f"Z\n{W3}\n")
    assert gpus.read_text().startswith(before_gpus) and gpus.read_text().endswith(f"Z\n{G3}\n")
    assert nodes.stat().st_mode & 0o777 == 0o640

    after = nodes.read_bytes(), gpus.read_bytes()
    status, out, _ = cli(capsys, *watch(pool, "discover"))
    assert (status, out) == (0, "")
    assert (nodes.read_bytes(), gpus.read_bytes()) == after  # idempotent


def test_it_leaves_the_node_inventory_alone_when_condor_status_fails(pool: Pool,
                                                                     capsys) -> None:
    broken = write_fake_condor_status(pool.root / "broken", pool.machines_file, exit_code=1)
    nodes, gpus = pool.config_dir / "expected_nodes", pool.config_dir / "gpu_instances"
    before = nodes.read_bytes()
    pool.set_machines([W3])
    discovered(pool, [G3])
    status, out, err = cli(capsys, *watch(pool, "discover", condor=broken))
    assert status == 1
    assert out == f"added gpu {G3}\n"
    assert "discover: condor_status" in err
    assert nodes.read_bytes() == before
    assert gpus.read_text().endswith(f"{G3}\n")


def test_it_leaves_the_gpu_inventory_alone_when_prometheus_fails(pool: Pool, capsys) -> None:
    nodes, gpus = pool.config_dir / "expected_nodes", pool.config_dir / "gpu_instances"
    before = gpus.read_bytes()
    pool.set_machines([W1, W3])
    pool.prometheus.set_response(vector_response([({"job": "node"}, time.time(), "1")]))
    status, out, err = cli(capsys, *watch(pool, "discover"))
    assert status == 1
    assert out == f"added node {W3}\n"
    assert "discover: Prometheus" in err
    assert gpus.read_bytes() == before
    assert nodes.read_text().endswith(f"{W3}\n")


# --- the webhook URL stays secret -------------------------------------------------------------

def assert_secret_kept(pool: Pool, url: str, *outputs: str) -> None:
    for text in outputs:
        assert TOKEN not in text and url not in text
    for path in pool.state_dir.rglob("*"):
        if path.is_file():
            assert TOKEN.encode() not in path.read_bytes(), path
    for argv in recorded_argv(pool.bin_dir):
        assert not any(TOKEN in arg for arg in argv)


@pytest.mark.parametrize("answer", [
    SlackResponses.ok(), SlackResponses.server_error(500), SlackResponses.no_service(),
    SlackResponses.invalid_token(), SlackResponses.timeout(),
    SlackResponses.rate_limited("bogus"),
], ids=["ok", "500", "404", "403", "timeout", "429"])
def test_it_never_shows_the_webhook_url(pool: Pool, capsys, answer) -> None:  # type: ignore[no-untyped-def]
    url = use_secret_webhook(pool, timeout_s=0.3)
    pool.slack.set_default(answer)
    outputs = []
    healthy(pool, stale=[G1])
    for args in (["-vv", *watch(pool)], ["-vv", *watch(pool, "status")],
                 ["-vv", *watch(pool, "status", "--json")], ["-vv", *watch(pool, "redeliver")],
                 ["-vv", *watch(pool)], ["-vv", *watch(pool, "discover")]):
        status, out, err = cli(capsys, *args)
        assert status == 0, err
        outputs += [out, err]
    assert pool.slack.requests  # the channel was tried
    assert pool.slack.requests[0].route.endswith(TOKEN)
    assert_secret_kept(pool, url, *outputs)


def test_it_never_shows_the_webhook_url_when_nothing_answers(pool: Pool, capsys) -> None:
    with HttpRecorder() as gone:
        port_url = gone.url
    url = f"{port_url}/services/T0CWTEST/B0CWTEST/{TOKEN}"
    path = pool.config_dir / "slack_webhook"
    path.write_text(url + "\n")
    healthy(pool, stale=[G1])
    status, out, err = cli(capsys, "-vv", *watch(pool))
    assert status == 0 and "connection" in err
    assert_secret_kept(pool, url, out, err, *cli(capsys, *watch(pool, "status"))[1:])


def test_it_never_shows_a_malformed_webhook_url(pool: Pool, capsys) -> None:
    url = f"hooks.slack.example/services/T0CWTEST/B0CWTEST/{TOKEN}"
    path = pool.config_dir / "slack_webhook"
    path.write_text(url + "\n")
    healthy(pool, stale=[G1])
    status, out, err = cli(capsys, "-vv", *watch(pool))
    assert status == 78 and "must hold an https:// (or http://) URL" in err
    assert_secret_kept(pool, url, out, err)


# --- as a program: python -m clusterwatch and the console script ------------------------------

def test_it_separates_data_and_logs_as_a_program(pool: Pool, tmp_path: Path) -> None:
    url = use_secret_webhook(pool)
    broken = write_fake_condor_status(pool.root / "broken", pool.machines_file, exit_code=1)
    healthy(pool, stale=[G1])
    done = run_child(watch(pool, condor=broken), tmp_path)
    assert done.returncode == 1
    assert transitions(done.stdout) == [("alert", f"gpu:{G1}", "(stale)")]
    assert "condor_status" in done.stderr and f"ALERT gpu:{G1}" in done.stderr
    assert "Traceback" not in done.stderr
    assert_secret_kept(pool, url, done.stdout, done.stderr)

    healthy(pool)
    done = run_child(watch(pool), tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


@pytest.mark.parametrize(("args", "code"), [
    (["watch", "--config-dir", "/nonexistent/clusterwatch"], 78),
    (["watch", "--bogus"], 2),
    (["watch", "redeliver", "--channel", "nope"], 2),
])
def test_it_exits_with_the_documented_status_as_a_program(pool: Pool, tmp_path: Path,
                                                          args: list[str], code: int) -> None:
    if args[1] == "redeliver":
        args = watch(pool, *args[1:])
    done = run_child(args, tmp_path)
    assert done.returncode == code
    assert done.stdout == ""
    assert done.stderr.strip() and "Traceback" not in done.stderr


def closed_pipe_run(command: Sequence[str], home: Path) -> subprocess.CompletedProcess[bytes]:
    """Run with stdout a pipe whose reader is already gone, as `... | head -0` leaves it."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(command, stdout=write_end, stderr=subprocess.PIPE,
                              env=child_env(home), timeout=30, check=False)
    finally:
        os.close(write_end)


@pytest.mark.parametrize("args", [
    ["watch", "exercise"], ["--help"], ["watch", "--help"], ["--version"], ["status"],
    ["status", "--json"],
])
def test_it_exits_quietly_when_the_reader_goes_away(pool: Pool, tmp_path: Path,
                                                    args: list[str]) -> None:
    if args[0] == "status":
        args = watch(pool, *args)
    done = closed_pipe_run([sys.executable, "-m", "clusterwatch", *args], tmp_path)
    assert (done.returncode, done.stderr.decode()) == (0, "")


def test_it_installs_a_console_script_that_behaves_the_same(tmp_path: Path) -> None:
    script = Path(sysconfig.get_path("scripts")) / "clusterwatch"
    if not script.exists():
        pytest.skip(f"no console script at {script} (package not installed)")
    done = subprocess.run([str(script), "--version"], capture_output=True, text=True,
                          env=child_env(tmp_path), timeout=30, check=False)
    assert done.returncode == 0 and done.stdout.startswith("clusterwatch ")
    done = subprocess.run([str(script), "watch", "exercise"], capture_output=True, text=True,
                          env=child_env(tmp_path), timeout=30, check=False)
    assert done.returncode == 0 and len(parse_exercise(done.stdout)) == 6
    piped = closed_pipe_run([str(script), "watch", "exercise"], tmp_path)
    assert (piped.returncode, piped.stderr.decode()) == (0, "")


def test_it_accepts_the_common_options_after_the_verb(pool: Pool, capsys) -> None:
    healthy(pool, stale=[G2])
    after = ["watch", "poll", "--config-dir", str(pool.config_dir), "--state-dir",
             str(pool.state_dir), "--prometheus-url", pool.prometheus.url,
             "--condor-status", str(pool.condor_status)]
    status, out, _ = cli(capsys, *after)
    assert status == 0 and f"gpu:{G2}" in out
    status, out, _ = cli(capsys, "watch", "status", "--state-dir", str(pool.state_dir),
                         "--config-dir", str(pool.config_dir))
    assert status == 0 and "open incidents: 1" in out


def test_it_reports_a_held_lock_without_a_traceback(pool: Pool, capsys, monkeypatch) -> None:
    from clusterwatch.watch import config as config_module
    from clusterwatch.watch import state

    healthy(pool)
    cli(capsys, *watch(pool))
    real_load = config_module.load_config

    def impatient(*args, **kwargs):  # type: ignore[no-untyped-def]
        loaded = real_load(*args, **kwargs)
        return type(loaded)(**{**loaded.__dict__, "lock_timeout_s": 0.2})

    monkeypatch.setattr(config_module, "load_config", impatient)
    with state.locked(pool.state_dir):
        status, out, err = cli(capsys, *watch(pool, "redeliver"))
    assert status == 1 and out == ""
    assert "another clusterwatch watch run holds" in err and "Traceback" not in err


def test_it_leaves_a_corrupt_state_file_alone_in_status(pool: Pool, capsys) -> None:
    pool.state_dir.mkdir(mode=0o700)
    corrupt = b'{"version": 1, "targets": '
    (pool.state_dir / "state.json").write_bytes(corrupt)
    status, out, err = cli(capsys, *watch(pool, "status"))
    assert status == 1 and out == ""
    assert "is damaged" in err and "the next poll moves it aside" in err
    assert (pool.state_dir / "state.json").read_bytes() == corrupt
    assert not list(pool.state_dir.glob("state.json.corrupt-*"))
