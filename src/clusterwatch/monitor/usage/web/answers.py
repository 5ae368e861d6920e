"""How the usage views turn the report's failures into answers: never a 500.

A malformed job id is 400; an unknown job and a job the asker may not see are the same 404
(nothing revealed); accounting or Prometheus down, slow or misconfigured is 503 with a plain
message. `report_or_answer` gives a view either the report or the answer to send instead.
"""

from __future__ import annotations

import logging
from collections.abc import Set
from typing import Any, Callable, Optional, Union

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.cache import patch_cache_control

from clusterwatch.monitor.usage.accounting.interface import (
    AccountingConfigError,
    AccountingError,
    InvalidJobId,
    UnknownJob,
)
from clusterwatch.monitor.usage.config import get_config, usage_enabled
from clusterwatch.monitor.usage.usage_report import MetricsUnavailable, UsageReport, load_report
from clusterwatch.monitor.usage.web.access import asker, visibility

log = logging.getLogger(__name__)

NO_SUCH_JOB = "no job with this id that you may see"
LOGIN_NEEDED = ("log in, or send Authorization: Bearer <token> "
                "(clusterwatch monitor create_usage_token)")


class Refusal(Exception):
    """A view's answer other than the report: status and a plain one-line message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def json_error(status: int, message: str) -> JsonResponse:
    return JsonResponse({"error": message}, status=status)


def fetch_report(request: HttpRequest, jobid: str, *, with_series: bool,
                 series_keys: Optional[Set[str]] = None,
                 listing_plots: bool = False) -> UsageReport:
    """The report for the asker of `request`, or a Refusal. `series_keys`, `listing_plots`:
    load_report's."""
    user = asker(request)
    if user is None:
        raise Refusal(403, LOGIN_NEEDED)
    try:
        return load_report(jobid, with_series=with_series,
                           visible=visibility(user, get_config()), series_keys=series_keys,
                           listing_plots=listing_plots)
    except InvalidJobId as exc:
        raise Refusal(400, str(exc)) from None
    except UnknownJob:
        raise Refusal(404, NO_SUCH_JOB) from None
    except AccountingError as exc:
        raise accounting_refusal(exc) from None
    except MetricsUnavailable as exc:
        raise Refusal(503, f"the job's metrics are not available now: {exc}") from None


def accounting_refusal(exc: AccountingError) -> Refusal:
    """503: accounting failed. A configuration fault is logged, not shown."""
    if isinstance(exc, AccountingConfigError):
        log.error("usage reports: accounting is misconfigured: %s", exc)
        return Refusal(503, "accounting is not available: the monitor's configuration is "
                            "wrong (its log says why)")
    return Refusal(503, f"accounting is not available: {exc}")


def kept_private(answer: HttpResponse) -> HttpResponse:
    """A report is one person's: never stored by a shared cache, nor by a browser on a
    shared machine after logout."""
    patch_cache_control(answer, private=True, no_store=True)
    return answer


def json_view(body: Callable[..., Any]) -> Callable[..., HttpResponse]:
    """An API view: its Refusals become JSON errors; GET and HEAD only; 404 when the usage
    reports are off."""

    def view(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        return kept_private(answer(request, *args, **kwargs))

    def answer(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not usage_enabled():
            return json_error(404, "the usage reports are off (CLUSTERWATCH_PROMETHEUS_URL)")
        if request.method not in ("GET", "HEAD"):
            refused: HttpResponse = json_error(405, "only GET")
            refused["Allow"] = "GET, HEAD"
            return refused
        try:
            result: Union[HttpResponse, Any] = body(request, *args, **kwargs)
        except Refusal as refusal:
            return json_error(refusal.status, refusal.message)
        if isinstance(result, HttpResponse):
            return result
        return JsonResponse(result, json_dumps_params={"indent": 1})

    view.__name__ = body.__name__
    view.__doc__ = body.__doc__
    return view
