"""Makes the upgrade test's fixtures: the previous release's monitor database, with rows.

    .venv/bin/python tests/monitor/upgrade/make_fixtures.py PREVIOUS_CHECKOUT

PREVIOUS_CHECKOUT is a checkout of the previous release (`git worktree add /tmp/before
b801da4`, the release before issue 20 moved the monitor's app to clusterwatch.monitor.core).
Run from this repository with its virtual environment (the previous release needs the same
Django and drivers), and PostgreSQL's server binaries installed (scripts/setup installs them).
It writes, under tests/monitor/upgrade/fixtures/:

- `previous.sqlite3`: the previous release's SQLite database (`VACUUM INTO`: one file);
- `previous.postgresql.sql`: the same rows on PostgreSQL, as plain SQL from `pg_dump
  --no-owner --no-privileges` (load it with `psql --single-transaction -f`);
- `previous.json`: what both hold, for the test: the release, each table's row count, the
  content types, and the fixture's credentials (a host token, a usage API token, the
  staff's password), made for these files alone and good for nothing else.

How: for each engine the previous release's own console code runs in a child interpreter
whose PYTHONPATH is PREVIOUS_CHECKOUT/src (its settings module, clusterwatch.monitor.settings):
`clusterwatch monitor migrate`, then this file with `--populate`, which writes the rows the
way that release writes them (records posted to its ingest API, alarms by its
`evaluate_alarms` with a channel that cannot be reached, so the outbox keeps the messages)
and the rest through its models, then prints the counts. The credentials are fixed texts
(written as the release's token rules store them: prefix and SHA-256), so both databases
hold the same ones and the test knows them.
"""

from __future__ import annotations

import argparse
import importlib
import io
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures"
SQLITE_FIXTURE = FIXTURES / "previous.sqlite3"
POSTGRES_FIXTURE = FIXTURES / "previous.postgresql.sql"
MANIFEST = FIXTURES / "previous.json"
RELEASE = "b801da4"
PREVIOUS_SETTINGS = "clusterwatch.monitor.settings"  # the previous release's shell

# The fixture's own credentials (see the docstring): a host token of the shape the release
# makes (cwh_ + 8 letters or digits, _, 43 URL-safe characters), a usage API token (cwu_).
HOST_TOKEN = "cwh_Upgrade1_" + "fixture-host-token-of-the-upgrade-test-0001"
USAGE_TOKEN = "cwu_Upgrade1_" + "fixture-usage-token-of-the-upgrade-test-001"
KEY = "pandaharvester01"
OTHER_KEY = "pandaharvester02"  # its token is revoked
STAFF = ("upgrade-staff", "staff pass phrase of the upgrade fixture")
OPERATOR = ("upgrade-operator", "operator pass phrase of the upgrade fixture")
RESEARCHER = ("alice", "researcher pass phrase of the upgrade fixture")
# Collection times of the three stored records: past any clock the test runs under.
COLLECTED = ("2026-11-29T13:30:48Z", "2026-11-29T13:35:48Z", "2026-11-29T13:40:48Z")
UNREACHABLE_HOOK = "http://127.0.0.1:9/hook"  # the discard port: every delivery fails


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("previous", type=Path, help="a checkout of the previous release")
    parser.add_argument("--populate", type=Path, metavar="EXAMPLE_RECORD",
                        help=argparse.SUPPRESS)  # the child's part: rows into its database
    args = parser.parse_args(argv)
    if args.populate is not None:
        print(json.dumps(populate(args.previous.resolve(), args.populate)))
        return 0
    make(args.previous.resolve())
    return 0


# --- the parent: a database per engine, then the fixture files -----------------------------


def make(previous: Path) -> None:
    from clusterwatch.loopback.postgres import postgres_server

    FIXTURES.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="cw-upgrade-fixtures-") as scratch:
        work = Path(scratch)
        database = work / "sqlite" / "monitor.sqlite3"
        sqlite_rows = migrated_and_populated(previous, work / "sqlite", {
            "CLUSTERWATCH_DATABASE_URL": f"sqlite:///{database}"})
        SQLITE_FIXTURE.unlink(missing_ok=True)
        with sqlite3.connect(database) as connection:
            connection.execute("VACUUM INTO ?", (str(SQLITE_FIXTURE),))
        with postgres_server() as server:
            server.psql("CREATE DATABASE previous;")
            postgres_rows = migrated_and_populated(previous, work / "postgresql",
                                                   server.environ("previous"))
            dump = subprocess.run(
                [str(server.bindir / "pg_dump"), "--no-owner", "--no-privileges",
                 "-h", str(server.socket_dir), "-p", str(server.port), "-U", "clusterwatch",
                 "-d", "previous"], capture_output=True, text=True, check=True, timeout=120)
        POSTGRES_FIXTURE.write_text(portable(dump.stdout), encoding="utf-8")
    if sqlite_rows["tables"] != postgres_rows["tables"]:
        raise SystemExit(f"the two databases differ: {sqlite_rows['tables']} vs "
                         f"{postgres_rows['tables']}")
    manifest = {"release": RELEASE, **sqlite_rows,
                "credentials": {"host_token": HOST_TOKEN, "host_key": KEY,
                                "usage_token": USAGE_TOKEN, "usage_user": RESEARCHER[0],
                                "staff": list(STAFF)}}
    MANIFEST.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {SQLITE_FIXTURE.name}, {POSTGRES_FIXTURE.name} and {MANIFEST.name} in "
          f"{FIXTURES}", file=sys.stderr)


def portable(dump: str) -> str:
    """The dump without pg_dump's `\\restrict KEY` and `\\unrestrict KEY` lines (since
    PostgreSQL 17.6, 16.10, 15.14, ...): a psql older than those releases refuses them, and
    the key is new on every run. They keep a hostile server from running psql meta-commands
    in a restore; this dump is committed, read in review and loaded by our own test."""
    return "".join(line for line in dump.splitlines(keepends=True)
                   if not line.startswith(("\\restrict ", "\\unrestrict ")))


def migrated_and_populated(previous: Path, data_dir: Path,
                           database: dict[str, str]) -> dict[str, Any]:
    """The previous release's `migrate` and this file's --populate on `database`."""
    data_dir.mkdir(mode=0o700, parents=True)
    environ = {name: value for name, value in os.environ.items()
               if not name.startswith("CLUSTERWATCH_") and name != "DJANGO_SETTINGS_MODULE"}
    environ.update(database, PYTHONPATH=str(previous / "src"), CLUSTERWATCH_DATA_DIR=str(data_dir),
                   DJANGO_SETTINGS_MODULE=PREVIOUS_SETTINGS,
                   CLUSTERWATCH_ALLOWED_HOSTS="testserver",
                   CLUSTERWATCH_ALARMS_CONFIG=str(alarms_config(data_dir)))

    def child(*arguments: str) -> str:
        done = subprocess.run([sys.executable, *arguments], env=environ, capture_output=True,
                              text=True, timeout=600, check=False, cwd=data_dir)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(arguments[:3])} failed ({done.returncode}):\n"
                             f"{done.stdout}{done.stderr}")
        return done.stdout

    child("-m", "clusterwatch", "monitor", "migrate", "--noinput", "-v", "0")
    example = previous / "tests" / "monitor" / "fixtures" / "record-example.json"
    rows: dict[str, Any] = json.loads(child(__file__, str(previous), "--populate", str(example)))
    return rows


def alarms_config(data_dir: Path) -> Path:
    """alarms.toml with one webhook channel that no delivery reaches."""
    hook = data_dir / "hook_url"
    hook.write_text(UNREACHABLE_HOOK + "\n", encoding="utf-8")
    hook.chmod(0o600)
    config = data_dir / "alarms.toml"
    config.write_text('[[channels]]\ntype = "webhook"\nname = "ops"\nurl_file = "hook_url"\n'
                      "timeout_s = 2\n", encoding="utf-8")
    return config


# --- the child: runs on the previous release ------------------------------------------------


def populate(previous: Path, example: Path) -> dict[str, Any]:
    """Rows in every table of the previous release's apps; the counts and content types."""
    import django

    django.setup()
    import clusterwatch

    if not Path(clusterwatch.__file__).resolve().is_relative_to(previous):
        raise SystemExit(f"imported {clusterwatch.__file__}, not the release in {previous}")
    from django.contrib.admin.models import CHANGE, LogEntry
    from django.contrib.auth.models import Permission, User
    from django.contrib.contenttypes.models import ContentType
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client

    # The previous release's modules, by name: several no longer exist in this tree.
    tokens = importlib.import_module("clusterwatch.monitor.ingest.tokens")
    api_tokens = importlib.import_module("clusterwatch.monitor.usage.api_tokens")
    monitor = importlib.import_module("clusterwatch.monitor.models")
    usage = importlib.import_module("clusterwatch.monitor.usage.models")
    set_operator = importlib.import_module("clusterwatch.monitor.operators").set_operator
    HostToken, HostTokenKey = monitor.HostToken, monitor.HostTokenKey
    RegisteredHarvester = monitor.RegisteredHarvester
    KeptSummary, UsageApiToken = usage.KeptSummary, usage.UsageApiToken
    UsageMail, UsageMailCursor = usage.UsageMail, usage.UsageMailCursor

    staff = User.objects.create_user(STAFF[0], password=STAFF[1], is_staff=True,
                                     is_superuser=True)
    operator = User.objects.create_user(OPERATOR[0], password=OPERATOR[1])
    set_operator(operator, True)
    # Permissions given by hand (the admin's way): a group's and a user's own.
    operator.groups.get().permissions.add(Permission.objects.get(codename="view_hostreport"))
    operator.user_permissions.add(Permission.objects.get(codename="view_alarm"))
    alice = User.objects.create_user(RESEARCHER[0], password=RESEARCHER[1],
                                     email="alice@example.org")

    host_prefix = tokens.prefix_of(HOST_TOKEN)
    assert host_prefix is not None, "HOST_TOKEN is not of the release's shape"
    token = HostToken.objects.create(prefix=host_prefix,
                                     digest=tokens.digest(HOST_TOKEN), note="upgrade fixture")
    HostTokenKey.objects.create(token=token, key=KEY)
    revoked, _ = tokens.create([OTHER_KEY], note="revoked before the upgrade")
    tokens.revoke(revoked)

    client = Client()
    record = json.loads(example.read_text(encoding="utf-8"))
    record["host"] = KEY
    for collected_at in COLLECTED:
        record["collected_at"] = collected_at
        answer = client.post(f"/api/host-reports/{KEY}/", json.dumps(record),
                             content_type="application/json",
                             HTTP_AUTHORIZATION=f"Token {HOST_TOKEN}")
        if answer.status_code != 201:
            raise SystemExit(f"ingest answered {answer.status_code}: {answer.content[:300]!r}")

    RegisteredHarvester.objects.create(key=KEY, note="reports itself")
    RegisteredHarvester.objects.create(
        key="remoteharvester01", remote=True, harvester_id="remote-01",
        queue_config="/etc/clusterwatch/remote-01-queues.json", note="built from PanDA")
    # Registered long ago and never heard from: its alarm opens on the first run.
    RegisteredHarvester.objects.create(key="silentharvester01",
                                       registered_at=django_time("2026-11-01T00:00:00Z"))
    # Alarms, the outbox (its messages kept: the channel cannot be reached), the run lease.
    call_command("evaluate_alarms", stdout=io.StringIO(), stderr=io.StringIO())

    client.force_login(staff)  # a session row
    LogEntry.objects.create(user=staff, content_type=ContentType.objects.get_for_model(token),
                            object_id=str(token.pk), object_repr=str(token)[:200],
                            action_flag=CHANGE, change_message='[{"changed": {"fields": '
                            '["Note"]}}]')

    usage_prefix = api_tokens.TOKEN_RE.fullmatch(USAGE_TOKEN)
    assert usage_prefix is not None, "USAGE_TOKEN is not of the release's shape"
    UsageApiToken.objects.create(user=alice, prefix=usage_prefix.group(1),
                                 digest=tokens.digest(USAGE_TOKEN), note="upgrade fixture")
    for jobid, cpu, memory, codes in (("4101", 0.25, 0.1, "low_cpu memory_over_requested"),
                                      ("4102", 0.95, 0.8, "")):
        KeptSummary.objects.create(
            jobid=jobid, user=RESEARCHER[0], account="physics", state="COMPLETED",
            start=django_time("2026-11-28T10:00:00Z"), end=django_time("2026-11-28T11:00:00Z"),
            cpu_efficiency=cpu, memory_efficiency=memory, warning_codes=codes,
            document={"jobid": jobid, "user": RESEARCHER[0], "account": "physics",
                      "state": "COMPLETED", "cpu_efficiency": cpu,
                      "memory_efficiency": memory, "warnings": codes.split()},
            plot_metrics=["cpu_usage", "memory_usage"] if jobid == "4101" else None)
    UsageMail.objects.create(jobid="4101", user=RESEARCHER[0], recipient="alice@example.org",
                             trigger="poller", state=UsageMail.SENT,
                             sent_at=django_time("2026-11-28T11:10:00Z"))
    UsageMail.objects.create(jobid="4102", user=RESEARCHER[0], recipient="alice@example.org",
                             trigger="mailprog", state=UsageMail.FAILED, attempts=5,
                             last_error="SMTP 550: mailbox unavailable")
    UsageMail.objects.create(jobid="4103", user=RESEARCHER[0], recipient="alice@example.org",
                             trigger="command")
    UsageMailCursor.objects.create(name="poller", last_run=django_time("2026-11-28T12:00:00Z"))

    tables = sorted(connection.introspection.table_names())
    with connection.cursor() as cursor:
        counts = {}
        for table in tables:
            # The names are the database's own tables, quoted.
            cursor.execute(f"SELECT COUNT(*) FROM {connection.ops.quote_name(table)}")  # noqa: S608
            counts[table] = cursor.fetchone()[0]
    empty = [table for table, count in counts.items() if count == 0]
    if empty:
        raise SystemExit(f"tables left empty: {empty}")
    return {"tables": counts,
            "content_types": {f"{ct.app_label}.{ct.model}": ct.pk
                              for ct in ContentType.objects.all()}}


def django_time(text: str) -> Any:
    import datetime as dt

    return dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.timezone.utc)


if __name__ == "__main__":
    if "--populate" not in sys.argv:
        # The parent runs from this repository: its harness starts PostgreSQL.
        sys.path.insert(0, str(HERE.parents[2]))
    sys.exit(main(sys.argv[1:]))
