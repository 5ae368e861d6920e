"""`clusterwatch monitor remote_harvester_report` as the timer runs it: the console script, the
PanDA tables on the loopback PostgreSQL, the queue configuration from a file or the loopback
HTTPS IRI API, the record stored in the monitor's database as ingest stores one; exit
statuses, and the password and token in no output."""

from __future__ import annotations

import json
import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from clusterwatch.loopback.fake_iri import FakeIri
from clusterwatch.loopback.services import free_port
from tests.monitor.panda.iri_support import CONFIG_PATH, RESOURCE, TOKEN, token_file
from tests.monitor.panda.remote_report_support import Run
from tests.monitor.panda.remote_rows import (
    EPIC,
    HARVESTER,
    KEY,
    PERLMUTTER_CONFIG,
    assert_valid,
)
from tests.support.monitor_console import CLUSTERWATCH, console_environ
from tests.support.tls import ServerCert

pytestmark = pytest.mark.integration


def test_it_stores_the_record_as_the_keys_latest(run: Run) -> None:
    done = run("--queue-config", str(PERLMUTTER_CONFIG))
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.strip() == f"stored the record of {HARVESTER} under {KEY}"
    record = run.latest()
    assert record is not None and run.stored == 1
    assert_valid(record)
    assert record["host"] == KEY and record["instance"]["harvester_id"] == HARVESTER
    assert record["harvester_db"]["workers_now"][EPIC]["running"] == 12
    assert record["queue_status"]["source"] == str(PERLMUTTER_CONFIG)
    assert record["hostname"] == "login32.chn.perlmutter.nersc.gov"
    again = run("--queue-config", str(PERLMUTTER_CONFIG))  # history: a second record
    assert again.returncode == 0 and run.latest() is not None and run.stored == 2


def test_print_prints_the_record_and_stores_nothing(run: Run) -> None:
    done = run("--print", "--queue-config", str(PERLMUTTER_CONFIG))
    assert (done.returncode, done.stderr) == (0, "")
    record = json.loads(done.stdout)
    assert_valid(record)
    assert record["dialogs"]["modules"]["submitter"]["count"] == 2
    assert run.latest() is None and run.stored == 0


def test_an_unreachable_database_stores_the_record_with_the_error_and_exits_1(
    run: Run
) -> None:
    run.url = f"postgresql://clusterwatch@127.0.0.1:{free_port()}/panda"
    done = run("--queue-config", str(PERLMUTTER_CONFIG))
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert lines[0].startswith("clusterwatch: harvester_instances: OperationalError: "
                               "connection failed")
    assert lines[-1] == ("clusterwatch: 5 source(s) failed; the record stored carries their "
                         "errors")
    record = run.latest()
    assert record is not None
    assert record["harvester_db"]["workers_now"]["error"].startswith(
        "harvester_workers: OperationalError: connection failed")
    assert "EPIC" not in json.dumps(record["harvester_db"]["launch_limits"].get("error", ""))


def test_a_malformed_queue_config_is_a_failed_source(run: Run) -> None:
    broken = run.tmp_path / "queues.json"
    broken.write_text('{"NERSC_Perlmutter_epic": ')
    done = run("--queue-config", str(broken))
    assert done.returncode == 1
    assert done.stderr.startswith(f"clusterwatch: queue configuration {broken} is not JSON: ")
    record = run.latest()
    assert record is not None and "error" in record["queue_status"]
    assert record["harvester_db"]["workers_now"][EPIC]["running"] == 12


@pytest.mark.parametrize("environ, message", [
    ({"CLUSTERWATCH_PANDA_DATABASE_URL": "postgresql://panda:hunter2@db/panda"},
     "CLUSTERWATCH_PANDA_DATABASE_URL must not hold the password"),
    ({"CLUSTERWATCH_PANDA_DATABASE_URL": "oracle://panda@db/panda"},
     "CLUSTERWATCH_PANDA_DATABASE_URL: only PostgreSQL is supported"),
    ({"CLUSTERWATCH_PANDA_DATABASE_URL": "postgresql://db/panda"},
     "CLUSTERWATCH_PANDA_DATABASE_URL must name the user, host and database"),
    ({"CLUSTERWATCH_PANDA_DATABASE_URL": ""}, "CLUSTERWATCH_PANDA_DATABASE_URL is not set"),
    ({"CLUSTERWATCH_PANDA_SCHEMA": "doma_panda; DROP TABLE x"},
     "CLUSTERWATCH_PANDA_SCHEMA must be a plain SQL name"),
])
def test_bad_settings_exit_78_with_one_line(run: Run, environ: dict[str, str],
                                            message: str) -> None:
    done = run("--queue-config", str(PERLMUTTER_CONFIG), **environ)
    assert done.returncode == 78
    assert done.stderr.startswith(f"clusterwatch: configuration error: {message}")
    assert len(done.stderr.strip().splitlines()) == 1 and "hunter2" not in done.stderr
    assert run.latest() is None


def test_a_readable_password_file_or_missing_options_exit_78(run: Run) -> None:
    run.password_file.chmod(0o644)
    done = run("--queue-config", str(PERLMUTTER_CONFIG))
    assert done.returncode == 78 and "chmod 600" in done.stderr
    run.password_file.chmod(0o600)
    assert run().returncode == 78  # no queue configuration at all
    done = run("--iri-url", "https://127.0.0.1:1/api/v1")
    assert done.returncode == 78 and "give all four" in done.stderr
    assert run("--key", "no such key!", "--queue-config", str(PERLMUTTER_CONFIG)
               ).returncode == 78
    assert run("--queue-config").returncode == 2  # argparse: usage
    assert run.latest() is None


@pytest.fixture
def perlmutter_iri(iri_tls: ssl.SSLContext) -> Iterator[FakeIri]:
    files = {RESOURCE: {CONFIG_PATH: PERLMUTTER_CONFIG.read_bytes()}}
    with FakeIri(TOKEN, files, tls=iri_tls) as api:
        yield api


def iri_options(api: FakeIri, token: Path) -> tuple[str, ...]:
    return ("--iri-url", api.base_url, "--iri-resource", RESOURCE, "--iri-path", CONFIG_PATH,
            "--iri-token-file", str(token))


def test_it_reads_the_queue_config_through_the_iri_api(
    run: Run, perlmutter_iri: FakeIri, iri_cert: ServerCert
) -> None:
    token = token_file(run.tmp_path)
    done = run(*iri_options(perlmutter_iri, token), SSL_CERT_FILE=str(iri_cert.ca.cert))
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    record = run.latest()
    assert record is not None
    assert record["queue_status"]["source"] == f"IRI {RESOURCE}:{CONFIG_PATH}"
    assert record["queue_status"]["queues"][EPIC]["status"] == "online"
    assert perlmutter_iri.requests  # it did ask the API


def test_an_iri_outage_is_a_failed_source_and_a_readable_token_file_exits_78(
    run: Run, perlmutter_iri: FakeIri, iri_cert: ServerCert
) -> None:
    token = token_file(run.tmp_path)
    perlmutter_iri.fail_all = (500, "Internal Server Error")
    done = run(*iri_options(perlmutter_iri, token), SSL_CERT_FILE=str(iri_cert.ca.cert))
    assert done.returncode == 1 and "HTTP 500" in done.stderr
    record = run.latest()
    assert record is not None and "HTTP 500" in record["queue_status"]["error"]
    token.chmod(0o644)
    done = run(*iri_options(perlmutter_iri, token), SSL_CERT_FILE=str(iri_cert.ca.cert))
    assert done.returncode == 78 and "chmod 600" in done.stderr and run.stored == 1


def _monitor(run: Run, *arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CLUSTERWATCH, "monitor", *arguments], env=console_environ(run.data),
                          capture_output=True, text=True, timeout=120, check=False)


def test_it_refuses_to_build_into_a_reporters_key(run: Run) -> None:
    # A typo in --key naming a reporting harvester would have its record replaced by a built
    # one until its reporter posts again: a configuration error, nothing stored.
    assert _monitor(run, "register_harvester", KEY).returncode == 0  # a reporting key
    done = run("--queue-config", str(PERLMUTTER_CONFIG))
    assert done.returncode == 78 and "registered as a reporting harvester" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and run.latest() is None
    assert _monitor(run, "remove_harvester", KEY).returncode == 0
    assert _monitor(run, "create_host_token", KEY).returncode == 0  # a reporter's token
    done = run("--queue-config", str(PERLMUTTER_CONFIG))
    assert done.returncode == 78 and "a host token may post" in done.stderr
    assert run.latest() is None
    assert _monitor(run, "register_harvester", "other-key", "--remote").returncode == 0
    assert run("--key", "other-key", "--queue-config", str(PERLMUTTER_CONFIG)
               ).returncode == 0  # a remote key without a token is built as before
