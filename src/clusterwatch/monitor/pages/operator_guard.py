"""The guard of every operator page (applied in pages/urls.py, where the paths are defined).

Anonymous visitors go to the login page, as before. A logged-in user who is not an operator
(clusterwatch.monitor.core.operators) gets what the usage pages answer about someone else's job:
404 and the same problem page, which says nothing of what the page would have shown, kept
by no cache. Operators get the page.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse

from clusterwatch.monitor.core.operators import is_operator
from clusterwatch.monitor.core.refusals import Refusal, kept_private
from clusterwatch.monitor.usage.config import usage_enabled
from clusterwatch.monitor.usage.web.page_views import NO_SUCH_PAGE, problem

View = Callable[..., HttpResponse]
NEXT_STEP = (
    "Check the address. The harvester pages are for the pool's operators; you see "
    "your own jobs' reports."
)
# A monitor without the usage reports has none to offer: the refusal must not promise them.
NEXT_STEP_NO_USAGE = (
    "Check the address. The harvester pages are for the pool's operators, and this "
    "monitor serves no usage reports."
)


def operators_only(view: View) -> View:
    @functools.wraps(view)
    def guarded(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not is_operator(request.user):
            step = NEXT_STEP if usage_enabled() else NEXT_STEP_NO_USAGE
            return kept_private(problem(request, Refusal(404, NO_SUCH_PAGE), step))
        return view(request, *args, **kwargs)

    return guarded
