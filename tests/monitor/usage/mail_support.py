"""The end-of-job email's test fixtures: a real SMTP server (aiosmtpd on 127.0.0.1) and the
monitor's email settings pointed at it, over the usage site (fake sacct, loopback
Prometheus). Under CI=true a missing aiosmtpd fails the test (tests/components.py)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest

from clusterwatch.loopback.services import MissingComponent
from clusterwatch.loopback.smtp import SmtpServer
from clusterwatch.monitor.usage.mail_settings import MailSettings
from tests.components import need_binary, unavailable
from tests.monitor.usage.site import UsageSite

SENDER = "clusterwatch@monitor.test"
BASE_URL = "https://monitor.test"
DOMAIN = "example.org"
SMTP_BACKEND = "django.core.mail.backends.smtp.EmailBackend"


@dataclass
class MailSite:
    site: UsageSite
    smtp: SmtpServer


def started(server: SmtpServer) -> SmtpServer:
    """`server` running; without aiosmtpd the test is unavailable (tests/components.py)."""
    try:
        server.__enter__()
    except MissingComponent as missing:
        unavailable(missing)
    return server


@pytest.fixture
def smtp() -> Iterator[SmtpServer]:
    server = started(SmtpServer())
    try:
        yield server
    finally:
        server.down()


@pytest.fixture
def mail_site(usage_site: UsageSite, smtp: SmtpServer, settings: Any) -> MailSite:
    """The email on, to the loopback SMTP server; every user is user@example.org."""
    settings.EMAIL_BACKEND = SMTP_BACKEND  # pytest-django puts the in-memory one there
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", smtp.port
    settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
    settings.EMAIL_HOST_USER, settings.EMAIL_TIMEOUT = "", 5.0
    settings.USAGE_MAIL = mail_settings()
    return MailSite(usage_site, smtp)


def mail_settings(**changes: str) -> MailSettings:
    values = {"sender": SENDER, "base_url": BASE_URL, "domain": DOMAIN, "jobs": "all",
              "user": "", "password_file": "", "credentials_dir": "", **changes}
    return MailSettings(**values)


def parts(message: EmailMessage) -> dict[str, Any]:
    """The text, the HTML and the attachments {name: bytes} of a received email."""
    text = message.get_body(preferencelist=("plain",))
    html = message.get_body(preferencelist=("html",))
    attachments = {part.get_filename(): part.get_payload(decode=True)
                   for part in message.iter_attachments()}
    return {"text": text.get_content() if text is not None else None,
            "html": html.get_content() if html is not None else None,
            "attachments": attachments}


def pdf_text(pdf: bytes, directory: Path) -> str:
    """What pdftotext (poppler-utils) reads from the PDF."""
    path = directory / "attached.pdf"
    path.write_bytes(pdf)
    done = subprocess.run([need_binary("pdftotext"), str(path), "-"], capture_output=True,
                          text=True, timeout=60, check=True)
    return done.stdout
