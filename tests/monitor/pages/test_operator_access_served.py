"""The operators' pages as people meet them: the monitor under gunicorn, logins through the
real form, a local researcher and operator, and LDAP ones from the loopback slapd (alice is
in the directory group named as the operators group, bob in none).

The table of every asker is test_operator_access.py (Django's test client); this proves the
served monitor answers the same to each kind of login."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from clusterwatch.loopback.monitor_client import Session, get
from clusterwatch.loopback.slapd import Slapd
from tests.monitor.ldap_support import ldap_environ
from tests.monitor.pages.operator_paths import operator_paths
from tests.monitor.records import KEY
from tests.monitor.served_support import now, post, record_body, served, token_for

pytestmark = pytest.mark.integration

LOCAL = {"rita": "rita-a-long-passw0rd", "olga": "olga-a-long-passw0rd"}
# `monitor shell -c`: rita a researcher, olga in the group operators; passwords from the
# environment, never argv.
_ACCOUNTS = (
    "import os\n"
    "from django.contrib.auth.models import User\n"
    "from clusterwatch.monitor.core.operators import set_operator\n"
    "User.objects.create_user('rita', password=os.environ['RITA_PW'])\n"
    "set_operator(User.objects.create_user('olga', password=os.environ['OLGA_PW']), True)\n"
)


def test_the_served_monitor_shows_operators_their_pages_and_researchers_none(
    directory: Slapd, tmp_path: Path, migrated_database: Mapping[str, str]
) -> None:
    environ = ldap_environ(directory, STAFF_GROUP=None, OPERATORS_GROUP=directory.staff_group)
    paths = operator_paths()
    with served(tmp_path, workers=1, template=migrated_database, extra_environ=environ) as server:
        server.manage(
            "shell",
            "-c",
            _ACCOUNTS,
            extra_environ={"RITA_PW": LOCAL["rita"], "OLGA_PW": LOCAL["olga"]},
        )
        # The reporters' API is no page: a host token still delivers (201), as before.
        token = token_for(server, KEY)
        assert post(server, KEY, token, record_body(KEY, now())).status == 201
        logins = {**LOCAL, **{uid: directory.user(uid).password for uid in ("alice", "bob")}}
        sessions = {}
        for name, password in logins.items():
            sessions[name] = Session(server.url)
            sessions[name].login(name, password)
        for path in paths:
            assert get(server.url + path)[0] == 302  # anonymous: to the login page
            for name in ("olga", "alice"):
                status, _ = sessions[name].get(path)
                assert status in (200, 302), f"{name} {path}: {status}"
            for name in ("rita", "bob"):
                status, body = sessions[name].get(path)
                assert status == 404, f"{name} {path}: {status}"
                assert b"<h1>Not found</h1>" in body and b"No such page." in body
                assert b'href="/hosts/"' not in body and KEY.encode() not in body
                # This monitor serves no usage reports: the refusal promises none.
                assert b"your own jobs" not in body and b"no usage reports" in body
    log = server.log_path.read_text()
    assert all(password not in log for password in logins.values())
