"""An upgrade from the previous release (b801da4, before issue 20 moved the monitor's app to
clusterwatch.monitor.core) migrates cleanly: its database, with rows in every table, takes
the installed console script's `migrate`, nothing stays unapplied or unwritten, every row is
still there and reads through the current models, its host token still writes its key, its
usage token still authenticates, and the admin still lists the moved models for staff.

The previous release's database is a committed fixture (fixtures/, made by make_fixtures.py
against a checkout of that release): SQLite here, PostgreSQL in the PostgreSQL pass (the
`private_database` of that pass is a fresh database on its server, loaded with the release's
pg_dump by psql). One upgrade per module; the tests read what it left.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from clusterwatch.loopback.monitor_client import Session, get
from clusterwatch.loopback.monitor_server import (
    MonitorServer,
    monitor_environ,
    monitor_server,
    private_database,
)
from clusterwatch.loopback.postgres import PostgresMissing, find_bindir
from clusterwatch.monitor.core.database_url import parse
from tests.components import unavailable
from tests.monitor.served_support import now, post, record_body
from tests.support.monitor_console import console

FIXTURES = Path(__file__).parent / "fixtures"
MANIFEST = json.loads((FIXTURES / "previous.json").read_text(encoding="utf-8"))
READER = Path(__file__).parent / "read_through_models.py"
CREDENTIALS = MANIFEST["credentials"]
# Tables an upgrade may add rows to: its own migrations, the permissions and content types
# that post_migrate makes for a model new since the release.
GROWING = {"django_migrations", "auth_permission", "django_content_type"}
# The kernel's models, registered in the admin under the label the move kept.
KERNEL_ADMIN = {"hosttoken", "hostreport", "latestreport", "latestqueue", "jobpush",
                "registeredharvester"}
ADMIN_LINK = re.compile(r'href="/admin/([a-z_]+)/([a-z_]+)/"')


@dataclass(frozen=True)
class Upgraded:
    """What the upgrade printed, what the database held right after it, and the monitor
    served on it."""

    migrate: subprocess.CompletedProcess[str]
    showmigrations: subprocess.CompletedProcess[str]
    makemigrations: subprocess.CompletedProcess[str]
    reading: subprocess.CompletedProcess[str]  # read_through_models.py's run
    alarms: subprocess.CompletedProcess[str]
    server: MonitorServer

    @property
    def read(self) -> dict[str, Any]:
        """What read_through_models.py printed; its failure fails the test reading it."""
        done = self.reading
        assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
        read: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        return read


def load_previous_release(database: Mapping[str, str]) -> None:
    """Fills the private database (empty) with the previous release's fixture."""
    entry: dict[str, Any] = parse(database["CLUSTERWATCH_DATABASE_URL"],
                                  database.get("CLUSTERWATCH_DATABASE_PASSWORD_FILE"))
    if entry["ENGINE"].endswith("sqlite3"):
        Path(entry["NAME"]).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        shutil.copyfile(FIXTURES / "previous.sqlite3", entry["NAME"])
        return
    try:
        psql = find_bindir() / "psql"
    except PostgresMissing as missing:
        unavailable(missing)  # a failure under CI=true, as the PostgreSQL pass itself is
    # The password reaches psql in its environment, never in its arguments.
    done = subprocess.run(
        [str(psql), "--no-psqlrc", "-X", "-q", "-v", "ON_ERROR_STOP=1", "--single-transaction",
         "-h", entry["HOST"], "-p", str(entry["PORT"] or 5432), "-U", entry["USER"],
         "-d", entry["NAME"], "-f", str(FIXTURES / "previous.postgresql.sql")],
        env={**os.environ, "PGPASSWORD": entry["PASSWORD"] or ""}, capture_output=True,
        text=True, timeout=120, check=False, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, f"psql could not load the fixture:\n{done.stderr[-2000:]}"


@pytest.fixture(scope="module")
def upgraded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Upgraded]:
    data = tmp_path_factory.mktemp("upgrade")
    with private_database(data) as database:
        load_previous_release(database)
        environ = monitor_environ(data, database)
        migrate = console(environ, "migrate", "--noinput")
        if migrate.returncode != 0:
            pytest.fail(f"migrate of the previous release's database failed "
                        f"({migrate.returncode}):\n{(migrate.stdout + migrate.stderr)[-4000:]}",
                        pytrace=False)
        showmigrations = console(environ, "showmigrations")
        makemigrations = console(environ, "makemigrations", "--check", "--dry-run")
        reading = console(environ, "shell", "-c", f"import runpy; runpy.run_path({str(READER)!r}, "
                          "run_name='__main__')")
        alarms = console(environ, "alarms_status", "--json")
        with monitor_server(data, database=database, migrate=False) as server:
            yield Upgraded(migrate, showmigrations, makemigrations, reading, alarms, server)


def test_the_upgrade_ran_on_the_pass_database(upgraded: Upgraded) -> None:
    # The PostgreSQL pass names its server in CLUSTERWATCH_DATABASE_URL; SQLite otherwise.
    postgres = os.environ.get("CLUSTERWATCH_DATABASE_URL", "").startswith(("postgres:",
                                                                         "postgresql:"))
    assert upgraded.read["vendor"] == ("postgresql" if postgres else "sqlite")


def test_the_previous_release_migrates_with_nothing_left_to_apply_or_write(
        upgraded: Upgraded) -> None:
    assert upgraded.migrate.returncode == 0
    shown = upgraded.showmigrations
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert "[X]" in shown.stdout
    unapplied = [line.strip() for line in shown.stdout.splitlines() if "[ ]" in line]
    assert unapplied == [], shown.stdout
    made = upgraded.makemigrations
    assert made.returncode == 0, (made.stdout + made.stderr)[-2000:]
    assert "No changes detected" in made.stdout


def test_every_row_of_the_previous_release_is_still_there(upgraded: Upgraded) -> None:
    tables = upgraded.read["tables"]
    kept = {table: count for table, count in MANIFEST["tables"].items() if table not in GROWING}
    assert {table: tables.get(table) for table in kept} == kept
    for table in GROWING:
        assert tables[table] >= MANIFEST["tables"][table], table


def test_every_row_reads_through_the_current_models(upgraded: Upgraded) -> None:
    models, tables = upgraded.read["models"], upgraded.read["tables"]
    # A table of the release's that no current model maps would be data the upgrade lost
    # track of (a model that moves between apps keeps its table).
    unmapped = sorted(set(MANIFEST["tables"]) - set(models) - {"django_migrations"})
    assert unmapped == []
    assert {table: read["rows"] for table, read in models.items()} == {
        table: tables[table] for table in models}


def test_the_content_types_keep_their_ids_and_cover_every_model(upgraded: Upgraded) -> None:
    content_types = upgraded.read["content_types"]
    assert {label: content_types.get(label) for label in MANIFEST["content_types"]} == \
        MANIFEST["content_types"]
    own = {read["model"] for read in upgraded.read["models"].values()
           if not read["auto_created"]}  # a many-to-many table has no content type
    assert sorted(own - set(content_types)) == []


def test_the_previous_release_alarms_and_queued_messages_still_read(
        upgraded: Upgraded) -> None:
    assert upgraded.alarms.returncode == 0, upgraded.alarms.stderr[-2000:]
    status = json.loads(upgraded.alarms.stdout)
    opened = {alarm["target"] for alarm in status["open_alarms"]}
    assert opened == {"reporter_stale:pandaharvester01", "reporter_stale:silentharvester01"}
    pending = status["channels"]["ops"]["pending"]
    assert sorted((event["action"], event["target"]) for event in pending) == [
        ("alert", target) for target in sorted(opened)]
    assert status["last_run"]["raised"] == 2


def test_the_previous_release_host_token_still_writes_its_key(upgraded: Upgraded) -> None:
    key, token = CREDENTIALS["host_key"], CREDENTIALS["host_token"]
    body = record_body(key, now() - dt.timedelta(seconds=5))
    answer = post(upgraded.server, key, token, body)
    assert answer.status == 201, answer.body[:300]
    assert (answer.json()["key"], answer.json()["latest"]) == (key, True)  # after the three
    forged = token[:-1] + ("A" if token[-1] != "A" else "B")  # its prefix, not its digest
    assert post(upgraded.server, key, forged, body).status == 401


def test_the_previous_release_usage_token_still_authenticates(upgraded: Upgraded) -> None:
    # The image-demand API takes usage tokens; with no PanDA database configured it answers
    # 404 to whoever it admitted and 403 to anyone else.
    url = f"{upgraded.server.url}/api/osg-image-demand/?memory_mb=4096&cores=1"
    admitted = get(url, headers={"Authorization": f"Bearer {CREDENTIALS['usage_token']}"})
    assert admitted[0] == 404, admitted[1][:300]
    assert "the PanDA view is off" in json.loads(admitted[1])["error"]
    assert get(url)[0] == 403


def test_the_admin_lists_the_moved_models_for_staff(upgraded: Upgraded) -> None:
    staff = Session(upgraded.server.url)
    staff.login(*CREDENTIALS["staff"])
    status, index = staff.get("/admin/")
    assert status == 200
    changelists = sorted(set(ADMIN_LINK.findall(index.decode())))
    assert {model for label, model in changelists if label == "monitor"} >= KERNEL_ADMIN
    pages = {}
    for label, model in changelists:
        status, page = staff.get(f"/admin/{label}/{model}/")
        assert status == 200, f"/admin/{label}/{model}/ answered {status}"
        pages[label, model] = page.decode()
    token_prefix = CREDENTIALS["host_token"][:12]
    assert token_prefix in pages["monitor", "hosttoken"]
    usage_prefix = CREDENTIALS["usage_token"][:12]
    assert [name for name, page in pages.items() if usage_prefix in page], \
        "no admin changelist shows the release's usage token"


def test_the_admin_history_of_a_token_shows_the_release_log_entry(upgraded: Upgraded) -> None:
    # The log entry names its object by content type: it resolves only if the id stayed.
    staff = Session(upgraded.server.url)
    staff.login(*CREDENTIALS["staff"])
    status, page = staff.get("/admin/monitor/hosttoken/")
    assert status == 200
    change = re.search(r'href="/admin/monitor/hosttoken/(\d+)/change/[^"]*">'
                       + re.escape(CREDENTIALS["host_token"][:12]), page.decode())
    assert change is not None
    status, history = staff.get(f"/admin/monitor/hosttoken/{change.group(1)}/history/")
    assert status == 200
    assert "Changed Note." in history.decode()
    assert CREDENTIALS["staff"][0] in history.decode()
