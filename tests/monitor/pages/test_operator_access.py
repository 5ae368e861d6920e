"""Who may open the operators' pages: one table over every operator path of the URLconf and
every kind of asker, through HTTP (Django's test client; gunicorn:
test_operator_access_served.py).

The operator paths are derived from the URLconf, as the usage matrix's are
(tests/monitor/pages/operator_paths.py): a new page is in the table without anyone listing
it; a path the table cannot build fails it.

A researcher (a local account, or an LDAP one without staff rights) gets what the usage
pages answer about someone else's job: 404, their problem page, nothing of the harvesters.
Operators are staff, superusers and the members of the group `operators`, by hand or from
the directory's group (CLUSTERWATCH_LDAP_OPERATORS_GROUP).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from typing import Any, Callable

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from clusterwatch.loopback.slapd import Slapd
from clusterwatch.monitor.core.models import LatestReport
from clusterwatch.monitor.core.operators import GROUP, is_operator, set_operator
from clusterwatch.monitor.ingest import tokens as host_tokens
from clusterwatch.monitor.usage import api_tokens
from clusterwatch.monitor.usage.config import get_config
from tests.monitor.ldap_support import configure, login
from tests.monitor.pages.operator_paths import KNOWN_PAGES, OPEN, operator_paths, operator_patterns
from tests.monitor.records import KEY, example, recent, store

pytestmark = pytest.mark.django_db

# What a refusal must never show: the harvester's host, its failed calls, its server.
HIDDEN = (KEY.encode(), b"SSLError", b"pandaserver01")


def test_the_table_holds_every_known_operator_page() -> None:
    names = {p.name for p in operator_patterns()}
    assert names >= KNOWN_PAGES
    assert len(operator_paths()) == len(names - set(OPEN))


PATHS = operator_paths()


def _user(name: str, **fields: Any) -> User:
    return User.objects.create_user(name, password=None, **fields)


def _session(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def researcher() -> Client:
    return _session(_user("rita"))


def in_group() -> Client:
    user = _user("olga")
    set_operator(user, True)
    return _session(user)


def staff() -> Client:
    return _session(_user("root", is_staff=True))


def superuser() -> Client:
    return _session(_user("sudo", is_superuser=True))  # not staff: still an operator


def lookalike_group() -> Client:
    user = _user("mallory")
    for name in ("Operators", "operators ", "operator", "staff"):
        user.groups.add(Group.objects.create(name=name))
    return _session(user)


def inactive_operator() -> Client:
    user = _user("gone")
    set_operator(user, True)
    client = _session(user)
    User.objects.filter(pk=user.pk).update(is_active=False)
    return client


def operators_token() -> Client:
    """A usage token is for the usage API and the image demand, not a session."""
    user = _user("olga")
    set_operator(user, True)
    _row, token = api_tokens.create(user, note="not for pages")
    return Client(HTTP_AUTHORIZATION=f"Bearer {token}")


def host_token() -> Client:
    _row, token = host_tokens.create([KEY], note="a reporter, not a person")
    return Client(HTTP_AUTHORIZATION=f"Bearer {token}")


OPENS, REFUSED, LOGIN = "opens", "refused", "login"
ASKERS: Mapping[str, tuple[Callable[[], Client], str]] = {
    "anonymous": (Client, LOGIN),
    "researcher": (researcher, REFUSED),
    "lookalike_group": (lookalike_group, REFUSED),
    "inactive_operator": (inactive_operator, LOGIN),
    "operators_token": (operators_token, LOGIN),
    "host_token": (host_token, LOGIN),
    "operators_group": (in_group, OPENS),
    "staff": (staff, OPENS),
    "superuser": (superuser, OPENS),
}


@pytest.fixture
def harvester() -> None:
    """A harvester that reported a minute ago: every page has something to show."""
    store(recent(example(), timezone.now() - dt.timedelta(minutes=1)))


def assert_refused(answer: Any) -> None:
    """The usage pages' answer to someone else's job: 404, their problem page, no cache,
    nothing of what the page would show."""
    assert answer.status_code == 404
    assert answer["Content-Type"].startswith("text/html")
    body = answer.content
    assert b"<h1>Not found</h1>" in body and b"No such page." in body
    assert "no-store" in answer["Cache-Control"]
    assert [secret for secret in HIDDEN if secret in body] == []


@pytest.mark.parametrize("asker", sorted(ASKERS))
@pytest.mark.parametrize("path", PATHS)
def test_each_asker_gets_what_they_may(harvester: None, asker: str, path: str) -> None:
    build, expected = ASKERS[asker]
    answer = build().get(path)
    if expected == OPENS:
        assert answer.status_code in (200, 302), answer.status_code
        if answer.status_code == 302:  # /jobs/ without an id goes to its own form
            assert not answer["Location"].startswith("/accounts/login/")
    elif expected == LOGIN:
        assert answer.status_code == 302
        assert answer["Location"].startswith("/accounts/login/?next=")
    else:
        assert_refused(answer)


@pytest.mark.parametrize("path", PATHS)
def test_a_refusal_is_the_usage_pages_answer_to_someone_elses_page(
    harvester: None, path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLUSTERWATCH_PROMETHEUS_URL", "http://127.0.0.1:9")  # never asked
    get_config.cache_clear()
    client = researcher()
    refused, usage = client.get(path), client.get("/usage/staff/")
    assert (refused.status_code, refused["Content-Type"]) == (
        usage.status_code,
        usage["Content-Type"],
    )
    title = re.compile(rb"<h1>[^<]*</h1>")
    assert title.findall(refused.content) == title.findall(usage.content)
    assert b'<a href="/usage/users/rita/">Your jobs</a>' in refused.content
    get_config.cache_clear()


def test_a_post_by_a_researcher_is_refused_the_same(harvester: None) -> None:
    client = researcher()
    for path in PATHS:
        assert_refused(client.post(path, {}))


def _nav(html: bytes) -> bytes:
    return html[html.index(b"<nav") : html.index(b"</nav>")] if b"<nav" in html else b""


def test_a_researchers_header_links_no_operator_page(
    harvester: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLUSTERWATCH_PROMETHEUS_URL", "http://127.0.0.1:9")
    get_config.cache_clear()
    assert LatestReport.objects.exists()
    rita, olga = researcher(), in_group()
    for page in ("/", "/usage/staff/"):
        html = rita.get(page).content
        assert b"My jobs" in _nav(html)
        assert all(path.encode() not in html for path in ("/hosts/", "/queues/", "/alarms/"))
        assert b'role="search"' not in html
    operator_html = olga.get("/").content
    assert b'href="/hosts/"' in _nav(operator_html)
    assert b'<a href="/hosts/">The harvester monitor' in operator_html
    get_config.cache_clear()


def test_an_operators_header_links_every_operator_page(harvester: None) -> None:
    nav = _nav(in_group().get("/hosts/").content)
    for name in (
        "monitor-hosts",
        "monitor-queues",
        "monitor-jobs",
        "monitor-alarms",
        "monitor-worker-starts",
    ):
        assert f'href="{reverse(name)}"'.encode() in nav


def test_operator_rights_follow_the_group_at_once() -> None:
    user = _user("olga")
    client = _session(user)
    assert client.get("/hosts/").status_code == 404
    set_operator(user, True)
    assert client.get("/hosts/").status_code == 200
    set_operator(user, False)
    assert client.get("/hosts/").status_code == 404


def test_is_operator_refuses_whoever_is_not_an_active_operator() -> None:
    from django.contrib.auth.models import AnonymousUser

    assert not is_operator(AnonymousUser())
    assert not is_operator(None)
    gone = _user("gone", is_staff=True, is_active=False)
    assert not is_operator(gone)
    Group.objects.filter(name=GROUP).delete()  # a flushed database: made again when granted
    member = _user("olga")
    set_operator(member, True)
    assert is_operator(User.objects.get(pk=member.pk))


# --- LDAP accounts, through the real login form against the loopback slapd ----------------


def _ldap_login(client: Client, directory: Slapd, uid: str) -> None:
    response, _ = login(client, uid, directory.user(uid).password)
    assert response.status_code == 302, f"{uid} did not log in"


@pytest.mark.integration
def test_an_ldap_researcher_is_refused(
    settings: Any, client: Client, directory: Slapd, harvester: None
) -> None:
    configure(settings, directory)  # cn=staff is the staff group; bob is not in it
    _ldap_login(client, directory, "bob")
    assert not User.objects.get(username="bob").is_staff
    for path in PATHS:
        assert_refused(client.get(path))


@pytest.mark.integration
def test_an_ldap_staff_member_opens_every_page(
    settings: Any, client: Client, directory: Slapd, harvester: None
) -> None:
    configure(settings, directory)
    _ldap_login(client, directory, "alice")
    assert all(client.get(path).status_code in (200, 302) for path in PATHS)


@pytest.mark.integration
def test_the_directorys_operators_group_makes_operators_who_are_not_staff(
    settings: Any, client: Client, directory: Slapd, harvester: None
) -> None:
    # The directory's groupOfNames cn=staff (alice) serves as the operators group here.
    configure(settings, directory, STAFF_GROUP=None, OPERATORS_GROUP=directory.staff_group)
    _ldap_login(client, directory, "alice")
    alice = User.objects.get(username="alice")
    assert not alice.is_staff and alice.groups.filter(name=GROUP).exists()
    assert all(client.get(path).status_code in (200, 302) for path in PATHS)
    bob = Client()
    _ldap_login(bob, directory, "bob")
    assert not User.objects.get(username="bob").groups.exists()
    assert_refused(bob.get("/hosts/"))


@pytest.mark.integration
def test_the_directory_takes_operator_rights_away_at_the_next_login(
    settings: Any, client: Client, directory: Slapd, harvester: None
) -> None:
    bob = User.objects.create(username="bob")  # as an earlier LDAP login left him
    bob.set_unusable_password()
    bob.save()
    set_operator(bob, True)  # ticked in the admin, but not in the directory's group
    configure(settings, directory, OPERATORS_GROUP=directory.staff_group)
    _ldap_login(client, directory, "bob")
    assert not User.objects.get(username="bob").groups.filter(name=GROUP).exists()
    assert_refused(client.get("/hosts/"))


@pytest.mark.integration
def test_without_a_directory_group_the_admins_choice_stands(
    settings: Any, client: Client, directory: Slapd, harvester: None
) -> None:
    bob = User.objects.create(username="bob")
    bob.set_unusable_password()
    bob.save()
    set_operator(bob, True)
    configure(settings, directory)  # a staff group, no operators group
    _ldap_login(client, directory, "bob")
    assert client.get("/hosts/").status_code == 200


@pytest.mark.integration
def test_a_posix_operators_group_works_too(
    settings: Any, client: Client, directory: Slapd, harvester: None
) -> None:
    configure(
        settings,
        directory,
        STAFF_GROUP=None,
        GROUP_TYPE="posixGroup",
        OPERATORS_GROUP=directory.posix_staff_group,
    )  # memberUid: alice
    _ldap_login(client, directory, "alice")
    assert client.get("/hosts/").status_code == 200
    bob = Client()
    _ldap_login(bob, directory, "bob")
    assert_refused(bob.get("/hosts/"))


@pytest.mark.integration
def test_an_operators_group_the_directory_lacks_has_no_members(
    settings: Any, client: Client, directory: Slapd, harvester: None
) -> None:
    configure(settings, directory, OPERATORS_GROUP=f"cn=nobody,{directory.base}")
    _ldap_login(client, directory, "bob")  # a typo in the DN locks no one out of their jobs
    assert_refused(client.get("/hosts/"))
    alice = Client()
    _ldap_login(alice, directory, "alice")  # staff from cn=staff: an operator anyway
    assert alice.get("/hosts/").status_code == 200
