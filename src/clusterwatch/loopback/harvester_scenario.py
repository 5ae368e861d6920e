"""Three harvester hosts as files on this machine, for the real reporter to read.

Each host has its log directory, `panda_harvester.cfg` (mode 600: it holds the database
password), `panda_queueconfig.json`, condor event logs, the reporter's environment file and
state directory. `rounds` appends what the harvester would have written between two reporter
runs, and inserts the workers that ended meanwhile into its database:

- pandaharvester01 (current harvester): the reporter's `new` fixture logs (fetches that
  mostly work, some SSL and timeout failures), then a healthy interval;
- pandaharvester02: every fetch fails with `SSLError ... CERTIFICATE_VERIFY_FAILED`, the
  2026-10-02 signature (it shares BNL_PanDA_1 with pandaharvester01);
- osgharvester03 (the 2020 harvester generation): the `old` fixture logs, then healthy; its
  database engine is sqlite, which the reporter does not read: every database part says so.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from clusterwatch.loopback import harvester_fixture as db_fixture
from clusterwatch.loopback import harvester_logs as logs
from clusterwatch.loopback.mariadb import MariaDB

PANDA = "pandaserver01.sdcc.bnl.gov"
DB_USER = "harvester"
PILOT_IMAGE = "/cvmfs/singularity.opensciencegrid.org/eic/eic_xl:25.07-stable"


@dataclass(frozen=True)
class Harvester:
    key: str
    fqdn: str
    generation: str  # "new" or "old" log formats
    queues: tuple[str, ...]
    schema: Optional[str]  # MariaDB schema; None: a sqlite harvester
    broken: bool  # every fetch fails with a certificate error
    first_worker: int
    root: Path

    @property
    def log_dir(self) -> Path:
        return self.root / "logs"

    @property
    def state_dir(self) -> Path:
        return self.root / "reporter-state"

    @property
    def env_file(self) -> Path:
        return self.root / "reporter.env"

    @property
    def cfg(self) -> Path:
        return self.root / "panda_harvester.cfg"

    @property
    def queue_config(self) -> Path:
        return self.root / "panda_queueconfig.json"

    def reporter_args(self, volumes: Sequence[str]) -> list[str]:
        return ["--report-as", self.key, "--env", str(self.env_file),
                "--state", str(self.state_dir), "--log-dir", str(self.log_dir),
                "--harvester-cfg", str(self.cfg), "--queue-config", str(self.queue_config),
                "--volumes", ",".join(volumes)]

    def write_env(self, monitor_url: str, token: str) -> None:
        """The reporter's environment file, mode 600 from the start (it holds the token)."""
        url = f"{monitor_url.rstrip('/')}/api/host-reports/{self.key}/"
        write_private(self.env_file, f"SWF_MONITOR_URL={url}\nSWF_REPORT_TOKEN={token}\n")


def harvesters(root: Path) -> list[Harvester]:
    return [
        Harvester("pandaharvester01", "pandaharvester01.sdcc.bnl.gov", "new",
                  ("BNL_PanDA_1", "UM_GREX_PanDA_1"), "HARVESTER01", False, 8_810_000,
                  root / "pandaharvester01"),
        Harvester("pandaharvester02", "pandaharvester02.sdcc.bnl.gov", "new",
                  ("BNL_PanDA_1", "BNL_GPU_1"), "HARVESTER02", True, 9_420_000,
                  root / "pandaharvester02"),
        Harvester("osgharvester03", "osgharvester03.cern.ch", "old", ("CERN-PROD",), None,
                  False, 0, root / "osgharvester03"),
    ]


def write_private(path: Path, text: str) -> None:
    """Writes a file that holds a secret: mode 600 from its creation."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.chmod(path, 0o600)  # O_CREAT's mode does not apply to a file that already existed


def _submit_template(host: Harvester) -> Path:
    """The first queue's submit template: its pilots bound to one image (pilot dispatch
    `image_bound`); the other queues name none (`unknown`)."""
    path = host.root / "submit_pilot.sdf"
    path.write_text("# the harvester drops this line\nexecutable = {executableFile}\n"
                    f'+SingularityImage = "{PILOT_IMAGE}"\n'
                    "log = {logDir}/{logSubdir}/grid.$(Cluster).$(Process).log\nqueue 1\n")
    return path


def set_up(host: Harvester, db: Optional[MariaDB], db_password: str, now: float) -> None:
    """The host's files and database as they stand before the reporter's first run."""
    host.root.mkdir(parents=True, exist_ok=True)
    for name in logs.LOG_NAMES:
        (host.log_dir / f"panda-{name}.log").parent.mkdir(parents=True, exist_ok=True)
        (host.log_dir / f"panda-{name}.log").touch()
    condor_dir = host.root / "condor_logs"
    config = db_fixture.queue_config(host.queues, host.fqdn, condor_dir)
    config[host.queues[0]]["submitter"]["templateFile"] = str(_submit_template(host))
    host.queue_config.write_text(json.dumps(config, indent=2) + "\n")
    if host.schema is None or db is None:
        write_private(host.cfg, "[db]\nengine = sqlite\n"
                                 "database_filename = /var/lib/harvester/harvester.db\n")
    else:
        write_private(host.cfg, (
            "[db]\nengine = mariadb\nuseMySQLdb = False\nhost = 127.0.0.1\n"
            f"port = {db.port}\nuser = {DB_USER}\npassword = {db_password.replace('%', '%%')}\n"
            f"schema = {host.schema}\n"))
        rows = db_fixture.history(host.queues, host.fqdn, now, host.first_worker)
        db_fixture.load(db, host.schema, DB_USER, db_password, rows)
        db_fixture.place_condor_logs(rows["work_table"], condor_dir)
    # Log history from before the first run: the first run only sets its positions.
    logs.append(host.log_dir, _interval(host, now - 4200, now - 3600, fixture=True))


def interval(host: Harvester, db: Optional[MariaDB], start: float, end: float,
             number: int) -> None:
    """What the harvester writes between two reporter runs, dated within [start, end]:
    log lines (the fixture logs in the first interval) and, in its database, workers that
    ended and workers that started. The caller runs the reporter after `end`."""
    logs.append(host.log_dir, _interval(host, start, end, fixture=number == 1))
    if db is not None and host.schema is not None and not host.broken:
        ended = db_fixture.ended(host.queues[0], host.fqdn, start, end,
                                 host.first_worker + 5000 + 10 * number,
                                 (1500 + 300 * number, 2400, 3300))
        starts = db_fixture.started(host.queues[0], host.fqdn, start, end,
                                    host.first_worker + 7000 + 10 * number, 2)
        db_fixture.insert(db, host.schema, {"work_table": ended + starts})


def _interval(host: Harvester, start: float, end: float, fixture: bool) -> dict[str, str]:
    if host.broken:
        return _cert_failures(host, start, end)
    if fixture:
        return logs.fitted(logs.fixture_logs(host.generation), start, end)
    if host.generation == "old":
        return {"job_fetcher": "".join(logs.fetch_old(at, host.queues[0], 8, 8)
                                       for at in logs.moments(start, end, EVENTS))}
    return _healthy(host, start, end)


EVENTS = 5  # fetch cycles a harvester logs per interval


def _healthy(host: Harvester, start: float, end: float) -> dict[str, str]:
    fetches, submits = [], []
    first, second = host.queues[0], host.queues[1]
    step = (end - start) / EVENTS / 4
    for n, at in enumerate(logs.moments(start, end - 3 * step, EVENTS)):
        fetches.append(logs.fetch(at, first, 35, 20 + n))
        fetches.append(logs.fetch(at + step, second, 10, 0, "no jobs in PanDA"))
        worker_id = host.first_worker + 7000 + 10 * n
        submits.append(logs.submitted(at + 2 * step, first, host.fqdn,
                                      [(worker_id, 6_723_500 + n), (worker_id + 1, 6_723_600 + n)],
                                      {"nQueue": 12, "nReady": 0, "nRunning": 41,
                                       "nNewWorkers": 2}, step=step / 4))
    return {"job_fetcher": "".join(fetches), "submitter": "".join(submits)}


def _cert_failures(host: Harvester, start: float, end: float) -> dict[str, str]:
    fetches, calls = [], []
    step = (end - start) / EVENTS / (len(host.queues) + 1)
    for at in logs.moments(start + step, end, EVENTS):
        for offset, queue in enumerate(host.queues):
            when = at - offset * step
            fetches.append(logs.fetch_cert_failure(when, queue, 35, PANDA))
            calls.append(logs.get_jobs_cert_failure(when - step / 10, queue, PANDA))
    return {"job_fetcher": "".join(fetches), "communicator": "".join(calls)}
