"""Who may read or write a key: the 401/403/404 order of the host-report API.

1. No usable token (missing or malformed header, unknown or revoked token): 401, whatever
   the key. A caller without a valid token learns nothing about which keys exist.
2. The token is bound to the key: allowed.
3. Another active token is bound to the key: 403 (this token may not write it).
4. No active token is bound to the key (never created, or all revoked; also any name that
   is not a valid key): 404. Only a holder of a valid token can tell 403 from 404, which is
   what an operator needs to fix a reporter's configuration.
"""

from __future__ import annotations

from typing import Optional

from clusterwatch.monitor.core.models import HostToken, HostTokenKey
from clusterwatch.monitor.ingest import tokens
from clusterwatch.monitor.ingest.errors import Rejection

CHALLENGE = {"WWW-Authenticate": "Token"}


def authorize(header: Optional[str], key: str) -> HostToken:
    """The token that may use `key`, or the Rejection that says why not."""
    text = tokens.from_header(header)
    if text is None:
        raise Rejection(401, "token", "send 'Authorization: Token <token>' (or Bearer) with a "
                        "token made by create_host_token", CHALLENGE)
    token, bound = tokens.authenticate_for(text, key)
    if token is None:
        raise Rejection(401, "token", "unknown or revoked token", CHALLENGE)
    if tokens.valid_key(key):
        if bound:
            return token
        if HostTokenKey.objects.filter(key=key, token__revoked_at__isnull=True).exists():
            raise Rejection(403, "forbidden", f"this token may not use key {key!r}")
    raise Rejection(404, "unknown_key", f"no active token is bound to key {key!r}")
