"""`clusterwatch monitor remote_harvester_report` as the timer runs it: the console script, the
PanDA tables on the loopback PostgreSQL, the queue configuration from a file or the loopback
HTTPS IRI API, the record stored in the monitor's database as ingest stores one; exit
statuses, and the password and token in no output."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import sqlite3
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Optional

import pytest

from clusterwatch.loopback.fake_iri import FakeIri
from clusterwatch.loopback.postgres import Postgres
from clusterwatch.loopback.services import free_port
from clusterwatch.monitor.panda.panda_settings import PASSWORD_SETTING, PandaDatabase
from tests.monitor.panda.iri_support import CONFIG_PATH, RESOURCE, TOKEN, token_file
from tests.monitor.panda.panda_tables import fill, fresh_database, running_server, shifted
from tests.monitor.panda.remote_rows import EPIC, HARVESTER, KEY, NOW, PERLMUTTER_CONFIG
from tests.monitor.panda.test_remote_record import assert_valid, perlmutter_rows
from tests.support.tls import ServerCert

pytestmark = pytest.mark.integration
CLUSTERWATCH = str(Path(sys.executable).with_name("clusterwatch"))


@pytest.fixture(scope="module")
def server() -> Iterator[Postgres]:
    yield from running_server()


@pytest.fixture(scope="module")
def migrated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A monitor data directory with its SQLite database migrated, copied by each test."""
    data = tmp_path_factory.mktemp("monitor") / "data"
    done = subprocess.run([CLUSTERWATCH, "monitor", "migrate"], env=_environ(data),
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    return data


class Run:
    """One test's monitor data directory and PanDA database, and the command run on them."""

    def __init__(self, tmp_path: Path, migrated: Path, database: PandaDatabase) -> None:
        self.data = tmp_path / "data"
        shutil.copytree(migrated, self.data)
        self.tmp_path = tmp_path
        self.database = database
        self.password_file = tmp_path / "panda-password"
        self.password_file.write_text(f"{database.password}\n")
        self.password_file.chmod(0o600)
        self.url = (f"postgresql://{database.user}@127.0.0.1:{database.port}/"
                    f"{database.dbname}")

    def __call__(self, *arguments: str, **environ: str) -> subprocess.CompletedProcess[str]:
        env = {"CLUSTERWATCH_PANDA_DATABASE_URL": self.url,
               PASSWORD_SETTING: str(self.password_file), **environ}
        done = subprocess.run(
            [CLUSTERWATCH, "monitor", "remote_harvester_report", "--key", KEY,
             "--harvester-id", HARVESTER, *arguments], env=_environ(self.data, env),
            capture_output=True, text=True, timeout=120, check=False)
        secret = self.database.password or ""
        assert secret not in done.stdout + done.stderr and TOKEN not in done.stdout + done.stderr
        assert "Traceback" not in done.stderr
        return done

    def latest(self) -> Optional[dict[str, Any]]:
        with sqlite3.connect(self.data / "monitor.sqlite3") as connection:
            found = connection.execute(
                "SELECT r.record FROM monitor_latestreport l JOIN monitor_hostreport r "
                "ON r.id = l.report_id WHERE l.key = ?", (KEY,)).fetchone()
            count = connection.execute("SELECT count(*) FROM monitor_hostreport").fetchone()
        self.stored = count[0]
        return json.loads(found[0]) if found else None


def _environ(data: Path, extra: Optional[dict[str, str]] = None) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items()
           if not name.startswith("CLUSTERWATCH_") and name != "DJANGO_SETTINGS_MODULE"}
    return {**env, "CLUSTERWATCH_DATA_DIR": str(data), **(extra or {})}


@pytest.fixture
def run(tmp_path: Path, migrated: Path, server: Postgres) -> Run:
    """The Perlmutter-like scenario, dated at this clock's now, in a fresh PanDA database."""
    database = fresh_database(server)
    now = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    fill(database, shifted(perlmutter_rows(), now - NOW))
    return Run(tmp_path, migrated, database)


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
    return subprocess.run([CLUSTERWATCH, "monitor", *arguments], env=_environ(run.data),
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
