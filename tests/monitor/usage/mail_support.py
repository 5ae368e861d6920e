"""The end-of-job email's test helpers: a real SMTP server (aiosmtpd on 127.0.0.1) and the
monitor's email settings pointed at it, over the usage site (fake sacct, loopback
Prometheus); the `smtp` and `mail_site` fixtures are in conftest.py. Under CI=true a missing
aiosmtpd fails the test (tests/components.py)."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from email.message import EmailMessage
from pathlib import Path
from typing import Any, Optional

from clusterwatch.loopback.services import MissingComponent
from clusterwatch.loopback.smtp import SmtpServer
from clusterwatch.monitor.usage.config import get_config
from clusterwatch.monitor.usage.mail.delivery import Sender
from clusterwatch.monitor.usage.mail.settings import MailSettings
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


def sender(mail: Optional[MailSettings] = None, *, dry_run: bool = False) -> Sender:
    """The usage reports' mail sender with these settings (default: mail_settings())."""
    return Sender(mail or mail_settings(), get_config(), "", dry_run)


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
