"""Host tokens: a reporter's credential, bound to the keys it may write.

`cwh_Ab3dE6gH_<43 url-safe characters>`, made random, shown once, stored as its prefix
(`cwh_Ab3dE6gH`) and a SHA-256 digest: the form and the primitives are the kernel's
(`clusterwatch.monitor.core.tokens`), shared with the API tokens. The token text itself is
never stored, logged or put in an exception message.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Optional

from django.db import connections, router
from django.utils import timezone

from clusterwatch.monitor.core import tokens as primitives
from clusterwatch.monitor.core.models import HostToken, HostTokenKey
from clusterwatch.monitor.core.record_keys import KEY_RE, valid_key
from clusterwatch.monitor.core.tokens import digest, matches
from clusterwatch.monitor.ingest import statements

__all__ = ["KEY_RE", "SCHEME", "TOKEN_RE", "authenticate", "authenticate_for", "create",
           "describe_keys", "digest", "find", "from_header", "generate", "keys_of", "matches",
           "normal_prefix", "prefix_of", "revoke", "valid_key"]

SCHEME = "cwh_"
TOKEN_RE = primitives.token_pattern(SCHEME)
PREFIX_RE = re.compile(r"(?:cwh_)?([A-Za-z0-9]{8})")
_HEADER_SCHEMES = ("token", "bearer")
# HostToken's every column and whether it is bound to a key (models.py; test_tokens checks
# the row against the ORM's on both databases).
_ROW = ("id", "prefix", "digest", "created_at", "revoked_at", "note")
_AUTHENTICATE = ("SELECT id, prefix, digest, created_at, revoked_at, note, EXISTS (SELECT 1 "
                 "FROM monitor_hosttokenkey WHERE monitor_hosttokenkey.token_id = "
                 "monitor_hosttoken.id AND monitor_hosttokenkey.key = %s) "
                 "FROM monitor_hosttoken WHERE prefix = %s")


def generate() -> tuple[str, str]:
    """(token, prefix) for a new host token."""
    return primitives.generate(SCHEME)


def prefix_of(token: str) -> Optional[str]:
    """The prefix of a well-formed token, None for anything else."""
    match = TOKEN_RE.fullmatch(token)
    return match.group(1) if match else None


def normal_prefix(text: str) -> Optional[str]:
    """`cwh_Ab3dE6gH` for `cwh_Ab3dE6gH` or `Ab3dE6gH`; None if it is no prefix."""
    match = PREFIX_RE.fullmatch(text.strip())
    return SCHEME + match.group(1) if match else None


def from_header(value: Optional[str]) -> Optional[str]:
    """The token of `Token <t>` or `Bearer <t>` (scheme in any case); None otherwise."""
    return primitives.credential_of(value, _HEADER_SCHEMES, TOKEN_RE)


def create(keys: Sequence[str], note: str = "") -> tuple[HostToken, str]:
    """A new token allowed to write `keys`; the text is returned once and never kept."""
    bad = [key for key in keys if not valid_key(key)]
    if bad or not keys:
        raise ValueError(f"not a valid key: {bad[0]!r}" if bad else "no key given")

    def store(prefix: str, token_digest: str) -> HostToken:
        row: HostToken = HostToken.objects.create(prefix=prefix, digest=token_digest,
                                                  note=note[:200])
        HostTokenKey.objects.bulk_create(
            [HostTokenKey(token=row, key=key) for key in dict.fromkeys(keys)])
        return row

    return primitives.issue(SCHEME, store)


def authenticate(token: str) -> Optional[HostToken]:
    """The active HostToken whose digest matches `token`; None if unknown or revoked."""
    return authenticate_for(token, "")[0]


def authenticate_for(token: str, key: str) -> tuple[Optional[HostToken], bool]:
    """(`authenticate(token)`, whether that token is bound to `key`), in one statement.

    Every post asks both: `HostToken.objects.filter(prefix=...).first()` and the binding's
    SELECT took 0.25 ms of CPU in a loop and 0.6-0.7 between 200 KB posts (cold caches),
    this one SELECT 0.03 in the loop. The row is the ORM's (`statements.instance_of`).
    """
    prefix = prefix_of(token)
    if prefix is None:
        return None, False
    alias = router.db_for_read(HostToken)
    with connections[alias].cursor() as cursor:
        # A name that is no key is bound to nothing, and may hold what a database refuses
        # (PostgreSQL: a NUL), which would turn a 401 or 404 into a DataError.
        cursor.execute(_AUTHENTICATE, (key if valid_key(key) else "", prefix))
        found = cursor.fetchone()
    row = statements.instance_of(HostToken, _ROW, found[:-1], alias) if found else None
    authentic = matches(row.digest if isinstance(row, HostToken) else None, token)
    if not isinstance(row, HostToken) or not authentic or row.revoked_at is not None:
        return None, False
    return row, bool(found[-1])


def revoke(row: HostToken) -> bool:
    """Revoke `row`; False when it already was."""
    changed: int = HostToken.objects.filter(pk=row.pk, revoked_at__isnull=True).update(
        revoked_at=timezone.now())
    row.refresh_from_db()
    return changed == 1


def find(prefix: str) -> Optional[HostToken]:
    row: Optional[HostToken] = HostToken.objects.filter(prefix=prefix).first()
    return row


def keys_of(row: HostToken) -> list[str]:
    return sorted(row.keys.values_list("key", flat=True))


def describe_keys(keys: Iterable[str]) -> str:
    return ", ".join(keys) or "(none)"
