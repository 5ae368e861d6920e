"""A monitor serving the usage reports under gunicorn for one site, with staff member alice
logged in: the served-probe and served-figure tests' shared setting."""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from clusterwatch.loopback.monitor_client import Session
from clusterwatch.loopback.monitor_server import MonitorServer, monitor_server, private_database
from tests.monitor.usage.site import UsageSite, environment

CREATE_STAFF = """
import os
from django.contrib.auth.models import User
User.objects.create_user("alice", password=os.environ["CW_TEST_PASSWORD"], is_staff=True)
"""


@dataclass(frozen=True)
class Served:
    server: MonitorServer
    session: Session = field(repr=False)


@contextlib.contextmanager
def served_usage(tmp_path: Path, template: dict[str, str], site: UsageSite) -> Iterator[Served]:
    """The monitor on a copy of the migrated `template` database, reading `site`'s accounting
    and Prometheus, two gunicorn workers; alice's password is the test's own random one."""
    password = secrets.token_urlsafe(16)
    with (
        private_database(tmp_path, template=template) as database,
        monitor_server(
            tmp_path / "data",
            database=database,
            migrate=False,
            extra_environ=environment(site),
            workers=2,
        ) as server,
    ):
        server.manage("shell", "-c", CREATE_STAFF, extra_environ={"CW_TEST_PASSWORD": password})
        session = Session(server.url)
        session.login("alice", password)
        yield Served(server, session)
