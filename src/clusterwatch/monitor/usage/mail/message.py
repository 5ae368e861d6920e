"""The end-of-job email as Django sends it: text and HTML parts, the PDF attached.

Its Message-ID is made from the job id and the outbox row's creation time, so a copy sent
again after a crash between the SMTP answer and the row's update carries the same id, and
mail systems that drop duplicates by Message-ID drop it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Optional

from django.core.mail import EmailMultiAlternatives

from clusterwatch.monitor.usage.analysis.summary_json import UsageDocument
from clusterwatch.monitor.usage.mail.content import MailContent, subject_of, text_part
from clusterwatch.monitor.usage.mail.html_part import html_body, html_part
from clusterwatch.monitor.usage.peer_ranks import PeerRanksDocument

PDF_TYPE = "application/pdf"


def compose(document: UsageDocument, *, greeting: str, base_url: str,
            ranks: Optional[PeerRanksDocument] = None) -> MailContent:
    """The email's parts; `ranks`: the job's peer ranks (peer_ranks.peer_ranks_of), shown
    in both parts when given."""
    return MailContent(
        subject=subject_of(document),
        text=text_part(document, greeting=greeting, base_url=base_url, ranks=ranks),
        html=html_part(document, greeting=greeting, base_url=base_url, ranks=ranks),
        html_body=html_body(document, greeting=greeting, base_url=base_url, ranks=ranks))


def attachment_name(jobid: str) -> str:
    return f"job-{jobid}-usage.pdf"


def build_message(content: MailContent, *, jobid: str, pdf: bytes, sender: str,
                  recipient: str, queued_at: datetime,
                  connection: Optional[Any] = None) -> EmailMultiAlternatives:
    domain = sender.rpartition("@")[2] or "localhost"
    message = EmailMultiAlternatives(
        subject=content.subject, body=content.text, from_email=sender, to=[recipient],
        connection=connection,
        headers={
            "Message-ID": f"<usage-{jobid}.{int(queued_at.timestamp())}@{domain}>",
            # RFC 3834: an automatic message; vacation responders must not answer it.
            "Auto-Submitted": "auto-generated",
            "X-Clusterwatch-Job": jobid,
        })
    message.attach_alternative(content.html, "text/html")
    message.attach(attachment_name(jobid), pdf, PDF_TYPE)
    return message


def describe(message: EmailMultiAlternatives) -> str:
    """What --dry-run prints: the headers, the text part, and each attachment's name and
    size (the HTML part and the PDF themselves are not printed)."""
    parsed = message.message()
    lines = [f"{name}: {parsed[name]}" for name in
             ("From", "To", "Subject", "Message-ID", "Auto-Submitted") if parsed[name]]
    lines += ["", message.body.rstrip("\n"), ""]
    lines += [f"[alternative part: {mimetype}, {len(body.encode('utf-8'))} bytes]"
              for body, mimetype in message.alternatives]
    for name, data, mimetype in message.attachments:
        size = len(data) if isinstance(data, (bytes, str)) else 0
        lines.append(f"[attachment: {name}, {mimetype}, {size} bytes]")
    return "\n".join(lines) + "\n"
