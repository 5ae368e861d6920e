"""Who gets what from every usage path: one table over the URLconf's paths and every kind of
asker (tests/monitor/usage/access_support.py).

For each path and asker the job 4242 of alice is asked about in three states: unknown to
accounting, known to accounting (the live path), kept in the database; and again with
accounting down, before and after. An asker who may see the job gets 200 once it exists and
its content; any other gets the same answer in every state, byte for byte (the CSRF token of
the logout form aside): a refusal cannot tell a hidden job from an unknown one, and carries
none of its user, account, name or id.

The job page's sharing form is POSTed to (POSTED), and only the owner's session makes a
link; the paths of a share link (alice's, made in the world) show her job to whoever holds
it, asked by one asker of each way of sending (SHARED_ASKERS).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Callable, Union

import pytest
from django.http import HttpResponse
from django.test import Client

from clusterwatch.monitor.usage.usage_report import load_report
from tests.monitor.usage.access_support import (
    ACCOUNT,
    ASKERS,
    JOB_NAME,
    JOBID,
    OWNER,
    Answer,
    World,
    add_hidden_job,
    build_world,
    path_of,
    pattern_names,
)
from tests.monitor.usage.site import UsageSite

pytestmark = pytest.mark.django_db

SEES = "sees"  # 200 once the job exists, with its content
Expected = Union[int, str]
# The kind of each path of usage/web/urls.py: a path without one fails the matrix.
KINDS = {
    "usage-index": "index", "usage-api-user": "api_user", "usage-api-job": "api_job",
    "usage-api-array": "api_job",  # an array's tasks are jobs: asked and refused alike
    "usage-job": "page_job", "usage-user": "page_user", "usage-staff": "page_staff",
    "usage-mail": "mail", "usage-pdf": "drawing", "usage-pie": "drawing",
    "usage-plot": "drawing", "usage-account": "page_account", "usage-accounts": "page_accounts",
    "usage-staff-running": "page_running",
    "usage-job-share": "share",  # POSTed to: the owner makes a link
    "usage-shared": "shared", "usage-shared-pdf": "shared_drawing",
    "usage-shared-pie": "shared_drawing", "usage-shared-plot": "shared_drawing",
}
COLUMNS = ("index", "api_user", "api_job", "page_job", "page_user", "page_staff", "mail",
           "drawing")
# The account pages (/usage/accounts/<account>/, /usage/accounts/): staff and the account's
# coordinators see them; every other asker gets what the job page gives those it refuses
# (the login page, or the same 404 as for an unknown account).
ACCOUNT_COLUMNS = ("page_account", "page_accounts")
SEE_ACCOUNTS = ("staff", "coordinator")
S = SEES
_NO_SCRIPT = (302, 403, 403, 302, 302, 302, 403, 403)  # a header that authenticates nobody
_ANONYMOUS = (302, 403, 403, 302, 302, 302, 403, 302)
EXPECTED: Mapping[str, tuple[Expected, ...]] = {
    #              index api_u api_j page_j page_u staff mail draw
    "owner":       (S,   S,    S,    S,     S,     404,  S,   S),
    "other":       (200, 404,  404,  404,   404,   404,  404, 404),
    "member_on":   (200, 404,  S,    S,     404,   404,  S,   S),
    "member_off":  (200, 404,  404,  404,   404,   404,  404, 404),
    # The coordinator of the job's account: its jobs (the account page links them), not
    # its users' lists.
    "coordinator": (200, 404,  S,    S,     404,   404,  S,   S),
    "staff":       (S,   S,    S,    S,     S,     S,    S,   S),
    "anonymous":   _ANONYMOUS,
    "owner_token": (302, S,    S,    302,   302,   302,  S,   S),
    "other_token": (302, 404,  404,  302,   302,   302,  404, 404),
    "revoked_token": _NO_SCRIPT,
    "wrong_scheme": _NO_SCRIPT,
    "malformed":   _NO_SCRIPT,
    "host_token":  _NO_SCRIPT,
    "owner_munge": (302, S,    S,    302,   302,   302,  S,   S),
    "other_munge": (302, 404,  404,  302,   302,   302,  404, 404),
    "replayed_munge": _NO_SCRIPT,
    "inactive":    _ANONYMOUS,
    "inactive_ldap": _ANONYMOUS,
    "case_twin":   (200, 404,  404,  404,   404,   404,  404, 404),
    "lookalike_cyrillic":  (200, 404, 404, 404, 404, 404, 404, 404),
    "lookalike_fullwidth": (200, 404, 404, 404, 404, 404, 404, 404),
}


# A share link (the world's, alice's) opens her job's report to whoever holds it, whatever
# else they send; it stops when its maker is made inactive: the 404 of a wrong link.
SHARED_COLUMNS = ("shared", "shared_drawing")
CLOSED_LINK = ("inactive", "inactive_ldap")
# The link's paths look at no session and no header, so they are asked by one asker of each
# way of sending (a session, staff's; a header, a refused MUNGE credential's; nothing; the
# owner made inactive), not by all of them.
SHARED_ASKERS = ("owner", "staff", "replayed_munge", "anonymous", "inactive")
# What the world's POSTs send to the sharing form.
POSTED = {"share": {"days": "7"}}


def expected_of(asker: str, kind: str) -> Expected:
    if kind in SHARED_COLUMNS:
        return 404 if asker in CLOSED_LINK else SEES
    if kind == "share":  # the job's owner only, by a session: the page's refusals otherwise
        refused = EXPECTED[asker][COLUMNS.index("page_job")]
        return SEES if asker == "owner" else 302 if refused == 302 else 404
    if kind == "page_running":  # staff's: no job of alice's in it; others the staff page's
        return 200 if asker == "staff" else EXPECTED[asker][COLUMNS.index("page_staff")]
    if kind in ACCOUNT_COLUMNS:
        if asker in SEE_ACCOUNTS:
            return SEES
        refused = EXPECTED[asker][COLUMNS.index("page_job")]
        return refused if refused == 302 else 404
    return EXPECTED[asker][COLUMNS.index(kind)]


def _shows_job(answer: HttpResponse) -> bool:
    return JOB_NAME.encode() in answer.content


def _lists_job(answer: HttpResponse) -> bool:
    return f">{JOBID}<".encode() in answer.content


def _api_job(answer: HttpResponse) -> bool:
    return bool(json.loads(answer.content)["user"] == OWNER)


def _api_user(answer: HttpResponse) -> bool:
    return ({job["jobid"] for job in json.loads(answer.content)["jobs"]}
            == {JOBID, "4300_1", "4300_2"})  # her job and her array's tasks


def _drawing(answer: HttpResponse) -> bool:
    return answer["Content-Type"] in ("image/png", "application/pdf")


SHOWS: Mapping[str, Callable[[HttpResponse], bool]] = {
    "index": lambda answer: f'href="/usage/jobs/{JOBID}/"'.encode() in answer.content,
    "api_user": _api_user, "api_job": _api_job, "page_job": _shows_job,
    "page_user": _lists_job, "page_staff": _lists_job, "mail": _shows_job,
    "drawing": _drawing,
    "page_account": lambda answer: f"<h1>Account {ACCOUNT} ".encode() in answer.content,
    "page_accounts": lambda answer: f'href="/usage/accounts/{ACCOUNT}/'.encode()
    in answer.content,
    "share": lambda answer: b'value="http://testserver/usage/shared/cws_' in answer.content,
    "shared": _shows_job, "shared_drawing": _drawing,
}


def test_it_has_a_row_for_every_usage_path_and_asker() -> None:
    assert sorted(pattern_names()) == sorted(KINDS)
    assert sorted(EXPECTED) == sorted(ASKERS)
    assert all(len(row) == len(COLUMNS) for row in EXPECTED.values())


def _cases() -> list[tuple[str, str]]:
    return [(name, asker) for name in pattern_names() for asker in sorted(ASKERS)
            if KINDS.get(name) not in SHARED_COLUMNS or asker in SHARED_ASKERS]


@pytest.mark.parametrize(("name", "asker"), _cases(),
                         ids=[f"{name}-{asker}" for name, asker in _cases()])
def test_it_answers_each_asker_of_each_path_as_the_table_says(
        usage_site: UsageSite, monkeypatch: pytest.MonkeyPatch, settings: object,
        name: str, asker: str) -> None:
    settings.AUTHENTICATION_BACKENDS = [  # type: ignore[attr-defined]
        "django.contrib.auth.backends.ModelBackend",
        "clusterwatch.monitor.site.ldap_backend.DirectoryBackend"]
    kind = KINDS[name]
    expected = expected_of(asker, kind)
    world = build_world(usage_site, monkeypatch)
    client = ASKERS[asker].build(world)
    path = path_of(name)
    unknown, unknown_down = _ask(client, path, world, kind)
    add_hidden_job(usage_site)
    live = _request(client, path, kind)
    load_report(JOBID)  # kept, whoever asked before
    kept, kept_down = _ask(client, path, world, kind)
    if expected == SEES:
        for answer in (live, kept):
            assert answer.status_code == 200, answer.content[:300]
        assert SHOWS[kind](kept)
        return
    answers = [Answer.of(a) for a in (unknown, live, kept)]
    assert answers[0].status == expected, answers[0].body[:300]
    assert answers[1] == answers[0], "the live job is told from an unknown one"
    assert answers[2] == answers[0], "the kept job is told from an unknown one"
    assert Answer.of(kept_down) == Answer.of(unknown_down), \
        "with accounting down, the kept job is told from an unknown one"
    for answer in answers:
        assert answer.leaks(ASKERS[asker].user) == [], answer.body[:300]


def _ask(client: Client, path: str, world: World,
         kind: str) -> tuple[HttpResponse, HttpResponse]:
    """The answer, and the answer while sacct fails."""
    answer = _request(client, path, kind)
    world.site.fail("sacct: error: Problem talking to the database: Connection refused")
    down = _request(client, path, kind)
    world.site.fail("")
    return answer, down


def _request(client: Client, path: str, kind: str) -> HttpResponse:
    """A GET, or the POST of a form's path."""
    if kind in POSTED:
        return client.post(path, POSTED[kind])
    return client.get(path)
