"""How the usage views turn the report's failures into answers: never a 500.

A malformed job id is 400; an unknown job and a job the asker may not see are the same 404
(nothing revealed); accounting or Prometheus down, slow or misconfigured is 503 with a plain
message. `fetch_report` gives a view the report or raises the Refusal to send instead; the
Refusal, the JSON errors and the guard that answers them are the kernel's
(`core.refusals`, `core.view_guard`).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Set
from typing import Any, Callable, Optional

from django.http import HttpRequest, HttpResponse, JsonResponse

from clusterwatch.monitor.core.asking import LOGIN_NEEDED, asker
from clusterwatch.monitor.core.refusals import Refusal, json_refusal
from clusterwatch.monitor.core.view_guard import Feature, guarded
from clusterwatch.monitor.usage.accounting.interface import (
    AccountingConfigError,
    AccountingError,
    InvalidJobId,
    UnknownJob,
)
from clusterwatch.monitor.usage.config import get_config, usage_enabled
from clusterwatch.monitor.usage.usage_report import (
    MetricsUnavailable,
    UsageReport,
    Visibility,
    load_report,
)
from clusterwatch.monitor.usage.web.access import visibility

log = logging.getLogger(__name__)

__all__ = ["LOGIN_NEEDED", "NO_SUCH_JOB", "Refusal", "accounting_refusal", "fetch_report",
           "json_view", "owned_by", "report_or_refusal"]

NO_SUCH_JOB = "no job with this id that you may see"
# The usage API's answer when the reports are off: the variable that turns them on.
API_OFF = Feature(usage_enabled, "the usage reports are off (CLUSTERWATCH_PROMETHEUS_URL)")


def fetch_report(request: HttpRequest, jobid: str, *, with_series: bool,
                 series_keys: Optional[Set[str]] = None,
                 listing_plots: bool = False) -> UsageReport:
    """The report for the asker of `request`, or a Refusal. `series_keys`, `listing_plots`:
    load_report's."""
    user = asker(request)
    if user is None:
        raise Refusal(403, LOGIN_NEEDED)
    return report_or_refusal(jobid, visibility(user, get_config()), with_series=with_series,
                             series_keys=series_keys, listing_plots=listing_plots)


def report_or_refusal(jobid: str, visible: Visibility, *, with_series: bool,
                      series_keys: Optional[Set[str]] = None,
                      listing_plots: bool = False) -> UsageReport:
    """The report of `jobid` if `visible` lets it be seen, or the Refusal to send instead: a
    job `visible` refuses is the unknown job's 404 (asked of accounting alike)."""
    try:
        return load_report(jobid, with_series=with_series, visible=visible,
                           series_keys=series_keys, listing_plots=listing_plots)
    except InvalidJobId as exc:
        raise Refusal(400, str(exc)) from None
    except UnknownJob:
        raise Refusal(404, NO_SUCH_JOB) from None
    except AccountingError as exc:
        raise accounting_refusal(exc) from None
    except MetricsUnavailable as exc:
        raise Refusal(503, f"the job's metrics are not available now: {exc}") from None


def owned_by(name: str) -> Visibility:
    """Only the jobs of the user named `name`, exactly (a share link's rule: its maker's own
    job, whatever staff or an account's members may see)."""
    return lambda job_user, _account: job_user == name


def accounting_refusal(exc: AccountingError) -> Refusal:
    """503: accounting failed. A configuration fault is logged, not shown."""
    if isinstance(exc, AccountingConfigError):
        log.error("usage reports: accounting is misconfigured: %s", exc)
        return Refusal(503, "accounting is not available: the monitor's configuration is "
                            "wrong (its log says why)")
    return Refusal(503, f"accounting is not available: {exc}")


def json_view(body: Callable[..., Any]) -> Callable[..., HttpResponse]:
    """An API view: GET and HEAD only, 404 when the usage reports are off, its Refusals as
    JSON errors, private; a body's plain data is sent as indented JSON."""

    @functools.wraps(body)
    def as_json(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        result = body(request, *args, **kwargs)
        if isinstance(result, HttpResponse):
            return result
        return JsonResponse(result, json_dumps_params={"indent": 1})

    return guarded(json_refusal, feature=API_OFF, method_in_dialect=True)(as_json)
