"""The loopback slapd: it serves the directory it was given, hangs when paused, always stops,
and runs a copy of itself when AppArmor would confine /usr/sbin/slapd."""

from __future__ import annotations

import signal
import socket
from pathlib import Path

import ldap  # python-ldap, part of the monitor extra
import pytest

from clusterwatch.loopback import slapd as slapd_module
from clusterwatch.loopback.slapd import DirectoryUser, Slapd, apparmor_confines
from tests.monitor.ldap_support import running_directory

pytestmark = pytest.mark.integration


def bind(server: Slapd, dn: str, password: str, timeout: float = 5.0) -> str:
    connection = ldap.initialize(server.uri)
    connection.set_option(ldap.OPT_TIMEOUT, timeout)
    connection.simple_bind_s(dn, password)
    return str(connection.whoami_s())


def test_it_serves_its_people_groups_and_service_account_then_stops(tmp_path: Path) -> None:
    users = [DirectoryUser("dora", "pw-dora-1", "Dora", "Diaz", "dora@example.org", staff=True),
             DirectoryUser("eve", "pw-eve-1", "Eve", "Evans", None)]
    with running_directory(tmp_path, users=users) as server:
        assert bind(server, server.user_dn("dora"), "pw-dora-1") == f"dn:{server.user_dn('dora')}"
        with pytest.raises(ldap.INVALID_CREDENTIALS):
            bind(server, server.user_dn("eve"), "pw-dora-1")
        connection = ldap.initialize(server.uri)
        connection.simple_bind_s(server.service_dn, server.service_password)
        found = dict(connection.search_s(server.people, ldap.SCOPE_ONELEVEL, "(uid=*)",
                                         ["mail", "userPassword"]))
        assert found[server.user_dn("dora")] == {"mail": [b"dora@example.org"]}  # no hash
        assert found[server.user_dn("eve")] == {}
        assert connection.compare_s(server.staff_group, "member", server.user_dn("dora").encode())
        assert not connection.compare_s(server.posix_staff_group, "memberUid", b"eve")
        with pytest.raises(ldap.NO_SUCH_OBJECT):  # anonymous clients may only bind
            ldap.initialize(server.uri).search_s(server.people, ldap.SCOPE_ONELEVEL)
        process, port = server.process, int(server.uri.rsplit(":", 1)[1])
    assert process.poll() is not None
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=2):
        pass
    assert "pw-dora-1" not in (tmp_path / "directory.ldif").read_text()  # hashes only


def test_a_paused_server_accepts_but_never_answers_and_still_stops(tmp_path: Path) -> None:
    with running_directory(tmp_path) as server:
        alice = server.user("alice")
        with server.paused():
            with pytest.raises(ldap.TIMEOUT):
                bind(server, server.user_dn("alice"), alice.password, timeout=0.5)
            process = server.process
        assert bind(server, server.user_dn("alice"), alice.password)  # answers again
        with server.paused():
            pass
        server.process.send_signal(signal.SIGSTOP)  # left stopped when the block ends
    assert process.poll() is not None


def test_it_runs_a_copy_when_apparmor_confines_slapd(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(slapd_module, "apparmor_confines", lambda binary: True)
    with running_directory(tmp_path) as server:
        assert Path(f"/proc/{server.process.pid}/exe").resolve() == (tmp_path / "slapd").resolve()
        assert bind(server, server.user_dn("bob"), server.user("bob").password)


@pytest.mark.parametrize("profiles, confined", [
    ("/usr/sbin/slapd (enforce)\n/usr/bin/man (enforce)\n", True),
    ("slapd (enforce)\n", True),
    ("/usr/sbin/slapd (complain)\n", False),
    ("/usr/sbin/mariadbd (enforce)\n", False),
    ("", False),
])
def test_it_sees_only_an_enforced_apparmor_profile_for_slapd(profiles: str,
                                                              confined: bool) -> None:
    assert apparmor_confines("/usr/sbin/slapd", profiles) is confined
