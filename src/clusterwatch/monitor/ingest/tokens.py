"""Host tokens: made random, shown once, stored as a lookup prefix and a SHA-256 digest.

A token looks like `cwh_Ab3dE6gH_<43 url-safe characters>`: `cwh_Ab3dE6gH` is its prefix,
stored in clear to find the row and to name the token in listings and revocation; the rest
carries 256 random bits. Plain SHA-256 is enough at rest because the token is random (no
dictionary to try, so no need for a slow password hash); the comparison is constant-time.
The token text itself is never stored, logged or put in an exception message.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import string
from collections.abc import Iterable, Sequence
from typing import Optional

from django.db import IntegrityError, transaction
from django.utils import timezone

from clusterwatch.monitor.core.models import HostToken, HostTokenKey

SCHEME = "cwh_"
PREFIX_CHARS = 8
SECRET_BYTES = 32
_ALPHABET = string.ascii_letters + string.digits
TOKEN_RE = re.compile(r"(cwh_[A-Za-z0-9]{8})_[A-Za-z0-9_-]{43}")
PREFIX_RE = re.compile(r"(?:cwh_)?([A-Za-z0-9]{8})")
KEY_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_HEADER_SCHEMES = ("token", "bearer")
# Compared against when no row has the prefix, so that an unknown prefix costs the same work.
_UNKNOWN_DIGEST = hashlib.sha256(b"no such token").hexdigest()


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("ascii")).hexdigest()


def generate(scheme: str = SCHEME) -> tuple[str, str]:
    """(token, prefix) for a new token of `scheme` (the usage API's tokens are `cwu_`)."""
    prefix = scheme + "".join(secrets.choice(_ALPHABET) for _ in range(PREFIX_CHARS))
    return f"{prefix}_{secrets.token_urlsafe(SECRET_BYTES)}", prefix


def valid_key(key: str) -> bool:
    return KEY_RE.fullmatch(key) is not None


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
    return credential_of(value, _HEADER_SCHEMES, TOKEN_RE)


def credential_of(value: Optional[str], schemes: Sequence[str],
                  token_re: re.Pattern[str]) -> Optional[str]:
    """The credential of an Authorization header value `<scheme> <credential>` whose scheme
    (any case) is one of `schemes` and whose credential matches `token_re`; None otherwise."""
    scheme, _, credential = (value or "").strip().partition(" ")
    credential = credential.strip()
    if scheme.lower() not in schemes or not token_re.fullmatch(credential):
        return None
    return credential


def create(keys: Sequence[str], note: str = "") -> tuple[HostToken, str]:
    """A new token allowed to write `keys`; the text is returned once and never kept."""
    bad = [key for key in keys if not valid_key(key)]
    if bad or not keys:
        raise ValueError(f"not a valid key: {bad[0]!r}" if bad else "no key given")
    for _ in range(5):
        token, prefix = generate()
        try:
            with transaction.atomic():
                row = HostToken.objects.create(prefix=prefix, digest=digest(token),
                                               note=note[:200])
                HostTokenKey.objects.bulk_create(
                    [HostTokenKey(token=row, key=key) for key in dict.fromkeys(keys)])
        except IntegrityError:  # the prefix is taken: 62**8 makes this rare
            continue
        return row, token
    raise RuntimeError("could not find a free token prefix")


def authenticate(token: str) -> Optional[HostToken]:
    """The active HostToken whose digest matches `token`; None if unknown or revoked."""
    prefix = prefix_of(token)
    if prefix is None:
        return None
    row: Optional[HostToken] = HostToken.objects.filter(prefix=prefix).first()
    found = matches(row.digest if row is not None else _UNKNOWN_DIGEST, token)
    if row is None or not found or row.revoked_at is not None:
        return None
    return row


def matches(stored_digest: str, token: str) -> bool:
    """Whether `token` hashes to `stored_digest`, compared in constant time."""
    return hmac.compare_digest(stored_digest.encode("ascii"), digest(token).encode("ascii"))


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
