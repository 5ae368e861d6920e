"""The operators' paths, derived from the URLconf as the usage matrix derives the usage
reports' (tests/monitor/usage/access_support.py): every path that is not the usage reports'
(their own matrix), the ingest API (host tokens), the admin (staff, Django's own check), the
login pages, or one of the few OPEN paths. A new page is in the access tables without anyone
listing it; a path they cannot build fails them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.urls import URLPattern, URLResolver, get_resolver, reverse

from tests.monitor.records import QUEUE

PANDAID = 6723451  # a job the example record pushed
ARGUMENTS = {"queue": QUEUE, "pandaid": PANDAID}
# Included URLconfs that are not operator pages, and why.
NOT_OPERATOR_PAGES = {
    "clusterwatch.monitor.usage.web.urls": "the usage reports: their own access matrix",
    "clusterwatch.monitor.ingest.urls": "the reporters' API, authenticated by host tokens",
    "django.contrib.auth.urls": "logging in and out",
}
OPEN = {  # paths of the operator URLconfs that are not pages, by name
    "osg-image-demand": "aggregate counts per image for an allocator's usage token "
    "(docs/monitor.md, Image demand API)",
}
KNOWN_PAGES = frozenset(
    {
        "monitor-hosts",
        "monitor-queues",
        "monitor-queue",
        "monitor-jobs",
        "monitor-job",
        "monitor-alarms",
        "monitor-worker-starts",
    }
)


def operator_patterns(patterns: Any = None) -> Iterator[URLPattern]:
    """Every pattern of the URLconf outside NOT_OPERATOR_PAGES and the admin."""
    for entry in get_resolver().url_patterns if patterns is None else patterns:
        if isinstance(entry, URLResolver):
            name = getattr(entry.urlconf_name, "__name__", entry.urlconf_name)
            if entry.app_name == "admin" or name in NOT_OPERATOR_PAGES:
                continue
            yield from operator_patterns(entry.url_patterns)
        else:
            yield entry


def operator_paths() -> list[str]:
    """Every operator page of the URLconf, with ARGUMENTS."""
    paths = []
    for pattern in operator_patterns():
        assert pattern.name, f"an operator path without a name: {pattern.pattern}"
        if pattern.name in OPEN:
            continue
        converters = pattern.pattern.converters
        missing = set(converters) - set(ARGUMENTS)
        assert not missing, f"{pattern.name}: add {missing} to ARGUMENTS"
        paths.append(str(reverse(pattern.name, kwargs={key: ARGUMENTS[key] for key in converters})))
    return paths
