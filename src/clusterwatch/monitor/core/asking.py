"""Who is asking: a logged-in session's user, else the user of a valid API token.

One rule for every feature that a script may call (the usage reports' API and drawings, the
image-demand API): a session wins; otherwise `Authorization: Bearer <API token>`. A host
token (`cwh_`) is never an asker: it writes records and reads nothing.
"""

from __future__ import annotations

from typing import Any, Optional

from django.http import HttpRequest

from clusterwatch.monitor.core import api_tokens

LOGIN_NEEDED = ("log in, or send Authorization: Bearer <token> "
                "(clusterwatch monitor create_usage_token)")


def asker(request: HttpRequest) -> Optional[Any]:
    """The logged-in user, else the user of a valid Bearer API token, else None."""
    if request.user.is_authenticated:
        return request.user
    token = api_tokens.from_header(request.headers.get("Authorization"))
    return api_tokens.authenticate(token) if token else None
