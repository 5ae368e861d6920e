"""Every date parameter of every usage and PanDA endpoint, fuzzed through the monitor's whole
request path: out of the calendar, far past, far future, other scripts' digits, empty, huge,
timestamps with a zone. None may answer 500 (`?until=9999-12-31` on the user page did: the
day after it is past what a datetime holds): a 400 that names the parameter, or an answer.

The endpoints come from the URLconf and their date parameters from each view's declaration
(list_params.reads_dates), so a new endpoint or parameter is fuzzed without being listed
here. An endpoint gets every date name it does not declare anyway (the declared ones and the
usual names of a date), and must answer as it does without them (it ignores them).
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from django.test import Client

from tests.monitor.usage.date_fuzz import (
    DATED,
    DECLARED,
    ENDPOINTS,
    HOSTILE,
    NAMES,
    TODAY,
    UNDECLARED,
    Endpoint,
    message_of,
    queries,
)
from tests.monitor.usage.page_support import client_of, text_of
from tests.monitor.usage.site import UsageSite

pytestmark = pytest.mark.django_db


def test_every_usage_and_panda_endpoint_declares_its_date_parameters() -> None:
    assert UNDECLARED == [], "decorate them with list_params.reads_dates(...)"


def test_the_usage_and_panda_endpoints_are_found_with_their_dates() -> None:
    """The derivation found what is there today (a floor, not a list to keep up)."""
    by_route = {endpoint.route: endpoint.dates for endpoint in ENDPOINTS}
    assert by_route["usage/users/<str:username>/"] == ("since", "until", "days")
    assert by_route["api/v1/users/<str:username>"] == ("days",)
    assert by_route["usage/staff/"] == ("days",)
    assert {
        "",
        "pdf/<str:jobid>",
        "api/osg-image-demand/",
        "panda/worker-starts/",
        "jobs/<int:pandaid>/",
    } <= by_route.keys()
    assert DECLARED == ["days", "since", "until"]


@pytest.fixture
def staff(usage_site: UsageSite) -> Client:
    """A staff member who may see every page; alice's job 4242 ended yesterday."""
    now = datetime.now(timezone.utc).replace(microsecond=0)
    usage_site.job("4242", start=now - timedelta(days=1))
    client = client_of("alice", staff=True)
    client.raise_request_exception = False  # a 500 is an answer to assert on, not a raise
    return client


def judged(client: Client, endpoint: Endpoint, query: dict[str, str], asked: str) -> None:
    answer = client.get(endpoint.path, query)
    where = f"{endpoint.path}?{query!r}"
    assert answer.status_code in (200, 400), (where, answer.status_code)
    if answer.status_code == 400:
        message = message_of(answer["Content-Type"], answer.content)
        assert asked in message.casefold(), (where, message[-400:])


@pytest.mark.parametrize("endpoint", DATED, ids=lambda e: e.route or "/")
def test_every_declared_date_parameter_is_a_400_naming_it_or_an_answer(
    staff: Client, endpoint: Endpoint
) -> None:
    for query, asked in queries(endpoint):
        judged(staff, endpoint, query, asked)


@pytest.mark.parametrize(
    "endpoint",
    [e for e in ENDPOINTS if set(NAMES) - set(e.dates)],
    ids=lambda e: e.route or "/",
)
def test_an_endpoint_ignores_every_hostile_date_it_does_not_declare(
    staff: Client, endpoint: Endpoint
) -> None:
    """Also one that declares some: a view reading `until` but declaring only `since` would
    otherwise never have its `until` fuzzed."""
    plain = staff.get(endpoint.path).status_code
    assert plain != 500, endpoint.path
    undeclared = [name for name in NAMES if name not in endpoint.dates]
    for label, value in HOSTILE.items():
        answer = staff.get(endpoint.path, dict.fromkeys(undeclared, value))
        assert answer.status_code == plain, (endpoint.path, label, answer.status_code)


def test_a_far_until_lists_the_jobs_up_to_today(staff: Client) -> None:
    """The probe's own case: a clamped answer, the form showing the day it means."""
    answer = staff.get("/usage/users/alice/", {"until": "9999-12-31"})
    assert answer.status_code == 200
    assert f'name="until" value="{TODAY.isoformat()}"' in answer.content.decode()
    assert "4242" in text_of(answer)
