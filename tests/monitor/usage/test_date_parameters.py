"""Every date parameter of every usage and PanDA endpoint, fuzzed through the monitor's whole
request path: out of the calendar, far past, far future, other scripts' digits, empty, huge,
timestamps with a zone. None may answer 500 (`?until=9999-12-31` on the user page did: the
day after it is past what a datetime holds): a 400 that names the parameter, or an answer.

The endpoints come from the URLconf and their date parameters from each view's declaration
(list_params.reads_dates), so a new endpoint or parameter is fuzzed without being listed
here. An endpoint that declares none gets every declared name anyway, and must answer as it
does without them (it ignores them).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from clusterwatch.monitor.usage.list_params import DATE_PARAMETERS
from tests.monitor.usage.page_support import client_of, text_of
from tests.monitor.usage.site import UsageSite

pytestmark = pytest.mark.django_db

# The packages whose every endpoint must declare its date parameters (none is a declaration).
DECLARING = ("clusterwatch.monitor.usage.", "clusterwatch.monitor.panda.")
# Django's own apps: not ours to fuzz.
FOREIGN = ("django.",)
SAMPLES = {"username": "alice", "jobid": "4242", "metric": "cpu", "pandaid": 1, "queue": "q"}
CONVERTED = {"int": 1, "path": "a/b", "slug": "x", "uuid": "00000000-0000-0000-0000-000000000000"}
PARAMETER = re.compile(r"<(?:(\w+):)?(\w+)>")


def in_digits(zero: int, text: str) -> str:
    """`text` with its digits in another script, `zero` the code point of its 0."""
    return text.translate({ord("0") + digit: zero + digit for digit in range(10)})


TODAY = datetime.now(timezone.utc).date()
HOSTILE = {
    "month 13": "2026-13-01",
    "day 32": "2026-01-32",
    "February 30": "2026-02-30",
    "month 0": "2026-00-10",
    "year 0": "0000-01-01",
    "year 1": "0001-01-01",
    "1900": "1900-01-01",
    "9999-12-31": "9999-12-31",
    "year 10000": "10000-01-01",
    "Arabic-Indic": in_digits(0x0660, "2026-01-01"),
    "full-width": in_digits(0xFF10, "2026-01-01"),
    "one Arabic-Indic digit": "2026-0" + in_digits(0x0660, "1") + "-01",
    "Devanagari": in_digits(0x0966, "2026-01-01"),
    "Arabic three": in_digits(0x0660, "3"),
    "empty": "",
    "spaces": "   ",
    "huge integer": "9" * 400,
    "negative": "-1",
    "float": "1e308",
    "zero": "0",
    "with a zone": "2026-11-29T10:00:00+02:00",
    "Z": "2026-11-29T10:00:00Z",
    "a zone alone": f"{TODAY.isoformat()}+14:00",
    "Unix time": "1764410000",
    "week date": "2026-W01-1",
    "no dashes": TODAY.strftime("%Y%m%d"),
    "NUL": "2026-01-01\x00",
    "today": TODAY.isoformat(),
    "yesterday": (TODAY - timedelta(days=1)).isoformat(),
}


@dataclass(frozen=True)
class Endpoint:
    route: str
    path: str
    dates: tuple[str, ...]  # () when it declares none


def patterns(resolver: URLResolver, prefix: str = "") -> Iterator[tuple[str, URLPattern]]:
    for entry in resolver.url_patterns:
        route = prefix + str(entry.pattern)
        if isinstance(entry, URLResolver):
            yield from patterns(entry, route)
        else:
            yield route, entry


def filled(route: str) -> str:
    """The route with a sample value in each of its parameters (`<str:jobid>` -> 4242)."""

    def value(match: re.Match[str]) -> str:
        converter, name = match.group(1), match.group(2)
        return str(SAMPLES.get(name, CONVERTED.get(converter, "x")))

    return PARAMETER.sub(value, route)


def endpoints() -> list[Endpoint]:
    found = []
    for route, pattern in patterns(get_resolver()):
        view = pattern.callback
        module = getattr(view, "__module__", "")
        if module.startswith(FOREIGN):
            continue
        declared = getattr(view, DATE_PARAMETERS, None)
        assert declared is not None or not module.startswith(DECLARING), (
            f"{route} ({module}.{view.__name__}) declares no date parameters: decorate it "
            "with list_params.reads_dates(...)"
        )
        found.append(Endpoint(route, "/" + filled(route), declared or ()))
    return found


ENDPOINTS = endpoints()
NAMES = sorted({name for endpoint in ENDPOINTS for name in endpoint.dates})


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
    assert NAMES == ["days", "since", "until"]


@pytest.fixture
def staff(usage_site: UsageSite) -> Client:
    """A staff member who may see every page; alice's job 4242 ended yesterday."""
    now = datetime.now(timezone.utc).replace(microsecond=0)
    usage_site.job("4242", start=now - timedelta(days=1))
    client = client_of("alice", staff=True)
    client.raise_request_exception = False  # a 500 is an answer to assert on, not a raise
    return client


def message_of(answer: Any) -> str:
    if answer["Content-Type"].startswith("application/json"):
        return str(json.loads(answer.content)["error"])
    if answer["Content-Type"].startswith("text/html"):
        return text_of(answer)
    return str(answer.content.decode())


def judged(client: Client, endpoint: Endpoint, query: dict[str, str], asked: str) -> None:
    answer = client.get(endpoint.path, query)
    where = f"{endpoint.path}?{query!r}"
    assert answer.status_code in (200, 400), (where, answer.status_code)
    if answer.status_code == 400:
        assert asked in message_of(answer).casefold(), (where, message_of(answer)[-400:])


@pytest.mark.parametrize(
    "endpoint", [e for e in ENDPOINTS if e.dates], ids=lambda e: e.route or "/"
)
def test_every_declared_date_parameter_is_a_400_naming_it_or_an_answer(
    staff: Client, endpoint: Endpoint
) -> None:
    for name in endpoint.dates:
        for value in HOSTILE.values():
            judged(staff, endpoint, {name: value}, name)
    # A pair: each end hostile beside a valid other end.
    if {"since", "until"} <= set(endpoint.dates):
        for value in HOSTILE.values():
            judged(staff, endpoint, {"since": HOSTILE["yesterday"], "until": value}, "until")
            judged(staff, endpoint, {"since": value, "until": HOSTILE["today"]}, "since")


@pytest.mark.parametrize(
    "endpoint", [e for e in ENDPOINTS if not e.dates], ids=lambda e: e.route or "/"
)
def test_an_endpoint_without_dates_ignores_every_hostile_one(
    staff: Client, endpoint: Endpoint
) -> None:
    plain = staff.get(endpoint.path).status_code
    assert plain != 500, endpoint.path
    for label, value in HOSTILE.items():
        answer = staff.get(endpoint.path, dict.fromkeys(NAMES, value))
        assert answer.status_code == plain, (endpoint.path, label, answer.status_code)


def test_a_far_until_lists_the_jobs_up_to_today(staff: Client) -> None:
    """The probe's own case: a clamped answer, the form showing the day it means."""
    answer = staff.get("/usage/users/alice/", {"until": "9999-12-31"})
    assert answer.status_code == 200
    assert f'name="until" value="{TODAY.isoformat()}"' in answer.content.decode()
    assert "4242" in text_of(answer)
