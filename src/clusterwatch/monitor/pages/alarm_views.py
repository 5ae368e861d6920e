"""`/alarms/` and its forms: staff silence alarms, expire silences, acknowledge alarms.

Every operator reads the page (the guard in pages/urls.py); only staff (and superusers) get
the forms, and a POST from anyone else is 403 whatever it carries, so a form copied by hand
does not work either. The forms post to the page itself with an `action` (silence, expire,
acknowledge, unacknowledge): one path, guarded like every other operator page. Each form is
CSRF protected (Django's middleware; the template sends the token), answers a success with
a 303 back to the page (a reload does not post it twice), and bad input with the page
itself, 400 (404 for an unknown silence or alarm) and the one-line error, nothing stored.
The rules are alarms.operations', which the commands call too.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable, Optional

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from clusterwatch.monitor.alarms import operations
from clusterwatch.monitor.alarms.config import windows_or_error
from clusterwatch.monitor.alarms.status import summary
from clusterwatch.monitor.core.refusals import kept_private
from clusterwatch.monitor.pages.alarms_page import alarms_context
from clusterwatch.notify.silences import SilenceError, parse_duration, parse_time

FORM_FIELDS = ("matchers", "duration", "until", "comment")
MAX_FIELD_CHARS = 2000  # a pasted wall of text is refused, not parsed


def may_change_alarms(user: Any) -> bool:
    """Staff and superusers; an operator by group membership only reads."""
    return bool(getattr(user, "is_active", False)
                and (getattr(user, "is_staff", False) or getattr(user, "is_superuser", False)))


def _page(request: HttpRequest, status: int = 200, error: Optional[str] = None,
          form: Optional[dict[str, str]] = None) -> HttpResponse:
    now = time.time()
    windows, windows_error = windows_or_error(Path(settings.ALARMS_CONFIG),
                                              settings.REPORT_INTERVAL_S)
    # What holds each open alarm and who acknowledged it: alarms_status' summary, decided
    # as the run decides (the same facts, silences and windows).
    data = summary(now, windows=windows, windows_error=windows_error)
    found = operations.readable(operations.list_silences(now))
    context = alarms_context(data, now, found, may_change_alarms(request.user))
    context.update(error=error, form=form or {}, windows_error=windows_error)
    return kept_private(render(request, "monitor/alarms.html", context, status=status))


def _field(request: HttpRequest, name: str) -> str:
    value: str = request.POST.get(name, "")
    if len(value) > MAX_FIELD_CHARS:
        raise SilenceError(f"the {name} field is longer than {MAX_FIELD_CHARS} characters")
    if "\x00" in value:  # PostgreSQL cannot even look a NUL up: refused, never a 500
        raise SilenceError(f"the {name} field has a NUL character")
    return value.strip()


def _back(anchor: str) -> HttpResponseRedirect:
    """After a change, the page again (303: the browser asks with GET)."""
    answer = HttpResponseRedirect(reverse("monitor-alarms") + anchor)
    answer.status_code = 303
    return answer


@require_http_methods(["GET", "HEAD", "POST"])
def alarm_list(request: HttpRequest) -> HttpResponse:
    """The page; a POST is one of its forms, named by `action`."""
    if request.method != "POST":
        return _page(request)
    if not may_change_alarms(request.user):
        return kept_private(HttpResponse(
            "Only staff may change silences and acknowledgements.\n", status=403,
            content_type="text/plain; charset=utf-8"))
    action = request.POST.get("action", "")
    handler = ACTIONS.get(action)
    if handler is None:
        return _page(request, 400, f"unknown action {action[:40]!r}")
    return handler(request)


def _silence(request: HttpRequest) -> HttpResponse:
    """matchers (separated by spaces), duration (2h) or until (ISO 8601), comment."""
    form = {name: request.POST.get(name, "")[:MAX_FIELD_CHARS] for name in FORM_FIELDS}
    try:
        duration, until = _field(request, "duration"), _field(request, "until")
        if duration and until:
            raise SilenceError("give either a duration or an end time (until), not both")
        if not duration and not until:
            raise SilenceError("give a duration (like 2h) or an end time (until)")
        made = operations.add_silence(
            _field(request, "matchers").split(),
            duration_s=parse_duration(duration) if duration else None,
            until=parse_time(until) if until else None,
            comment=_field(request, "comment"), author=request.user.get_username(),
            now=time.time())
    except SilenceError as exc:
        return _page(request, 400, str(exc), form)
    return _back(f"#silence-{made.id}")


def _expire(request: HttpRequest) -> HttpResponse:
    try:
        operations.expire_silence(_field(request, "silence"), time.time(),
                                  by=request.user.get_username())
    except LookupError as exc:
        return _page(request, 404, str(exc))
    except SilenceError as exc:
        return _page(request, 400, str(exc))
    return _back("#silences")


def _acknowledge(request: HttpRequest) -> HttpResponse:
    try:
        incident = _field(request, "incident")
        operations.acknowledge(incident, author=request.user.get_username(),
                               comment=_field(request, "comment"), now=time.time())
    except LookupError as exc:
        return _page(request, 404, str(exc))
    except ValueError as exc:  # SilenceError too: a field too long
        return _page(request, 400, str(exc))
    return _back(f"#alarm-{incident}")


def _unacknowledge(request: HttpRequest) -> HttpResponse:
    try:
        incident = _field(request, "incident")
        operations.unacknowledge(incident, by=request.user.get_username(), now=time.time())
    except LookupError as exc:
        return _page(request, 404, str(exc))
    except ValueError as exc:
        return _page(request, 400, str(exc))
    return _back(f"#alarm-{incident}")


ACTIONS: dict[str, Callable[[HttpRequest], HttpResponse]] = {
    "silence": _silence, "expire": _expire, "acknowledge": _acknowledge,
    "unacknowledge": _unacknowledge,
}
