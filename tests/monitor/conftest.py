"""Fixtures the monitor's test folders share; each is here because its users are in several
folders below (one folder's own fixtures are in that folder's conftest.py).

Migrated databases: `migrate` is seconds of Django start and DDL, and most tests that run
the monitor as a process need only its result, an empty migrated database. So it runs once
per pytest process for each kind, and tests copy the result:

- `migrated_sqlite`: a data directory with a migrated SQLite database, for the console
  script run as a timer or an operator runs it (SQLite in the data directory, whichever
  pass: tests/support/monitor_console.py copies it);
- `migrated_database`: the harness's private database, migrated (SQLite, or PostgreSQL
  during the PostgreSQL pass), the template of `private_database(..., template=...)`: a
  file copy, or `CREATE DATABASE ... TEMPLATE`.

The tests whose subject is `migrate` itself (migrations complete, the CLI's migrate, an
upgrade from an older schema) still run it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from clusterwatch.loopback.monitor_server import migrated_database as migrated_template
from clusterwatch.loopback.slapd import Slapd, TlsFiles
from tests.components import need_binary
from tests.monitor.ldap_support import running_directory
from tests.support.monitor_console import migrate_data_dir
from tests.support.tls import CA, make_ca, make_server_cert


@pytest.fixture(scope="session")
def migrated_sqlite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A monitor data directory (SQLite database migrated, secret key): copy it, never
    write to it."""
    return migrate_data_dir(tmp_path_factory.mktemp("migrated-sqlite") / "data")


@pytest.fixture(scope="session")
def migrated_database(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """CLUSTERWATCH_DATABASE_* settings of a migrated private database, for
    `private_database(data_dir, template=migrated_database)`; never served or written."""
    with migrated_template(tmp_path_factory.mktemp("migrated-database")) as settings:
        yield settings


@pytest.fixture(scope="session")
def directory_ca(tmp_path_factory: pytest.TempPathFactory) -> CA:
    """The CA that signed the LDAP directory's certificate."""
    return make_ca(tmp_path_factory.mktemp("ca"), openssl=need_binary("openssl"))


@pytest.fixture(scope="session")
def directory(tmp_path_factory: pytest.TempPathFactory, directory_ca: CA) -> Iterator[Slapd]:
    """slapd on ldap:// (StartTLS offered) and ldaps://, certificate signed by
    `directory_ca`, with the directory's users; one for the LDAP login and outage tests. A
    test that pauses it (SIGSTOP) resumes it before it ends, and none changes its entries."""
    leaf = make_server_cert(directory_ca, tmp_path_factory.mktemp("cert"),
                            openssl=need_binary("openssl"))
    with running_directory(tmp_path_factory.mktemp("slapd"),
                           tls=TlsFiles(cert=leaf.cert, key=leaf.key)) as server:
        yield server
