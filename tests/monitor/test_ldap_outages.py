"""LDAP login when the directory is down, hangs or shows a certificate, and through the
monitor as it runs in production (gunicorn): the form says so within seconds, never a 500
or a hung worker, and local accounts keep logging in.

A hung directory is the real slapd stopped with SIGSTOP: the kernel still accepts the
connection, nothing answers.
"""

from __future__ import annotations

import re
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from django.test import Client

from clusterwatch.loopback.monitor_client import Session
from clusterwatch.loopback.monitor_server import monitor_server
from clusterwatch.loopback.services import free_port
from clusterwatch.loopback.slapd import Slapd
from tests.components import need_binary
from tests.monitor.ldap_support import (
    LOGIN,
    configure,
    ldap_environ,
    logged_in_as,
    login,
    password_file,
    refused,
)
from tests.support.monitor_console import copy_migrated
from tests.support.tls import CA, make_ca

pytestmark = [pytest.mark.integration, pytest.mark.django_db]
DIRECTORY_DOWN = b"the directory server (LDAP) did not answer or refused the request"
PROMPT = 5.0  # seconds a failed login may take with a 1 s timeout (several LDAP steps)


def test_it_says_the_directory_did_not_answer_when_nothing_listens(
        settings, client: Client, directory: Slapd) -> None:
    configure(settings, directory, URI=f"ldap://127.0.0.1:{free_port()}")
    response, seconds = login(client, "alice", directory.user("alice").password)
    assert refused(response) and DIRECTORY_DOWN in response.content
    assert seconds < PROMPT and logged_in_as(client) is None


def test_a_wrong_service_account_password_says_the_directory_refused(
        settings, client: Client, directory: Slapd, tmp_path: Path) -> None:
    configure(settings, directory, USER_DN_TEMPLATE=None, USER_SEARCH_BASE=directory.people,
              BIND_DN=directory.service_dn,
              BIND_PASSWORD_FILE=password_file(tmp_path, "not-the-service-password"))
    response, _ = login(client, "alice", directory.user("alice").password)
    assert refused(response) and DIRECTORY_DOWN in response.content


@pytest.mark.parametrize("transport", ["ldap", "ldaps", "starttls"])
def test_it_gives_up_on_a_hung_directory_within_its_timeout(
        settings, client: Client, directory: Slapd, directory_ca: CA, transport: str) -> None:
    uri = directory.ldaps_uri if transport == "ldaps" else directory.uri
    configure(settings, directory, URI=uri, TIMEOUT_S="1", CA_FILE=str(directory_ca.cert),
              START_TLS="yes" if transport == "starttls" else None)
    with directory.paused():
        response, seconds = login(client, "alice", directory.user("alice").password)
    assert refused(response) and DIRECTORY_DOWN in response.content
    assert 0.9 < seconds < PROMPT  # it did wait for the directory, then gave up


def test_a_local_account_logs_in_while_the_directory_hangs(
        settings, client: Client, directory: Slapd) -> None:
    from django.contrib.auth import get_user_model

    get_user_model().objects.create_user("operator", password="a-local-Passw0rd")
    configure(settings, directory, TIMEOUT_S="1")
    with directory.paused():
        response, seconds = login(client, "operator", "a-local-Passw0rd")
    assert response.status_code == 302 and logged_in_as(client) == "operator"
    assert seconds < PROMPT


@pytest.mark.parametrize("transport", ["ldaps", "starttls"])
def test_it_logs_in_over_tls_trusting_the_sites_ca(
        settings, client: Client, directory: Slapd, directory_ca: CA, transport: str) -> None:
    configure(settings, directory, CA_FILE=str(directory_ca.cert),
              URI=directory.ldaps_uri if transport == "ldaps" else directory.uri,
              START_TLS="yes" if transport == "starttls" else None)
    response, _ = login(client, "alice", directory.user("alice").password)
    assert response.status_code == 302 and logged_in_as(client) == "alice"


@pytest.mark.parametrize("transport", ["ldaps", "starttls"])
def test_it_refuses_a_directory_certificate_it_cannot_verify(
        settings, client: Client, directory: Slapd, tmp_path: Path, transport: str) -> None:
    other = make_ca(tmp_path, "other", openssl=need_binary("openssl"))
    configure(settings, directory, CA_FILE=str(other.cert),
              URI=directory.ldaps_uri if transport == "ldaps" else directory.uri,
              START_TLS="yes" if transport == "starttls" else None)
    response, _ = login(client, "alice", directory.user("alice").password)
    assert refused(response) and DIRECTORY_DOWN in response.content


def test_the_served_monitor_logs_directory_users_in(directory: Slapd, tmp_path: Path,
                                                    migrated_sqlite: Path) -> None:
    environ = ldap_environ(directory, TIMEOUT_S="1")
    data_dir = copy_migrated(migrated_sqlite, tmp_path / "monitor")
    with monitor_server(data_dir, extra_environ=environ, workers=1, migrate=False) as server:
        session = Session(server.url)
        session.login("alice", directory.user("alice").password)
        assert session.get("/hosts/")[0] == 200
        with pytest.raises(AssertionError, match="refused"):
            Session(server.url).login("bob", "not-" + directory.user("bob").password)
        with directory.paused():
            started = time.monotonic()
            status, page = _post_login(server.url, "bob", directory.user("bob").password)
        assert status == 200 and DIRECTORY_DOWN in page  # gunicorn's worker answered
        assert time.monotonic() - started < PROMPT
    log = server.log_path.read_text()
    assert all(user.password not in log for user in directory.users)


def _post_login(url: str, username: str, password: str) -> tuple[int, bytes]:
    """The login form's own answer, as a browser posts it (CSRF cookie and token)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}),
                                         urllib.request.HTTPCookieProcessor())
    with opener.open(url + LOGIN, timeout=10) as answer:
        token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', answer.read())
    assert token is not None
    body = urllib.parse.urlencode({"csrfmiddlewaretoken": token.group(1).decode(),
                                   "username": username, "password": password}).encode()
    request = urllib.request.Request(url + LOGIN, data=body,
                                     headers={"Referer": url + LOGIN})
    with opener.open(request, timeout=30) as answer:
        return int(answer.status), bytes(answer.read())
