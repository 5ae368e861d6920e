"""Pieces for the markup the page builders make (`queue_rows`): escaping as the templates
escape, the "—" of a missing value, times, table rows and job links.

`esc` is the one way a record value enters that markup; a fragment is marked safe (`safe`)
only once whole.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from html import escape as html_escape
from typing import Any, Optional

from django.urls import URLResolver, get_resolver, get_script_prefix, get_urlconf, reverse
from django.utils.functional import Promise
from django.utils.safestring import SafeString

from clusterwatch.monitor.core.stamps import Stamp

DASH = "—"  # what a cell shows for a value the record does not have
_SAMPLE_ID = 918273645  # a PandaID that stands for any other in a reversed job URL


def esc(value: Any) -> str:
    """As Django's `conditional_escape`: markup already safe kept, anything else escaped by
    the same `html.escape` Django's `escape` calls; without the lazy-string checks that made
    `format_html` the largest cost of a 50-panel page."""
    if type(value) is int:  # most cells are counts: nothing to escape
        return str(value)
    if isinstance(value, Promise):
        value = str(value)
    if hasattr(value, "__html__"):
        return str(value.__html__())
    return html_escape(str(value))


def safe(markup: str) -> SafeString:
    """Markup built only of constant tags and values passed through `esc`, marked safe."""
    return SafeString(markup)


def or_dash(value: Any) -> Any:
    """As the templates' `default_if_none:"—"`."""
    return DASH if value is None else value


def when(at: Optional[Stamp]) -> str:
    """A time as the pages print it ("<utc>, <age>" as markup), "—" when there is none."""
    return DASH if at is None else str(at.html)


def th_row(name: str, cell: str, num: bool = False) -> str:
    """`<tr><th>name</th><td>cell</td></tr>`: `name` is escaped, `cell` must be markup."""
    td = '<td class="num">' if num else "<td>"
    return f"<tr><th>{esc(name)}</th>{td}{cell}</td></tr>"


def count_rows(pairs: Iterable[tuple[str, Any]], name_cell: str = "td") -> str:
    """`<tr><td>name</td><td class="num">n</td></tr>` per pair (None shows as "—")."""
    return "".join(f'<tr><{name_cell}>{esc(name)}</{name_cell}><td class="num">'
                   f"{esc(or_dash(n))}</td></tr>" for name, n in pairs)


@functools.lru_cache(maxsize=16)
def _job_href_parts(script_prefix: str, resolver: URLResolver) -> tuple[str, str]:
    """The job URL around its PandaID; the arguments are the cache key (`reverse` reads
    both from the thread's state)."""
    head, _, tail = reverse("monitor-job", args=[_SAMPLE_ID]).partition(str(_SAMPLE_ID))
    return head, tail


def job_href(pandaid: int) -> str:
    """`reverse("monitor-job", args=[pandaid])` for a PandaID above 0, reversed once per
    script prefix and URL configuration: a queue page of 50 panels links a thousand jobs."""
    head, tail = _job_href_parts(get_script_prefix(), get_resolver(get_urlconf()))
    return f"{head}{pandaid}{tail}"
