"""Who receives a job's end-of-job email, and how they are greeted.

The address, first found wins: the monitor account's email (LDAP fills it at login from the
directory's `mail`), else user@CLUSTERWATCH_EMAIL_DOMAIN, else the address Slurm handed to
MailProg (`--mail-user`; Slurm's default is the bare user name, which is no address). The
monitor's user name is the scheduler's user name (docs/usage.md, "Access").
"""

from __future__ import annotations

from typing import Optional

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.validators import validate_email

from clusterwatch.monitor.usage.mail.settings import MailSettings
from clusterwatch.monitor.usage.rendering.shown_text import one_line


def recipient_for(user: str, mail: MailSettings, slurm_address: str = "") -> Optional[str]:
    """The address to write to, or None when none is known."""
    account = _account(user)
    candidates = [
        getattr(account, "email", "") if account is not None else "",
        f"{user}@{mail.domain}" if mail.domain and user else "",
        slurm_address.strip(),
    ]
    for candidate in candidates:
        if candidate and _is_address(candidate):
            return candidate
    return None


def greeting_name(user: str) -> str:
    """The account's first name when the directory gave one, else the user name; one line."""
    account = _account(user)
    first = str(getattr(account, "first_name", "") or "") if account is not None else ""
    return one_line(first or user, 60)


def _account(user: str) -> Optional[object]:
    if not user:
        return None
    model = get_user_model()
    found: Optional[object] = model.objects.filter(
        **{model.USERNAME_FIELD: user, "is_active": True}).first()
    return found


def _is_address(text: str) -> bool:
    if "\n" in text or "\r" in text or "," in text:
        return False
    try:
        validate_email(text)
    except ValidationError:
        return False
    return True
