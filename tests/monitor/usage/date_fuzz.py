"""The date fuzz of every usage and PanDA endpoint (test_date_parameters.py in process,
test_date_parameters_served.py under gunicorn): the endpoints from the URLconf, their date
parameters from each view's declaration (list_params.reads_dates), and the hostile values.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from django.urls import URLPattern, URLResolver, get_resolver

from clusterwatch.monitor.core.view_guard import DATE_PARAMETERS

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


def endpoints() -> tuple[list[Endpoint], list[str]]:
    """Every endpoint of the URLconf but Django's own, and those of the usage and PanDA
    packages that declare nothing (each named with its view)."""
    found, undeclared = [], []
    for route, pattern in patterns(get_resolver()):
        view = pattern.callback
        module = getattr(view, "__module__", "")
        if module.startswith(FOREIGN):
            continue
        declared = getattr(view, DATE_PARAMETERS, None)
        if declared is None and module.startswith(DECLARING):
            undeclared.append(f"{route} ({module}.{view.__name__})")
        found.append(Endpoint(route, "/" + filled(route), declared or ()))
    return found, undeclared


ENDPOINTS, UNDECLARED = endpoints()
DECLARED = sorted({name for endpoint in ENDPOINTS for name in endpoint.dates})
# What an endpoint that does not declare a name is given anyway: every declared name and the
# usual names of a date, so one left out of a declaration (or never declared anywhere) is
# still tried where it is read.
NAMES = sorted({*DECLARED, "since", "until", "days", "from", "to", "start", "end", "date"})
DATED = [endpoint for endpoint in ENDPOINTS if endpoint.dates]


def queries(endpoint: Endpoint) -> Iterator[tuple[dict[str, str], str]]:
    """Each hostile query of a dated endpoint, with the parameter a 400 must name: every
    value in each parameter alone, and in each end of a since/until pair beside a valid
    other end."""
    for name in endpoint.dates:
        for value in HOSTILE.values():
            yield {name: value}, name
    if {"since", "until"} <= set(endpoint.dates):
        for value in HOSTILE.values():
            yield {"since": HOSTILE["yesterday"], "until": value}, "until"
            yield {"since": value, "until": HOSTILE["today"]}, "since"


def message_of(content_type: str, body: bytes) -> str:
    """What a refusal says, from a JSON error, an HTML page or a text answer."""
    if content_type.startswith("application/json"):
        return str(json.loads(body)["error"])
    text = body.decode()
    if content_type.startswith("text/html"):
        text = re.sub(r"<style\b.*?</style>", " ", text, flags=re.S)
        text = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", text)).split())
    return text
