"""API tokens: `cwu_<8>_<43>`, shown once, stored as a prefix and a SHA-256 digest.

A script sends `Authorization: Bearer <token>` and acts as the token's user, with the same
visibility, on the usage reports' API and the image-demand API. Made by `clusterwatch
monitor create_usage_token` (the command keeps its name); revoked in the admin. The scheme
differs from the host tokens' (`cwh_`), so neither kind is accepted where the other is
expected.
"""

from __future__ import annotations

from typing import Any, Optional

from django.utils import timezone

from clusterwatch.monitor.core.models import ApiToken
from clusterwatch.monitor.core.tokens import credential_of, issue, matches, token_pattern

SCHEME = "cwu_"
TOKEN_RE = token_pattern(SCHEME)


def create(user: Any, note: str = "") -> tuple[ApiToken, str]:
    """A new token acting as `user`; its text is returned once and never kept."""

    def store(prefix: str, digest: str) -> ApiToken:
        row: ApiToken = ApiToken.objects.create(user=user, prefix=prefix, digest=digest,
                                                note=note[:200])
        return row

    return issue(SCHEME, store)


def from_header(value: Optional[str]) -> Optional[str]:
    """The token of `Bearer <t>` (scheme in any case); None for anything else."""
    return credential_of(value, ("bearer",), TOKEN_RE)


def authenticate(token: str) -> Optional[Any]:
    """The active user of `token`; None if the token is unknown, revoked or its user inactive."""
    match = TOKEN_RE.fullmatch(token)
    if match is None:
        return None
    row = ApiToken.objects.select_related("user").filter(prefix=match.group(1)).first()
    found = matches(row.digest if row is not None else None, token)
    if row is None or not found or row.revoked_at is not None or not row.user.is_active:
        return None
    ApiToken.objects.filter(pk=row.pk).update(last_used_at=timezone.now())
    return row.user
