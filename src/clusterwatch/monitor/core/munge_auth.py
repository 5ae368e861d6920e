"""MUNGE credentials as proof of who is asking: `Authorization: MUNGE <credential>`.

On a Slurm cluster every host shares a MUNGE key, so a researcher's `munge -n` on a login
node proves their uid to the monitor host's munged without a password or a token file.
The credential is decoded by `unmunge` (core.unmunge), which refuses an expired, rewound or
replayed one as munged does; its uid is mapped to a user name on the monitor host (the name
service: /etc/passwd, sssd, LDAP), and that name must be an active account of the monitor,
exactly, as a login's must. The request then has that user's visibility, as a session or an
API token would give. Whoever is root on a host with the key can encode any uid: MUNGE
trusts every such host, and so does the monitor that takes it. A credential of uid 0 itself
is refused: root's plain `munge -n` on any node would otherwise be the monitor's `root`.

Every refusal is a Refusal in one line: 403 for the credential (malformed, refused by munged,
no account), 503 when this host cannot decode now, 403 when MUNGE is not configured. The
credential is never logged, stored, or put in a message.
"""

from __future__ import annotations

import logging
import pwd
import re
from collections.abc import Mapping
from typing import Any, Callable, Optional

from django.contrib.auth import get_user_model

from clusterwatch.monitor.core import unmunge
from clusterwatch.monitor.core.munge_settings import munge_settings
from clusterwatch.monitor.core.refusals import Refusal
from clusterwatch.monitor.core.secrets import SettingError

log = logging.getLogger(__name__)

SCHEME = "munge"
NOT_CONFIGURED = ("MUNGE authentication is not configured on this monitor; send "
                  "Authorization: Bearer <token> (clusterwatch monitor create_usage_token)")
MISCONFIGURED = "MUNGE authentication is misconfigured on this monitor (its log says why)"
# A credential of `munge -n` is about 130 characters; one with room for a payload is longer.
MOST_CHARACTERS = 1024
# MUNGE's armor: the prefix, base64, the suffix.
CREDENTIAL_RE = re.compile(r"MUNGE:[A-Za-z0-9+/]+={0,2}:")

NameOf = Callable[[int], Optional[str]]


def scheme_of(value: Optional[str]) -> Optional[str]:
    """The scheme of an Authorization header value, in lower case; None without a header."""
    if value is None:
        return None
    return value.strip().partition(" ")[0].lower()


def sends_munge(value: Optional[str]) -> bool:
    """Whether the header value names the MUNGE scheme (any case), whatever follows."""
    return scheme_of(value) == SCHEME


def authenticate(value: str, environ: Mapping[str, str], *,
                 name_of: Optional[NameOf] = None) -> Any:
    """The active user whose uid the credential in the header `value` proves, or a Refusal.
    `name_of` maps a uid to a user name (default: the name service of this host)."""
    try:
        settings = munge_settings(environ)
    except SettingError as exc:
        log.error("MUNGE authentication: %s", exc)
        raise Refusal(503, MISCONFIGURED) from None
    if settings is None:
        raise Refusal(403, NOT_CONFIGURED)
    credential = _credential(value)
    try:
        decoded = unmunge.decode(credential, program=settings.program, socket=settings.socket,
                                 timeout_s=settings.timeout_s)
    except unmunge.CredentialRefused as exc:
        log.info("MUNGE authentication: %s", exc)
        raise Refusal(403, str(exc)) from None
    except unmunge.MungeUnavailable as exc:
        log.warning("MUNGE authentication unavailable: %s", exc)
        raise Refusal(503, f"MUNGE credentials cannot be checked now: {exc}") from None
    return _user_of(decoded.uid, name_of or account_name)


def account_name(uid: int) -> Optional[str]:
    """The user name of `uid` in this host's name service; None for a uid it does not know."""
    try:
        return pwd.getpwuid(uid).pw_name
    except (KeyError, OverflowError):
        return None


def _credential(value: str) -> str:
    credential = value.strip().partition(" ")[2].strip()
    if len(credential) > MOST_CHARACTERS:
        raise Refusal(403, f"MUNGE credential refused: longer than {MOST_CHARACTERS} "
                           "characters (make it with munge -n)")
    if not CREDENTIAL_RE.fullmatch(credential):
        raise Refusal(403, "MUNGE credential refused: not a MUNGE credential (send "
                           "Authorization: MUNGE followed by the output of munge -n)")
    return credential


def _user_of(uid: int, name_of: NameOf) -> Any:
    if uid == 0:
        # Root on every host with the key makes one with a plain `munge -n`; an account named
        # root here (createsuperuser's, often staff) must not open to all of them.
        raise Refusal(403, "MUNGE credential refused: uid 0 (root) proves no user of this "
                           "monitor; run clusterwatch usage as yourself")
    name = name_of(uid)
    if not name:
        raise Refusal(403, f"MUNGE credential refused: uid {uid} has no user name on this "
                           "monitor's host")
    model = get_user_model()
    user = model.objects.filter(**{model.USERNAME_FIELD: name}).first()
    # Exact: the database's equality is case-sensitive on SQLite and PostgreSQL, and the name
    # is compared again here so a collation that is not cannot open another account.
    if user is None or user.get_username() != name or not user.is_active:
        raise Refusal(403, f"MUNGE credential refused: {name!r} (uid {uid}) is no active "
                           "account of this monitor (an LDAP user is one once they have "
                           "logged in)")
    return user
