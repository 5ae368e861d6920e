"""The one entry guard of the monitor's feature views: the feature on, the methods allowed,
who may come in, every Refusal answered in the view's dialect, and private caching.

    @guarded(json_refusal, feature=Feature(usage_enabled, "the usage reports are off"))
    def job_usage(request, jobid): ...   # raises Refusal(...) for what it will not answer

The checks run in this order, the order the views have always answered in: the method
(Django's bare 405 with `Allow: GET, HEAD`, before anything else; or, with
`method_in_dialect`, a 405 in the view's dialect once the feature is known to be on), the
feature (a 404 in the dialect, or an answer of the feature's own), the entry (`Entry`),
then the view itself. Every answer, refusals and redirects included, is `Cache-Control:
private, no-store` unless `private=False`.
"""

from __future__ import annotations

import enum
import functools
from dataclasses import dataclass
from typing import Any, Callable, Optional, TypeVar, Union, cast

from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_safe

from clusterwatch.monitor.core.asking import LOGIN_NEEDED, asker
from clusterwatch.monitor.core.refusals import Refusal, kept_private

View = Callable[..., HttpResponse]
Dialect = Callable[[HttpRequest, Refusal], HttpResponse]
SAFE_METHODS = ("GET", "HEAD")


class Entry(enum.Enum):
    """Who the guard lets reach the view."""

    ANYONE = "anyone"  # the view decides (and refuses with a Refusal)
    LOGGED_IN = "logged_in"  # anonymous visitors go to the login page
    # Anonymous browsers go to the login page; a request with an Authorization header is a
    # script with a token, which the view checks (a bad token is its Refusal, not a redirect).
    LOGGED_IN_OR_SCRIPT = "logged_in_or_script"
    ASKER = "asker"  # a session or a valid API token (core.asking), else 403 LOGIN_NEEDED


@dataclass(frozen=True)
class Feature:
    """A feature the view belongs to: answered only while `is_on()`; when off, a 404 with the
    message `off`, or the answer `off` returns (the usage index sends to the hosts page)."""

    is_on: Callable[[], bool]
    off: Union[str, Callable[[HttpRequest], HttpResponse]]


def guarded(dialect: Dialect, *, feature: Optional[Feature] = None,
            entry: Entry = Entry.ANYONE, private: bool = True,
            method_in_dialect: bool = False) -> Callable[[View], View]:
    """The guard for a view whose refusals `dialect` answers; see the module's docstring."""

    def guard(body: View) -> View:
        @functools.wraps(body)
        def view(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            answer = checked(request, *args, **kwargs)
            return kept_private(answer) if private else answer

        def checked(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if feature is not None and not feature.is_on():
                if callable(feature.off):
                    return feature.off(request)
                return dialect(request, Refusal(404, feature.off))
            if method_in_dialect and request.method not in SAFE_METHODS:
                refused = dialect(request, Refusal(405, "only GET"))
                refused["Allow"] = ", ".join(SAFE_METHODS)
                return refused
            if _sent_to_login(request, entry):
                return redirect_to_login(request.get_full_path())
            try:
                if entry is Entry.ASKER and asker(request) is None:
                    raise Refusal(403, LOGIN_NEEDED)
                return body(request, *args, **kwargs)
            except Refusal as refusal:
                return dialect(request, refusal)

        return view if method_in_dialect else cast(View, require_safe(view))

    return guard


def _sent_to_login(request: HttpRequest, entry: Entry) -> bool:
    if request.user.is_authenticated:
        return False
    if entry is Entry.LOGGED_IN:
        return True
    return entry is Entry.LOGGED_IN_OR_SCRIPT and "Authorization" not in request.headers


# The attribute reads_dates sets on a view.
DATE_PARAMETERS = "date_parameters"
Declared = TypeVar("Declared", bound=Callable[..., object])


def reads_dates(*names: str) -> Callable[[Declared], Declared]:
    """Declares the query parameters of a view that name a day or a span of days (none for
    most): the test that fuzzes every usage and PanDA endpoint's dates reads them from the
    URLconf, so a new endpoint or parameter is fuzzed without being listed there."""

    def declare(view: Declared) -> Declared:
        setattr(view, DATE_PARAMETERS, names)
        return view

    return declare
