"""Who is asking: a logged-in session's user, else the user an API token or a MUNGE
credential proves.

One rule for every feature that a script may call (the usage reports' API and drawings, the
image-demand API): a session wins; otherwise `Authorization: Bearer <API token>`, or
`Authorization: MUNGE <credential>` where the monitor takes MUNGE (core.munge_auth). A host
token (`cwh_`) is never an asker: it writes records and reads nothing.

A MUNGE credential is good for one decoding (munged refuses a replay), so the answer is kept
on the request: a view that asks twice gets the same user, or the same Refusal.
"""

from __future__ import annotations

import os
from typing import Any, Optional

from django.http import HttpRequest

from clusterwatch.monitor.core import api_tokens, munge_auth
from clusterwatch.monitor.core.refusals import Refusal

LOGIN_NEEDED = ("log in, or send Authorization: Bearer <token> "
                "(clusterwatch monitor create_usage_token)")
_MUNGE_ANSWER = "_clusterwatch_munge_answer"  # the request's attribute that keeps it


def asker(request: HttpRequest) -> Optional[Any]:
    """The logged-in user, else the user of a valid Bearer API token or MUNGE credential,
    else None. A MUNGE credential that proves no one raises its Refusal (403 or 503, one
    line: expired, replayed, not configured, ...) instead of None."""
    if request.user.is_authenticated:
        return request.user
    header = request.headers.get("Authorization")
    if header is not None and munge_auth.sends_munge(header):
        return _munge_asker(request, header)
    token = api_tokens.from_header(header)
    return api_tokens.authenticate(token) if token else None


def _munge_asker(request: HttpRequest, header: str) -> Any:
    answer = getattr(request, _MUNGE_ANSWER, None)
    if answer is None:
        try:
            answer = munge_auth.authenticate(header, os.environ)
        except Refusal as refusal:
            answer = refusal
        setattr(request, _MUNGE_ANSWER, answer)
    if isinstance(answer, Refusal):
        raise answer
    return answer
