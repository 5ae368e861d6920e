"""What the PanDA view's tests share: a throwaway CA (tests/support/tls.py's helper, with the
`openssl` command line), the loopback IRI API over HTTPS with it, and a client that trusts it;
the session's loopback PostgreSQL for the PanDA server's tables (`server`, a database of its
own for each test: panda_tables.py), and `remote_harvester_report` run on a copy of the migrated
monitor database (`run`).

In-process tests use `trusting` (the seam's TLS context given the test CA, verified as any
other); a command run as a subprocess trusts it with `SSL_CERT_FILE=<ca.cert>` in its
environment, which the default context reads.
"""

from __future__ import annotations

import datetime as dt
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest

from clusterwatch import http_deadline as deadline
from clusterwatch.loopback.fake_iri import FakeIri
from clusterwatch.loopback.postgres import Postgres
from clusterwatch.monitor.panda.panda_settings import PandaDatabase
from tests.components import need_binary
from tests.monitor.panda.iri_support import CONFIG, CONFIG_PATH, RESOURCE, TOKEN
from tests.monitor.panda.job_tables import create_job_tables
from tests.monitor.panda.panda_tables import (
    configure,
    fill,
    fresh_database,
    shifted,
)
from tests.monitor.panda.remote_report_support import Run
from tests.monitor.panda.remote_rows import NOW, perlmutter_rows
from tests.support.tls import ServerCert, make_ca, make_server_cert


@pytest.fixture(scope="session")
def iri_cert(tmp_path_factory: pytest.TempPathFactory) -> ServerCert:
    openssl = need_binary("openssl")
    base = tmp_path_factory.mktemp("iri-tls")
    return make_server_cert(make_ca(base, openssl=openssl), base, openssl=openssl)


@pytest.fixture
def iri_tls(iri_cert: ServerCert) -> ssl.SSLContext:
    """A server context for loopback HTTPS servers with the test certificate."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(iri_cert.cert), str(iri_cert.key))
    return context


@pytest.fixture
def trusting(iri_cert: ServerCert, monkeypatch: pytest.MonkeyPatch) -> None:
    """The client trusts the test CA, and verifies the server as it verifies any other."""
    context = deadline.new_tls_context()
    context.load_verify_locations(str(iri_cert.ca.cert))
    monkeypatch.setattr(deadline, "_tls_context", lambda: context)


@pytest.fixture
def iri(iri_tls: ssl.SSLContext) -> Iterator[FakeIri]:
    """The loopback IRI API (HTTPS, test CA) serving CONFIG at RESOURCE:CONFIG_PATH."""
    with FakeIri(TOKEN, {RESOURCE: {CONFIG_PATH: CONFIG}}, tls=iri_tls) as server:
        yield server


@pytest.fixture(scope="session")
def server(loopback_postgres: Postgres) -> Postgres:
    """The loopback PostgreSQL for the PanDA server's tables: the session's one
    (tests/conftest.py), on which each test makes a database of its own (`fresh_database`)."""
    return loopback_postgres


@pytest.fixture
def panda(server: Postgres, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> PandaDatabase:
    """A fresh database with the PanDA server's job tables, configured as production does."""
    database = fresh_database(server)
    create_job_tables(database)
    configure(database, tmp_path, monkeypatch)
    return database


@pytest.fixture
def run(tmp_path: Path, migrated_sqlite: Path, server: Postgres) -> Run:
    """The Perlmutter-like scenario, dated at this clock's now, in a fresh PanDA database."""
    database = fresh_database(server)
    now = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    fill(database, shifted(perlmutter_rows(), now - NOW))
    return Run(tmp_path, migrated_sqlite, database)
