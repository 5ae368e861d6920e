"""The harvester_db section read from a real MariaDB through the real `mysql` client."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from clusterwatch.loopback.mariadb import MariaDB, binaries
from clusterwatch.loopback.services import free_port
from clusterwatch.reporter import harvester_db, mysql_client
from clusterwatch.reporter.harvester_cfg import read_db_settings
from clusterwatch.reporter.harvester_db import collect, collect_with_config
from tests.support.harvester_db import (
    CFG_PASSWORD,
    DIAG,
    FQDN,
    METRICS,
    NOW,
    PASSWORD,
    SCHEMA,
    SINCE,
    USER,
    write_cfg,
)

pytestmark = pytest.mark.integration


def settings_for(tmp_path: Path, db: MariaDB, **changes: str) -> dict[str, Any]:
    env = {"CW_TEST_DB_PORT": str(db.port), "CW_TEST_DB_USER": USER}
    return dict(read_db_settings(write_cfg(tmp_path, **changes), env))


EXPECTED = {
    "launch_limits": {
        "BNL_PROD": {
            "siteName": "BNL", "nQueueLimitWorker": 100, "maxWorkers": 1000,
            "nQueueLimitJob": 50, "nNewWorkers": 0, "jobFetchTime": "2026-10-02T18:29:10Z",
            "submitTime": "2026-10-02T18:29:40Z",
            "by_type": {
                "ANY/ANY": {"nQueueLimitWorker": 100, "maxWorkers": 1000,
                            "nQueueLimitJob": 50, "nNewWorkers": 0},
                "managed/SCORE": {"nQueueLimitWorker": None, "maxWorkers": None,
                                  "nQueueLimitJob": None, "nNewWorkers": 7},
            },
        },
        "BNL_ANALY": {
            "siteName": "BNL_ANALY", "nQueueLimitWorker": 20, "maxWorkers": 200,
            "nQueueLimitJob": None, "nNewWorkers": 3, "jobFetchTime": None,
            "submitTime": "2026-10-02T18:00:00Z",
            "by_type": {"ANY/ANY": {"nQueueLimitWorker": 20, "maxWorkers": 200,
                                    "nQueueLimitJob": None, "nNewWorkers": 3}},
        },
    },
    "workers_now": {
        "BNL": {"submitted": 1, "running": 4, "ready": 1, "idle": 1, "pending": 1},
        "BNL_ANALY": {"submitted": 1, "running": 1},
    },
    "workers_ended": {
        "BNL": {"by_status": {"finished": 4, "failed": 1, "cancelled": 1},
                "finished_median_run_s": 764.5},
        "BNL_ANALY": {"by_status": {"finished": 1}, "finished_median_run_s": None},
    },
    "workers_not_finished_candidates": [
        {"workerID": 15, "computingSite": "BNL", "queueName": "BNL_Q", "status": "cancelled",
         "batchID": "1234515.0", "nodeID": None, "computingElement": "gridgk01.example.org",
         "batchLog": "https://h.example.org/condor_logs/26-10-02_17/grid.15.0.log",
         "diagMessage": DIAG, "nativeExitCode": None, "nativeStatus": None,
         "submitTime": "2026-10-02T17:00:00Z", "startTime": None,
         "endTime": "2026-10-02T18:30:00Z"},
        {"workerID": 13, "computingSite": "BNL", "queueName": "BNL_Q", "status": "finished",
         "batchID": "1234513.0", "nodeID": "node01.example.org",
         "computingElement": "gridgk01.example.org",
         "batchLog": "https://h.example.org/condor_logs/26-10-02_17/grid.13.0.log",
         "diagMessage": "Payload execution error: returned non-zero 2", "nativeExitCode": 2,
         "nativeStatus": "completed", "submitTime": "2026-10-02T17:00:00Z",
         "startTime": "2026-10-02T18:29:00Z", "endTime": "2026-10-02T18:29:01Z"},
        {"workerID": 14, "computingSite": "BNL", "queueName": "BNL_Q", "status": "failed",
         "batchID": "1234514.0", "nodeID": "node01.example.org",
         "computingElement": "gridgk01.example.org", "batchLog": None,
         "diagMessage": "Condor HoldReason: held", "nativeExitCode": None,
         "nativeStatus": None, "submitTime": "2026-10-02T17:00:00Z", "startTime": None,
         "endTime": "2026-10-02T18:29:00Z"},
        {"workerID": 16, "computingSite": "BNL", "queueName": "BNL_Q", "status": "missed",
         "batchID": "1234516.0", "nodeID": "node01.example.org",
         "computingElement": "gridgk01.example.org", "batchLog": None, "diagMessage": None,
         "nativeExitCode": None, "nativeStatus": None, "submitTime": "2026-10-02T17:00:00Z",
         "startTime": None, "endTime": "2026-10-02T18:25:00Z"},
        {"workerID": 18, "computingSite": "BNL", "queueName": "BNL_Q", "status": "failed",
         "batchID": "1234518.0", "nodeID": "node01.example.org",
         "computingElement": "gridgk01.example.org", "batchLog": None, "diagMessage": "old",
         "nativeExitCode": None, "nativeStatus": None, "submitTime": "2026-10-02T17:00:00Z",
         "startTime": None, "endTime": "2026-10-01T18:30:01Z"},
    ],
    "service_metrics": {"hostName": FQDN, "creationTime": "2026-10-02T18:25:00Z",
                        "metrics": METRICS},
    "worker_starts": {
        "BNL": {"started": 2, "by_status": {"finished": 1, "running": 1}},
        "BNL_ANALY": {"started": 1, "by_status": {"running": 1}},
    },
    "job_demand_cache": {
        "job_statistics.json": {"subKey": "", "lastUpdate": "2026-10-02T18:22:00Z",
                                "age_s": 480},
        "job_statistics_new.json": {"subKey": "", "lastUpdate": "2026-10-02T18:31:00Z",
                                    "age_s": -60},
        "panda_queues.json": {"subKey": "x\tq", "lastUpdate": None, "age_s": None},
    },
}


def test_it_reads_every_part_typed_through_the_real_client(
    tmp_path: Path, mariadb: MariaDB
) -> None:
    section = collect(settings_for(tmp_path, mariadb), NOW, SINCE, fqdn=FQDN)
    assert section == EXPECTED
    assert json.loads(json.dumps(section)) == section  # plain JSON types only


def test_it_reads_through_the_config_file(tmp_path: Path, mariadb: MariaDB) -> None:
    env = {"CW_TEST_DB_PORT": str(mariadb.port), "CW_TEST_DB_USER": USER}
    section = collect_with_config(write_cfg(tmp_path), env, NOW, SINCE, fqdn=FQDN)
    assert section == EXPECTED


def test_it_reaches_localhost_by_tcp_on_the_configured_port(
    tmp_path: Path, mariadb: MariaDB
) -> None:
    section = collect(settings_for(tmp_path, mariadb, host="localhost"), NOW, SINCE, fqdn=FQDN)
    assert section == EXPECTED


def test_it_delivers_nulls_for_a_host_without_metrics(tmp_path: Path, mariadb: MariaDB) -> None:
    section = collect(settings_for(tmp_path, mariadb), NOW, SINCE, fqdn="new.example.org")
    assert section["service_metrics"] == {"hostName": "new.example.org", "creationTime": None,
                                          "metrics": None}


class ArgvWatcher(threading.Thread):
    """Reads every process's argv and environment until stopped, as `ps` would."""

    def __init__(self, secrets: list[str]) -> None:
        super().__init__(daemon=True)
        self.secrets = [s.encode() for s in secrets]
        self.stopping = threading.Event()
        self.client_seen = 0
        self.leaks: list[str] = []

    def run(self) -> None:
        while not self.stopping.is_set():
            for pid in os.listdir("/proc"):
                if not pid.isdigit():
                    continue
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as handle:
                        argv = handle.read()
                    if b"--defaults-file=" in argv:
                        self.client_seen += 1
                        with open(f"/proc/{pid}/environ", "rb") as handle:
                            environ = handle.read()
                        if b"MYSQL_PWD=" in environ or any(s in environ for s in self.secrets):
                            self.leaks.append(f"environ of {pid}")
                except OSError:
                    continue
                if any(s in argv for s in self.secrets):
                    self.leaks.append(argv.decode(errors="replace"))
            time.sleep(0.01)


def slow_client(tmp_path: Path, seconds: float) -> tuple[str, Path]:
    """A `mysql` that notes its argv and option file mode, waits, then runs the real one."""
    real = binaries()[2]
    notes = tmp_path / "notes"
    script = tmp_path / "slow-mysql"
    script.write_text(
        "#!/bin/sh\n"
        f'printf "%s\\n" "$@" > {notes}.argv\n'
        f'stat -c %a "${{1#--defaults-file=}}" > {notes}.mode\n'
        f'ls -ld "$(dirname "${{1#--defaults-file=}}")" > {notes}.dir\n'
        f"sleep {seconds}\n"
        f'exec {real} "$@"\n'
    )
    script.chmod(0o755)
    return str(script), notes


def test_it_never_puts_the_password_in_argv_or_environment(
    tmp_path: Path, mariadb: MariaDB, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    monkeypatch.setenv("MYSQL_PWD", "from-the-environment")  # dropped, like MYSQL_HOST
    monkeypatch.setenv("MYSQL_HOST", "db.invalid")
    client, notes = slow_client(tmp_path, 0.5)
    watcher = ArgvWatcher([PASSWORD, CFG_PASSWORD, "p%w#"])
    watcher.start()
    try:
        section = collect(settings_for(tmp_path, mariadb), NOW, SINCE, mysql=client, fqdn=FQDN)
    finally:
        watcher.stopping.set()
        watcher.join()
    assert section == EXPECTED
    assert watcher.client_seen > 0, "the watcher never saw the client: the check proves nothing"
    assert watcher.leaks == []
    argv = notes.with_suffix(".argv").read_text().splitlines()
    assert argv[0].startswith("--defaults-file=")
    assert argv[1:] == ["--batch", "--skip-column-names", "--force",
                        "--connect-timeout=30", "--database=HARVESTER"]
    assert notes.with_suffix(".mode").read_text().strip() == "600"
    assert notes.with_suffix(".dir").read_text().startswith("drwx------")
    option_file = Path(argv[0].split("=", 1)[1])
    assert not option_file.exists() and not option_file.parent.exists()


def checksums(db: MariaDB) -> str:
    return db.sql("CHECKSUM TABLE pq_table, work_table, sm_table, cache_table EXTENDED;",
                  SCHEMA)


def test_it_writes_nothing_and_sends_only_selects(tmp_path: Path, mariadb: MariaDB) -> None:
    before = checksums(mariadb)
    collect(settings_for(tmp_path, mariadb), NOW, SINCE, fqdn=FQDN)
    assert checksums(mariadb) == before
    script = mysql_client.script(harvester_db._queries(NOW, SINCE, FQDN))
    lines = script.splitlines()
    assert lines[0] == "SET SESSION TRANSACTION READ ONLY;"
    assert all(line.startswith("SELECT ") and line.endswith(";") for line in lines[1:])


def test_the_read_only_session_it_opens_refuses_writes(mariadb: MariaDB) -> None:
    first_line = mysql_client.script([]).splitlines()[0]
    with pytest.raises(RuntimeError, match=r"ERROR 1792 \(25006\)"):
        mariadb.sql(f"{first_line}\nDELETE FROM sm_table;", SCHEMA)
    assert mariadb.sql("SELECT COUNT(*) FROM sm_table;", SCHEMA) == "3\n"


def test_it_reports_a_wrong_password_in_every_part_without_it(
    tmp_path: Path, mariadb: MariaDB
) -> None:
    section = collect(settings_for(tmp_path, mariadb, password="wrong%%pw"), NOW, SINCE)
    assert set(section) == set(EXPECTED)
    for part in section.values():
        assert part["error"].startswith("ERROR 1045 (28000): Access denied for user 'harvester'@")
        assert "wrong" not in part["error"]


def test_it_reports_a_server_that_is_down(tmp_path: Path, mariadb: MariaDB) -> None:
    settings = settings_for(tmp_path, mariadb)
    settings["port"] = free_port()  # nothing listens there
    section = collect(settings, NOW, SINCE)
    for part in section.values():
        assert part["error"].startswith(
            "ERROR 2002 (HY000): Can't connect to server on '127.0.0.1'")


def test_it_reports_a_missing_table_in_its_part_only(tmp_path: Path, mariadb: MariaDB) -> None:
    section = collect(settings_for(tmp_path, mariadb, schema="HARVESTER_PART"), NOW, SINCE)
    assert section == {
        "launch_limits": {}, "workers_now": {}, "workers_ended": {},
        "workers_not_finished_candidates": [],
        "service_metrics": {"error": "ERROR 1146 (42S02) at line 11: Table "
                                     "'HARVESTER_PART.sm_table' doesn't exist"},
        "worker_starts": {},
        "job_demand_cache": {"error": "ERROR 1146 (42S02) at line 15: Table "
                                      "'HARVESTER_PART.cache_table' doesn't exist"},
    }


def test_it_reports_an_unreadable_config_in_every_part(tmp_path: Path) -> None:
    missing = tmp_path / "absent.cfg"
    section = collect_with_config(str(missing), {}, NOW, SINCE)
    assert section == {part: {"error": f"cannot read {missing}: No such file or directory"}
                       for part in EXPECTED}


def test_it_reports_a_missing_client(tmp_path: Path, mariadb: MariaDB) -> None:
    client = str(tmp_path / "no-mysql")
    section = collect(settings_for(tmp_path, mariadb), NOW, SINCE, mysql=client)
    assert section == {part: {"error": f"cannot run {client}: No such file or directory"}
                       for part in EXPECTED}


def test_it_gives_up_on_a_client_that_hangs(tmp_path: Path, mariadb: MariaDB) -> None:
    client = tmp_path / "hanging-mysql"
    client.write_text("#!/bin/sh\nexec sleep 30\n")
    client.chmod(0o755)
    started = time.monotonic()
    section = collect(settings_for(tmp_path, mariadb), NOW, SINCE, mysql=str(client),
                      timeout=1)
    assert time.monotonic() - started < 10
    assert section == {part: {"error": f"{client} gave no answer within 1 s"}
                       for part in EXPECTED}


def test_it_does_not_read_a_sqlite_harvester() -> None:
    section = collect({"engine": "sqlite", "database_filename": "/x.db"}, NOW, SINCE)
    assert section == {part: {"error": "engine sqlite: only MariaDB is read (through mysql)"}
                       for part in EXPECTED}


def test_it_writes_an_option_file_the_client_reads_back() -> None:
    text = mysql_client.option_file({"user": "h", "password": 'a"b\\c\'d#e f\tg', "host":
                                      "localhost", "port": 3306, "use_mysqldb": False})
    assert text == ('[client]\nuser="h"\npassword="a\\"b\\\\c\\\'d#e f\\tg"\n'
                    'host="localhost"\nport=3306\nprotocol=TCP\n')


def test_it_leaves_the_socket_to_mysqldb_for_localhost() -> None:
    text = mysql_client.option_file({"user": "h", "password": "p", "host": "localhost",
                                      "port": 3306, "use_mysqldb": True})
    assert "protocol" not in text

