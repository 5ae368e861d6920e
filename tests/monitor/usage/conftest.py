"""The usage reports' fixtures: the usage site (tests/monitor/usage/site.py: a fake sacct and
a loopback Prometheus), in process (`usage_site`, `mail_site` with a real SMTP server) or
for the console script (`site`, and `migrated`: its data directory tmp_path/data); a private
munged for the session (`munged`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clusterwatch.loopback.munge import LoopbackMunge
from clusterwatch.loopback.services import MissingComponent
from clusterwatch.loopback.smtp import SmtpServer
from clusterwatch.monitor.usage.config import get_config
from tests.components import unavailable
from tests.monitor.usage.cli_support import Cli
from tests.monitor.usage.mail_support import SMTP_BACKEND, MailSite, mail_settings, started
from tests.monitor.usage.prometheus_range import RangePrometheus
from tests.monitor.usage.site import UsageSite, environment
from tests.support.monitor_console import copy_migrated


@pytest.fixture
def usage_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[UsageSite]:
    """The usage reports on, over a fake sacct and a loopback Prometheus."""
    with RangePrometheus() as prometheus:
        site = UsageSite(tmp_path, prometheus)
        for name, value in environment(site).items():
            monkeypatch.setenv(name, value)
        # A data directory of its own: the render cache lives there.
        from django.conf import settings

        monkeypatch.setattr(settings, "DATA_DIR", tmp_path / "data")
        get_config.cache_clear()
        yield site
    get_config.cache_clear()


@pytest.fixture
def smtp() -> Iterator[SmtpServer]:
    server = started(SmtpServer())
    try:
        yield server
    finally:
        server.down()


@pytest.fixture
def mail_site(usage_site: UsageSite, smtp: SmtpServer, settings: Any) -> MailSite:
    """The email on, to the loopback SMTP server; every user is user@example.org."""
    settings.EMAIL_BACKEND = SMTP_BACKEND  # pytest-django puts the in-memory one there
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", smtp.port
    settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
    settings.EMAIL_HOST_USER, settings.EMAIL_TIMEOUT = "", 5.0
    settings.USAGE_MAIL = mail_settings()
    return MailSite(usage_site, smtp)


@pytest.fixture
def site(tmp_path: Path) -> Iterator[UsageSite]:
    """The usage site for the console script (tests/monitor/usage/cli_support.py)."""
    with RangePrometheus() as prometheus:
        yield UsageSite(tmp_path, prometheus)


@pytest.fixture
def migrated(tmp_path: Path, migrated_sqlite: Path) -> Path:
    """tmp_path/data, the console script's data directory: a copy of the migrated one."""
    return copy_migrated(migrated_sqlite, tmp_path / "data")


@pytest.fixture
def mail_cli(tmp_path: Path, migrated_sqlite: Path) -> Iterator[Cli]:
    """The email commands' console script (tests/monitor/usage/cli_support.Cli) on a copy of
    the migrated database, with an SMTP server that needs no login."""
    with RangePrometheus() as prometheus:
        server = SmtpServer()
        try:
            server.__enter__()
        except MissingComponent as missing:
            unavailable(missing)
        try:
            tool = Cli(tmp_path, UsageSite(tmp_path, prometheus), server)
            copy_migrated(migrated_sqlite, Path(tool.env["CLUSTERWATCH_DATA_DIR"]))
            yield tool
        finally:
            server.down()


@pytest.fixture(scope="session")
def munged() -> Iterator[LoopbackMunge]:
    """A private munged with a key of its own (clusterwatch.loopback.munge), started once per
    session and stopped however it ends; a missing munged fails under CI=true."""
    try:
        server = LoopbackMunge()
    except MissingComponent as missing:
        unavailable(missing)
    with server:
        yield server
