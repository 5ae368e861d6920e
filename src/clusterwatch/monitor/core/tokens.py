"""What every token of the monitor is made of: host tokens (`cwh_`, ingest) and API tokens
(`cwu_`, the usage reports and the image-demand API) alike.

A token looks like `<scheme><8 letters or digits>_<43 url-safe characters>`: the scheme and
the 8 characters are its prefix, stored in clear to find the row and to name the token in
listings and revocation; the rest carries 256 random bits. Plain SHA-256 is enough at rest
because the token is random (no dictionary to try, so no slow password hash is needed); the
comparison is constant-time, and an unknown prefix costs the same comparison as a known one.
The token text itself is never stored, logged or put in an exception message. Each kind has
its own scheme, so neither is ever accepted where the other is expected.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import string
from collections.abc import Sequence
from typing import Callable, Optional, TypeVar

from django.db import IntegrityError, transaction

PREFIX_CHARS = 8
SECRET_BYTES = 32
_ALPHABET = string.ascii_letters + string.digits
# Compared against when no row has the prefix, so that an unknown prefix costs the same work.
_UNKNOWN_DIGEST = hashlib.sha256(b"no such token").hexdigest()
_TRIES = 5  # 62**8 prefixes: a second try is already rare

Row = TypeVar("Row")


def token_pattern(scheme: str) -> re.Pattern[str]:
    """A whole token of `scheme`; group 1 is its prefix."""
    return re.compile(rf"({re.escape(scheme)}[A-Za-z0-9]{{{PREFIX_CHARS}}})_[A-Za-z0-9_-]{{43}}")


def generate(scheme: str) -> tuple[str, str]:
    """(token, prefix) for a new token of `scheme`."""
    prefix = scheme + "".join(secrets.choice(_ALPHABET) for _ in range(PREFIX_CHARS))
    return f"{prefix}_{secrets.token_urlsafe(SECRET_BYTES)}", prefix


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("ascii")).hexdigest()


def matches(stored_digest: Optional[str], token: str) -> bool:
    """Whether `token` hashes to `stored_digest`, compared in constant time; None (no row had
    the prefix) is compared too, against a digest no token has, and is False."""
    expected = _UNKNOWN_DIGEST if stored_digest is None else stored_digest
    same = hmac.compare_digest(expected.encode("ascii"), digest(token).encode("ascii"))
    return same and stored_digest is not None


def credential_of(value: Optional[str], schemes: Sequence[str],
                  token_re: re.Pattern[str]) -> Optional[str]:
    """The credential of an Authorization header value `<scheme> <credential>` whose scheme
    (any case) is one of `schemes` and whose credential matches `token_re`; None otherwise."""
    scheme, _, credential = (value or "").strip().partition(" ")
    credential = credential.strip()
    if scheme.lower() not in schemes or not token_re.fullmatch(credential):
        return None
    return credential


def issue(scheme: str, store: Callable[[str, str], Row]) -> tuple[Row, str]:
    """A new token of `scheme` stored by `store(prefix, digest)` in a transaction of its own,
    tried again with another prefix when that one is taken; (row, token text), the text
    returned once and never kept."""
    for _ in range(_TRIES):
        token, prefix = generate(scheme)
        try:
            with transaction.atomic():
                row = store(prefix, digest(token))
        except IntegrityError:  # the prefix is taken
            continue
        return row, token
    raise RuntimeError("could not find a free token prefix")
