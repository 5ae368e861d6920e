"""The user page's table rows as markup, built in Python with the templates' own escaping.

A page of 100 jobs has some 1,500 cells: Django's template loop over them took a quarter of
the page's time, this takes a tenth of that. Every value passes through `html.escape`
(what Django's autoescape calls); the markup around it is constant, so the whole is
marked safe once.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from urllib.parse import quote

from django.utils.safestring import SafeString

from clusterwatch.monitor.usage.rendering.shown_text import shown
from clusterwatch.monitor.usage.web.job_rows import JobRow

# A job the rules have not judged here (no kept summary with the exporter's figures): its
# page judges it, or says why it cannot (too few scrapes, series gone).
NOT_JUDGED = '<span class="muted" title="its page says more">not judged</span>'
NONE = '<span class="muted">none</span>'


def user_rows(rows: Sequence[JobRow]) -> SafeString:
    return SafeString("\n".join(_row(row) for row in rows))


def _row(row: JobRow) -> str:
    jobid = escape(row.jobid)
    state = escape(shown(row.state))
    if row.running:
        state = f'<span class="badge ok">{state}</span>'
    cells = "".join(f'<td class="num nowrap">{escape(cell)}</td>' for cell in row.cells)
    badges = "".join(f'<span class="badge warn" title="{escape(code)}">'
                     f"{escape(title)}</span> " for code, title in row.warnings)
    if not row.judged:
        badges = NOT_JUDGED
    elif not badges:
        badges = NONE
    return (f'<tr><td class="nowrap"><a href="/usage/jobs/{quote(row.jobid, safe="_+")}/">'
            f"{jobid}</a></td><td>{escape(shown(row.name))}</td>"
            f"<td>{state}</td>"
            f'<td class="nowrap">{escape(row.start)}</td>{cells}<td>{badges}</td></tr>')
