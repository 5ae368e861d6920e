"""Logging in through the real login form against a real OpenLDAP server (slapd on loopback):
who gets in, under which name, who becomes staff, and that local accounts keep working.

The server's outages, TLS and the gunicorn-served monitor: test_ldap_outages.py. Both use
the one slapd of tests/monitor/conftest.py (`directory`).
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from django.contrib.auth import authenticate, get_user_model
from django.test import Client

from clusterwatch.loopback.slapd import Slapd
from tests.monitor.ldap_support import (
    configure,
    logged_in_as,
    login,
    password_file,
    refused,
)

pytestmark = [pytest.mark.integration, pytest.mark.django_db]
User = get_user_model()


def test_it_logs_in_with_the_directory_password_and_fills_the_user_in(
        settings, client: Client, directory: Slapd) -> None:
    configure(settings, directory)
    alice = directory.user("alice")
    response, _ = login(client, "alice", alice.password)
    assert response.status_code == 302 and response["Location"] == settings.LOGIN_REDIRECT_URL
    assert logged_in_as(client) == "alice"
    user = User.objects.get(username="alice")
    assert (user.email, user.first_name, user.last_name) == (
        "alice@example.org", "Alice", "Archer")  # the email the end-of-job report goes to
    assert not user.has_usable_password()  # the directory keeps the password, not Django


def test_it_takes_names_outside_ascii_and_a_missing_mail(
        settings, client: Client, directory: Slapd) -> None:
    configure(settings, directory)
    login(client, "zoe", directory.user("zoe").password)
    user = User.objects.get(username="zoe")
    assert (user.first_name, user.last_name, user.email) == ("Zoë", "Ångström", "")


@pytest.mark.parametrize("password", ["wrong", "", " ", "*"])
def test_it_refuses_a_wrong_password(settings, client: Client, directory: Slapd,
                                     password: str) -> None:
    configure(settings, directory)
    response, _ = login(client, "bob", password)
    assert response.status_code == 200 and logged_in_as(client) is None
    assert not User.objects.filter(username="bob").exists()


def test_it_refuses_an_empty_password_even_below_the_form(settings, directory: Slapd) -> None:
    configure(settings, directory)  # an empty simple bind would be an anonymous one
    assert authenticate(username="alice", password="") is None


def test_it_refuses_an_unknown_user(settings, client: Client, directory: Slapd) -> None:
    configure(settings, directory)
    response, _ = login(client, "mallory", directory.user("alice").password)
    assert refused(response) and not User.objects.filter(username="mallory").exists()


@pytest.mark.parametrize("lookup", ["template", "search"])
@pytest.mark.parametrize("username", [
    "*", "alic*", "alice)(uid=*", "*)(|(uid=*", "alice,ou=people", "uid=alice,ou=people,"
    "dc=example,dc=org", "alice\x00", "alice\\2a"])
def test_it_refuses_names_that_try_to_bend_the_dn_or_the_filter(
        settings, client: Client, directory: Slapd, tmp_path: Path, lookup: str,
        username: str) -> None:
    if lookup == "template":
        configure(settings, directory)
    else:
        configure(settings, directory, USER_DN_TEMPLATE=None, USER_SEARCH_BASE=directory.base,
                  BIND_DN=directory.service_dn,
                  BIND_PASSWORD_FILE=password_file(tmp_path, directory.service_password))
    response, _ = login(client, username, directory.user("alice").password)
    assert response.status_code == 200 and logged_in_as(client) is None
    assert not User.objects.exists()


@pytest.mark.parametrize("typed", ["ALICE", " alice ", "Alice"])
def test_it_names_the_user_by_the_directory_uid_whatever_was_typed(
        settings, client: Client, directory: Slapd, typed: str) -> None:
    configure(settings, directory)
    login(client, "alice", directory.user("alice").password)
    Client().logout()
    second = Client()
    response, _ = login(second, typed, directory.user("alice").password)
    assert response.status_code == 302 and logged_in_as(second) == "alice"
    assert list(User.objects.values_list("username", flat=True)) == ["alice"]


def test_it_finds_users_by_search_as_a_service_account(
        settings, client: Client, directory: Slapd, tmp_path: Path) -> None:
    configure(settings, directory, USER_DN_TEMPLATE=None, USER_SEARCH_BASE=directory.base,
              USER_FILTER="(&(objectClass=posixAccount)(uid=%(user)s))",
              BIND_DN=directory.service_dn,
              BIND_PASSWORD_FILE=password_file(tmp_path, directory.service_password))
    response, _ = login(client, "bob", directory.user("bob").password)
    assert response.status_code == 302 and logged_in_as(client) == "bob"
    assert User.objects.get(username="bob").email == "bob@example.org"


@pytest.mark.parametrize("group_type", ["groupOfNames", "posixGroup"])
def test_it_makes_staff_only_of_the_staff_groups_members(
        settings, directory: Slapd, group_type: str) -> None:
    group = directory.staff_group if group_type == "groupOfNames" else directory.posix_staff_group
    configure(settings, directory, STAFF_GROUP=group, GROUP_TYPE=group_type)
    for uid in ("alice", "bob"):
        response, _ = login(Client(), uid, directory.user(uid).password)
        assert response.status_code == 302
    assert User.objects.get(username="alice").is_staff is True
    assert User.objects.get(username="bob").is_staff is False


def test_it_takes_staff_back_at_login_when_the_directory_does_not_grant_it(
        settings, client: Client, directory: Slapd) -> None:
    bob = User.objects.create(username="bob", is_staff=True)  # made by LDAP, staff by hand
    bob.set_unusable_password()
    bob.save()
    configure(settings, directory)
    login(client, "bob", directory.user("bob").password)
    assert logged_in_as(client) == "bob" and User.objects.get(username="bob").is_staff is False


def test_it_leaves_staff_to_the_admin_without_a_staff_group(
        settings, client: Client, directory: Slapd) -> None:
    configure(settings, directory, STAFF_GROUP=None)
    login(client, "alice", directory.user("alice").password)
    assert logged_in_as(client) == "alice" and User.objects.get(username="alice").is_staff is False


def test_it_refuses_a_directory_user_the_admin_deactivated(
        settings, client: Client, directory: Slapd) -> None:
    configure(settings, directory)
    login(Client(), "bob", directory.user("bob").password)
    User.objects.filter(username="bob").update(is_active=False)
    response, _ = login(client, "bob", directory.user("bob").password)
    assert response.status_code == 200 and b"inactive" in response.content
    assert logged_in_as(client) is None


def test_deactivating_a_directory_user_ends_their_session(
        settings, client: Client, directory: Slapd) -> None:
    configure(settings, directory)
    login(client, "bob", directory.user("bob").password)
    assert client.get("/hosts/").status_code == 404  # logged in: a researcher's refusal
    User.objects.filter(username="bob").update(is_active=False)
    response = client.get("/hosts/")
    assert response.status_code == 302 and response["Location"].startswith(settings.LOGIN_URL)


def test_local_accounts_still_log_in_with_ldap_configured(
        settings, client: Client, directory: Slapd) -> None:
    User.objects.create_user("operator", password="a-local-Passw0rd")
    configure(settings, directory)
    response, _ = login(client, "operator", "a-local-Passw0rd")
    assert response.status_code == 302 and logged_in_as(client) == "operator"


def test_a_directory_entry_never_takes_over_a_local_account_of_the_same_name(
        settings, directory: Slapd) -> None:
    User.objects.create_user("bob", email="bob@local.example", password="a-local-Passw0rd",
                             is_superuser=True, is_staff=True)
    configure(settings, directory)
    response, _ = login(Client(), "bob", directory.user("bob").password)
    assert refused(response)
    local = Client()
    login(local, "bob", "a-local-Passw0rd")
    assert logged_in_as(local) == "bob"
    bob = User.objects.get(username="bob")
    assert bob.email == "bob@local.example" and bob.is_staff and bob.has_usable_password()


def test_no_password_reaches_the_logs_or_the_pages(
        settings, directory: Slapd, tmp_path: Path, caplog: pytest.LogCaptureFixture,
        capfd: pytest.CaptureFixture[str]) -> None:
    caplog.set_level(logging.DEBUG)  # django-auth-ldap's debug lines included
    configure(settings, directory, USER_DN_TEMPLATE=None, USER_SEARCH_BASE=directory.people,
              BIND_DN=directory.service_dn,
              BIND_PASSWORD_FILE=password_file(tmp_path, directory.service_password))
    wrong = "not-" + directory.user("bob").password
    pages = [login(Client(), "alice", directory.user("alice").password)[0],
             login(Client(), "bob", wrong)[0], login(Client(), "nobody", wrong)[0]]
    with directory.paused():
        settings.AUTH_LDAP_CONNECTION_OPTIONS = {**settings.AUTH_LDAP_CONNECTION_OPTIONS,
                                                 **_short_timeouts()}
        pages.append(login(Client(), "bob", directory.user("bob").password)[0])
    out, err = capfd.readouterr()
    seen = caplog.text + out + err + directory.log_tail(1000) + "".join(
        page.content.decode() for page in pages)
    assert "Binding as" in caplog.text  # the debug log was on and captured
    for secret in (directory.service_password, wrong,
                   *(user.password for user in directory.users)):
        assert secret not in seen


def _short_timeouts() -> dict[int, float]:
    import ldap

    return {ldap.OPT_TIMEOUT: 1.0, ldap.OPT_NETWORK_TIMEOUT: 1.0}
