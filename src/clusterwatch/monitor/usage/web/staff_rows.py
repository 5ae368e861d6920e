"""The staff page's rows: the least efficient recent jobs of every user, from the kept
summaries (so one indexed query, no accounting or Prometheus call).

Jobs whose sorted efficiency was not measured are left out: "least efficient" is about
figures that exist. A warning code filters on the kept `warning_codes` column as a whole
word, so one code never matches inside another.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Optional

from django.db.models import Q

from clusterwatch.monitor.core.humanize import duration_text, size_text
from clusterwatch.monitor.usage.models import KeptSummary
from clusterwatch.monitor.usage.rendering.figures_text import moment_text, warning_title
from clusterwatch.monitor.usage.rendering.shown_text import shown
from clusterwatch.monitor.usage.rendering.summary_rows import percent
from clusterwatch.monitor.usage.web.list_params import StaffQuery

STAFF_ROWS = 100


@dataclass(frozen=True)
class StaffRow:
    jobid: str
    user: str
    account: str
    state: str
    end: str
    cpus: str
    cpu_efficiency: str
    memory_requested: str
    memory_efficiency: str
    elapsed: str
    warnings: tuple[tuple[str, str], ...]  # (code, title)


@dataclass(frozen=True)
class StaffList:
    rows: tuple[StaffRow, ...]
    matching: int  # kept jobs in the window that match (the rows are the first STAFF_ROWS)


def least_efficient(query: StaffQuery, limit: int = STAFF_ROWS) -> StaffList:
    found = KeptSummary.objects.filter(end__gte=query.since,
                                       **{f"{query.sort}__isnull": False})
    if query.warning is not None:
        found = found.filter(_has_code(query.warning))
    ordered = found.order_by(query.sort, "-end", "jobid")
    rows = tuple(staff_row(kept.jobid, kept.user, kept.account, kept.state, kept.document)
                 for kept in ordered[:limit])
    return StaffList(rows, found.count())


def staff_row(jobid: str, user: str, account: str, state: str,
              document: dict[str, Any]) -> StaffRow:
    if not isinstance(document, dict):  # damaged: the row's own columns, "—" for the rest
        document = {}
    requested: Optional[int] = document.get("memory_requested_bytes")
    return StaffRow(
        # Accounting's names as every report shows them (shown_text): no bidi controls.
        jobid=jobid, user=shown(user), account=shown(account), state=shown(state),
        end=moment_text(document.get("end")), cpus=str(document.get("cpus_allocated", "—")),
        cpu_efficiency=percent(document.get("cpu_efficiency")),
        memory_requested="—" if requested is None else size_text(requested),
        memory_efficiency=percent(document.get("memory_efficiency")),
        elapsed=duration_text(int(document.get("elapsed_s") or 0)),
        warnings=tuple((code, warning_title(code))
                       for code in (str(w.get("code", "")) for w in _warnings(document))))


def _has_code(code: str) -> Q:
    return (Q(warning_codes=code) | Q(warning_codes__startswith=f"{code} ")
            | Q(warning_codes__endswith=f" {code}") | Q(warning_codes__contains=f" {code} "))


def _warnings(document: dict[str, Any]) -> Iterable[dict[str, Any]]:
    found = document.get("warnings")
    return [w for w in found if isinstance(w, dict)] if isinstance(found, list) else []
