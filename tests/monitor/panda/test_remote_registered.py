"""`clusterwatch monitor remote_harvester_report --registered`, the timer's mode, through the
console script: every remote key of the harvester registry built from what
`register_harvester` kept for it, one failing stopping none, a line per key on stderr, the
exit status the worst of them; and `register_harvester`'s builder options."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from clusterwatch.monitor.panda.panda_settings import PASSWORD_SETTING
from tests.monitor.panda.remote_report_support import Run
from tests.monitor.panda.remote_rows import EPIC, HARVESTER, KEY, PERLMUTTER_CONFIG, assert_valid
from tests.support.monitor_console import CLUSTERWATCH, console_environ

pytestmark = pytest.mark.integration
OTHER = "other-harvester"
BUILD = ("--harvester-id", HARVESTER, "--queue-config", str(PERLMUTTER_CONFIG))


def monitor(run: Run, *arguments: str, cwd: Path | None = None
            ) -> subprocess.CompletedProcess[str]:
    """`clusterwatch monitor ARGUMENTS` on the run's data directory and PanDA database."""
    env = {"CLUSTERWATCH_PANDA_DATABASE_URL": run.url, PASSWORD_SETTING: str(run.password_file)}
    done = subprocess.run([CLUSTERWATCH, "monitor", *arguments],
                          env=console_environ(run.data, env), capture_output=True, text=True,
                          timeout=180, check=False, cwd=cwd)
    assert "Traceback" not in done.stderr
    assert (run.database.password or "") not in done.stdout + done.stderr
    return done


def registered(run: Run) -> subprocess.CompletedProcess[str]:
    return monitor(run, "remote_harvester_report", "--registered")


def test_it_builds_every_registered_remote_harvester(run: Run) -> None:
    # A relative path is kept absolute: the timer runs elsewhere than the operator typed it.
    relative = monitor(run, "register_harvester", KEY, "--remote", "--harvester-id",
                       HARVESTER, "--queue-config", PERLMUTTER_CONFIG.name,
                       cwd=PERLMUTTER_CONFIG.parent)
    assert (relative.returncode, relative.stdout) == (0, f"registered {KEY} (remote)\n")
    assert monitor(run, "register_harvester", "pandaharvester01").returncode == 0  # reporting
    assert monitor(run, "register_harvester", "z-bare", "--remote").returncode == 0
    listed = [line.split("\t") for line in monitor(run, "list_harvesters").stdout.splitlines()]
    assert [row[4:] for row in listed] == [[], [f"{HARVESTER} from {PERLMUTTER_CONFIG}"],
                                           ["not buildable: no harvester id registered"]]
    assert monitor(run, "remove_harvester", "z-bare").returncode == 0
    done = registered(run)
    assert done.returncode == 0, done.stderr
    assert done.stderr == f"clusterwatch: {KEY}: stored the record of {HARVESTER}\n"
    record = run.latest()
    assert record is not None and run.stored == 1  # the reporting key is not built
    assert_valid(record)
    assert record["harvester_db"]["workers_now"][EPIC]["running"] == 12
    assert record["queue_status"]["source"] == str(PERLMUTTER_CONFIG)


def test_one_failing_source_stops_none_of_the_others_and_exits_1(run: Run) -> None:
    broken = run.tmp_path / "queues.json"
    broken.write_text('{"NERSC_Perlmutter_epic": ')
    assert monitor(run, "register_harvester", KEY, "--remote", *BUILD).returncode == 0
    assert monitor(run, "register_harvester", "a-first", "--remote", "--harvester-id",
                   HARVESTER, "--queue-config", str(broken)).returncode == 0
    done = registered(run)
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert lines[0].startswith(f"clusterwatch: a-first: stored the record of {HARVESTER}; 1 "
                               f"source(s) failed: queue configuration {broken} is not JSON")
    assert lines[1:] == [f"clusterwatch: {KEY}: stored the record of {HARVESTER}",
                         "clusterwatch: a-first: a source failed or the record was refused "
                         "(see above)"]
    assert run.latest() is not None and run.stored == 2  # both stored, the failed one too


def test_a_misconfigured_entry_exits_78_and_the_others_are_still_built(run: Run) -> None:
    token = run.tmp_path / "iri-token"
    token.write_text("not a real token\n")
    token.chmod(0o644)
    assert monitor(run, "register_harvester", "a-bare", "--remote").returncode == 0
    assert monitor(run, "register_harvester", "b-iri", "--remote", "--harvester-id",
                   HARVESTER, "--iri-url", "https://127.0.0.1:1/api/v1", "--iri-resource",
                   "cfs", "--iri-path", "/global/x.json", "--iri-token-file",
                   str(token)).returncode == 0
    assert monitor(run, "register_harvester", KEY, "--remote", *BUILD).returncode == 0
    done = registered(run)
    assert done.returncode == 78
    lines = done.stderr.splitlines()
    assert lines[0] == ("clusterwatch: a-bare: configuration error: registered without what "
                        "the builder needs: clusterwatch monitor register_harvester a-bare "
                        "--remote --harvester-id ID --queue-config FILE (or the four --iri-* "
                        "options)")
    assert lines[1].startswith("clusterwatch: b-iri: configuration error: ")
    assert "chmod 600" in lines[1] and "not a real token" not in done.stderr
    assert lines[2:] == [f"clusterwatch: {KEY}: stored the record of {HARVESTER}",
                         "clusterwatch: configuration error: a-bare, b-iri: not built (see "
                         "the line above for each)"]
    assert run.latest() is not None and run.stored == 1


def test_with_nothing_registered_it_says_so_and_exits_0(run: Run) -> None:
    done = registered(run)
    assert done.returncode == 0
    assert done.stderr.startswith("clusterwatch: no remote harvester is registered")
    assert run.latest() is None


@pytest.mark.parametrize("arguments", [
    ("remote_harvester_report", "--registered", "--key", KEY),
    ("remote_harvester_report", "--registered", "--print"),
    ("remote_harvester_report", "--key", KEY),  # no --harvester-id, no --registered
    ("remote_harvester_report",),
    ("register_harvester", KEY, *BUILD),  # builder settings without --remote
    ("register_harvester", KEY, "--remote", "--harvester-id", HARVESTER),  # no configuration
    ("register_harvester", KEY, "--remote", "--queue-config", str(PERLMUTTER_CONFIG)),
    ("register_harvester", KEY, "--remote", *BUILD, "--iri-url", "https://127.0.0.1:1/"),
    ("register_harvester", KEY, "--remote", "--harvester-id", HARVESTER, "--iri-url",
     "https://127.0.0.1:1/", "--iri-resource", "cfs", "--iri-path", "/global/x.json"),
])
def test_options_that_do_not_go_together_are_a_usage_error(
        run: Run, arguments: tuple[str, ...]) -> None:
    done = monitor(run, *arguments)
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert monitor(run, "list_harvesters").stdout == "" and run.latest() is None


def test_the_timers_unit_runs_the_registered_mode() -> None:
    unit = (Path(__file__).resolve().parents[3] / "deploy" / "systemd"
            / "clusterwatch-remote-harvester.service").read_text(encoding="utf-8")
    started = [line for line in unit.splitlines() if line.startswith("ExecStart=")]
    assert len(started) == 1
    assert started[0].split()[1:] == ["monitor", "remote_harvester_report", "--registered"]
    assert "REMOTE_HARVESTER_ARGS" not in unit and "remote-harvester.env" not in unit
    assert "LoadCredential=panda-db-password:" in unit
