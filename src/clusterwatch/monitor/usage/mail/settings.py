"""The end-of-job email's settings (CLUSTERWATCH_EMAIL_*), read with the monitor's settings.

`from_environ(os.environ)` gives Django's SMTP settings (EMAIL_HOST, EMAIL_PORT,
EMAIL_USE_TLS, EMAIL_USE_SSL, EMAIL_HOST_USER, EMAIL_TIMEOUT, DEFAULT_FROM_EMAIL) and
USAGE_MAIL, a MailSettings with what Django has no name for; settings.py merges them in.

CLUSTERWATCH_EMAIL_HOST           SMTP server (default localhost)
CLUSTERWATCH_EMAIL_PORT           its port (default 25; 465 with USE_SSL, 587 with USE_TLS)
CLUSTERWATCH_EMAIL_USE_TLS        1/true: STARTTLS on a plain connection
CLUSTERWATCH_EMAIL_USE_SSL        1/true: TLS from the first byte (not with USE_TLS)
CLUSTERWATCH_EMAIL_USER           SMTP login; its password from a file, never the environment:
CLUSTERWATCH_EMAIL_PASSWORD_FILE  mode 600 (default: the systemd credential email-password)
CLUSTERWATCH_EMAIL_FROM           the sender address (needed to send)
CLUSTERWATCH_EMAIL_TIMEOUT        seconds for one SMTP exchange step (default 10)
CLUSTERWATCH_EMAIL_BASE_URL       the monitor's public URL, for the email's links (needed)
CLUSTERWATCH_EMAIL_DOMAIN         a user without an email address gets user@DOMAIN
CLUSTERWATCH_EMAIL_JOBS           which ended jobs the poller mails: all, warnings (default:
                                  only jobs with a warning) or none (only MailProg's)

Every malformed value raises a one-line SettingError that starts with the variable's name and
holds no secret (exit 78). The password is read when a command is about to send, so the web
app, which never sends, needs no access to it.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional

from clusterwatch.monitor.core import prefixed_settings
from clusterwatch.monitor.core.secrets import (
    CREDENTIALS_DIRECTORY,
    SettingError,
    read_secret,
    secret_file,
)

PREFIX = "CLUSTERWATCH_EMAIL_"
CREDENTIAL = "email-password"  # the systemd credential read when no file is named
JOB_CHOICES = ("all", "warnings", "none")
DEFAULT_TIMEOUT_S = 10.0
MAX_TIMEOUT_S = 120.0  # slurmctld gives MailProg 120 s in all
KNOWN = frozenset(PREFIX + name for name in (
    "HOST", "PORT", "USE_TLS", "USE_SSL", "USER", "PASSWORD_FILE", "FROM", "TIMEOUT",
    "BASE_URL", "DOMAIN", "JOBS"))
_HOST = re.compile(r"[A-Za-z0-9.-]{1,253}|\[[0-9A-Fa-f:.]{2,45}\]")
_DOMAIN = re.compile(r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)*"
                     r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?")
_ADDRESS = re.compile(r"[^@\s<>\"',;]{1,64}@" + _DOMAIN.pattern)


@dataclass(frozen=True)
class MailSettings:
    sender: str  # "" when CLUSTERWATCH_EMAIL_FROM is not set
    base_url: str  # "" when not set; no trailing slash
    domain: str
    jobs: str  # one of JOB_CHOICES
    user: str
    password_file: str  # "" when not set
    credentials_dir: str  # $CREDENTIALS_DIRECTORY, where the credential may be


def from_environ(environ: Mapping[str, str]) -> dict[str, Any]:
    # A typo must not silently send in clear or to nobody; a password variable is refused.
    values = prefixed_settings.family(environ, PREFIX, KNOWN, password=PREFIX + "PASSWORD",
                                      credential=CREDENTIAL, topic="email")
    use_tls = prefixed_settings.flag(values, PREFIX + "USE_TLS")
    use_ssl = prefixed_settings.flag(values, PREFIX + "USE_SSL")
    if use_tls and use_ssl:
        raise SettingError(f"{PREFIX}USE_TLS and {PREFIX}USE_SSL exclude each other: USE_SSL for "
                         "TLS from the start (port 465), USE_TLS for STARTTLS (port 587)")
    sender = values.get(PREFIX + "FROM", "")
    if sender and not _ADDRESS.fullmatch(sender):
        raise SettingError(f"{PREFIX}FROM must be an address like clusterwatch@example.org, "
                         f"not {sender[:60]!r}")
    domain = values.get(PREFIX + "DOMAIN", "").lstrip("@")
    if domain and not _DOMAIN.fullmatch(domain):
        raise SettingError(f"{PREFIX}DOMAIN must be a domain like example.org, not {domain[:60]!r}")
    jobs = values.get(PREFIX + "JOBS", "warnings").lower()
    if jobs not in JOB_CHOICES:
        raise SettingError(f"{PREFIX}JOBS must be one of {', '.join(JOB_CHOICES)}, "
                         f"not {jobs[:40]!r}")
    settings: dict[str, Any] = {
        "EMAIL_HOST": _host(values.get(PREFIX + "HOST", "localhost")),
        "EMAIL_PORT": _port(values, 465 if use_ssl else 587 if use_tls else 25),
        "EMAIL_USE_TLS": use_tls,
        "EMAIL_USE_SSL": use_ssl,
        "EMAIL_HOST_USER": values.get(PREFIX + "USER", ""),
        "EMAIL_HOST_PASSWORD": "",  # read from its file only when a command sends
        "EMAIL_TIMEOUT": prefixed_settings.seconds(values, PREFIX + "TIMEOUT", DEFAULT_TIMEOUT_S,
                                                 most=MAX_TIMEOUT_S),
        "USAGE_MAIL": MailSettings(
            sender=sender, base_url=_base_url(values.get(PREFIX + "BASE_URL", "")),
            domain=domain, jobs=jobs, user=values.get(PREFIX + "USER", ""),
            password_file=values.get(PREFIX + "PASSWORD_FILE", ""),
            credentials_dir=environ.get(CREDENTIALS_DIRECTORY, "").strip()),
    }
    if sender:
        settings["DEFAULT_FROM_EMAIL"] = settings["SERVER_EMAIL"] = sender
    return settings


def _host(text: str) -> str:
    if not _HOST.fullmatch(text):
        raise SettingError(f"{PREFIX}HOST must be a host name or address, not {text[:60]!r}")
    return text.strip("[]")


def _port(values: Mapping[str, str], default: int) -> int:
    text = values.get(PREFIX + "PORT", "")
    if not text:
        return default
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise SettingError(f"{PREFIX}PORT must be a port number (1-65535), not {text[:40]!r}")
    return int(text)


def _base_url(text: str) -> str:
    if not text:
        return ""
    message = (f"{PREFIX}BASE_URL must be the monitor's public http(s) URL, like "
               "https://monitor.example.org, without a query")
    try:
        parts = urllib.parse.urlsplit(text)
        host = parts.hostname
    except ValueError:  # e.g. an unclosed [ or a bad port
        raise SettingError(message) from None
    if parts.scheme not in ("http", "https") or not host or parts.query or parts.fragment:
        raise SettingError(message)
    if parts.username or parts.password:
        # The links land in people's inboxes: never with credentials in them.
        raise SettingError(f"{PREFIX}BASE_URL must not hold a user name or password")
    return text.rstrip("/")


def settings_of(django_settings: Any) -> MailSettings:
    """The USAGE_MAIL of the running settings (defaults when settings.py did not merge them,
    e.g. a test settings module of its own)."""
    found: Optional[MailSettings] = getattr(django_settings, "USAGE_MAIL", None)
    return found if found is not None else from_environ({})["USAGE_MAIL"]


def require_sending(mail: MailSettings) -> None:
    """SettingError unless what every email needs is set: the sender and the links' base."""
    if not mail.sender:
        raise SettingError(f"{PREFIX}FROM is not set: the end-of-job email needs a sender "
                          "address")
    if not mail.base_url:
        raise SettingError(f"{PREFIX}BASE_URL is not set: the end-of-job email's links need "
                          "the monitor's public URL")


def smtp_password(mail: MailSettings) -> str:
    """The SMTP password ("" without a login): the file, else the systemd credential.
    SettingError (one line, never the password) when it cannot be read or is not private."""
    if not mail.user:
        if mail.password_file:
            raise SettingError(f"{PREFIX}PASSWORD_FILE is set but {PREFIX}USER is not: the "
                               "password is sent only with a login")
        return ""
    found = secret_file(mail.password_file, PREFIX + "PASSWORD_FILE", credential=CREDENTIAL,
                        credentials_dir=mail.credentials_dir)
    if found is None:
        raise SettingError(f"{PREFIX}USER is set but there is no password: name a mode-600 "
                           f"file in {PREFIX}PASSWORD_FILE or give the unit the systemd "
                           f"credential {CREDENTIAL}")
    return read_secret(found)
