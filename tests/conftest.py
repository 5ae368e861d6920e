"""Fixtures for every test folder; the policy behind them is in tests/components.py."""

from __future__ import annotations

from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any, Callable

import pytest

from clusterwatch.loopback.mariadb import MariaDB
from clusterwatch.loopback.postgres import Postgres, PostgresMissing, postgres_server
from clusterwatch.loopback.services import MissingComponent
from clusterwatch.loopback.smtp import SmtpServer
from tests.components import need_binary as _need_binary  # the fixture below has its name
from tests.components import unavailable
from tests.support import admission_db as admission
from tests.support import harvester_db, tiers, workers
from tests.support.harvester_host import Host
from tests.support.reporter_zipapp import build_zipapp
from tests.support.tls import CA, ServerCert, make_ca, make_server_cert


def pytest_configure(config: pytest.Config) -> None:
    tiers.guard_private_database()


# A wrapper: the markers are given before any other plugin's hook reads them (-m and -k
# deselect by them, pytest-xdist turns xdist_group into the group it schedules), and the
# order is set after pytest-django's (which sorts by the kind of database a test uses).
@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(config: pytest.Config,
                                  items: list[pytest.Item]) -> Generator[None, None, None]:
    tiers.mark(items)  # monitor_db and service: what each test reaches, see tests/support/tiers
    workers.group_by_module(config, items)  # one xdist worker per module: tests/support/workers
    yield
    workers.longest_first(config, items)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    tiers.running(item)
    try:
        return (yield)
    finally:
        tiers.running(None)


@pytest.fixture
def need_binary() -> Callable[[str], str]:
    """`need_binary("prometheus")` returns the binary's path, or fails/skips."""
    return _need_binary


@pytest.fixture
def operator(client: Any, django_user_model: Any) -> Any:
    """pytest-django's client, logged in (in process) as a new user `operator` of the
    operators group (not staff): the monitor's pages in tests/monitor and the integration
    chains that end on one."""
    from clusterwatch.monitor.core.operators import set_operator

    user = django_user_model.objects.create_user("operator", password="a long pass phrase")
    set_operator(user, True)
    client.force_login(user)
    return client


# --- services that test folders share: each started once per run (per xdist worker) -----


@pytest.fixture(scope="session")
def mariadb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MariaDB]:
    """The harvester's MariaDB (tests/support/harvester_db.py): its schemas are read, never
    changed; a test that needs other rows makes its own schema on this server."""
    with harvester_db.seeded_server(tmp_path_factory.mktemp("mariadb")) as db:
        yield db


@pytest.fixture
def mariadb_scratch(mariadb: MariaDB) -> Iterator[MariaDB]:
    """The same server for a test that makes harvester schemas of its own (for the user
    `harvester` with harvester_db.PASSWORD, the user the server already has): the databases
    it made are dropped when it ends."""
    before = set(mariadb.sql("SHOW DATABASES;").split())
    yield mariadb
    for made in sorted(set(mariadb.sql("SHOW DATABASES;").split()) - before):
        mariadb.sql(f"DROP DATABASE `{made}`;")


@pytest.fixture(scope="session")
def admission_db(mariadb: MariaDB) -> MariaDB:
    """The same server with the admission tests' work_table (and a schema without one)."""
    admission.create_schemas(mariadb)
    return mariadb


@pytest.fixture
def admission_host(tmp_path: Path, admission_db: MariaDB,
                   monkeypatch: pytest.MonkeyPatch) -> Host:
    """A harvester host at NOW reading admission_db, with the workers' condor event logs and
    launcher stderr on disk: the reporter tests' and the worker-starts page's."""
    return admission.host_reading(tmp_path, admission_db, monkeypatch)


@pytest.fixture(scope="session")
def zipapp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The reporter's zipapp built by the installed console script, once per run."""
    return build_zipapp(tmp_path_factory.mktemp("zipapp"))


@pytest.fixture(scope="session")
def loopback_postgres() -> Iterator[Postgres]:
    """A private PostgreSQL on loopback (clusterwatch.loopback.postgres): each test that
    writes makes a database of its own on it; none changes the server or its `clusterwatch`
    database. A test of the server's own start or stop starts its own."""
    try:
        with postgres_server() as server:
            yield server
    except PostgresMissing as missing:
        unavailable(missing)


@pytest.fixture(scope="session")
def smtp_pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """For SMTP over TLS: a throwaway CA (`ca`), the loopback server's certificate it signed
    (`server`, for 127.0.0.1 and localhost) and an impostor's signed by another CA
    (`impostor`); made once per run with openssl."""
    openssl = _need_binary("openssl")
    root = tmp_path_factory.mktemp("smtp-pki")
    ca: CA = make_ca(root, "ca", openssl)
    server: ServerCert = make_server_cert(ca, root, "server", openssl)
    impostor = make_server_cert(make_ca(root, "other-ca", openssl), root, "impostor", openssl)
    return {"ca": ca, "server": server, "impostor": impostor}


@pytest.fixture
def smtp_servers() -> Iterator[Callable[..., SmtpServer]]:
    """`smtp_servers(**options)`: a real SMTP server (aiosmtpd, clusterwatch.loopback.smtp)
    on a free loopback port, with SmtpServer's options (login, security, cert, echo_auth);
    each is stopped when the test ends. Without aiosmtpd the test is `unavailable`."""
    started: list[SmtpServer] = []

    def start(**options: Any) -> SmtpServer:
        server = SmtpServer(**options)
        try:
            server.__enter__()
        except MissingComponent as missing:
            unavailable(missing)
        started.append(server)
        return server

    try:
        yield start
    finally:
        for server in started:
            server.release()
            server.down()
