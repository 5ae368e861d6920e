"""The monthly account email: one account's month (accounts_source.month_reports, the figures
of `usage_monthly` and of the account page) to one of its coordinators, as a text part and
an HTML part (inline CSS, no image), with links to the account page and the wasteful jobs.

Its Message-ID is made from the month, the account, the coordinator and the outbox row's
creation time, so a copy sent again after a crash between the SMTP answer and the row's
update is recognisably the same message (as the end-of-job email's).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from html import escape
from typing import Any, Optional
from urllib.parse import quote

from django.core.mail import EmailMultiAlternatives

from clusterwatch.monitor.usage.analysis.accounts import AccountReport, Wasted
from clusterwatch.monitor.usage.mail.content import MailContent
from clusterwatch.monitor.usage.models import MonthlyMail
from clusterwatch.monitor.usage.rendering.account_rows import HEADINGS, hours, month_row
from clusterwatch.monitor.usage.rendering.shown_text import one_line
from clusterwatch.monitor.usage.rendering.summary_rows import percent

_TABLE = "border-collapse:collapse;margin:4px 0 8px;font-size:14px"
_CELL = "border:1px solid #d0d4da;padding:5px 9px;text-align:right"
_H2 = "font-size:17px;margin:22px 0 8px;color:#1f2a37"
_SMALL = "font-size:12px;color:#5b6470"
_ID_SAFE = re.compile(r"[^A-Za-z0-9._-]")


@dataclass(frozen=True)
class MonthlyLinks:
    account_page: str
    base: str

    def job(self, jobid: str) -> str:
        return f"{self.base}/usage/jobs/{quote(jobid)}/"


def links(base_url: str, report: AccountReport) -> MonthlyLinks:
    base = base_url.rstrip("/")
    return MonthlyLinks(
        f"{base}/usage/accounts/{quote(report.account)}/?month={report.figures.month}", base)


def subject_of(report: AccountReport) -> str:
    """`Account atlas in 2026-11: 412 jobs, 10,240.0 CPU-hours at 48.0 % CPU efficiency`."""
    figures = report.figures
    return (f"Account {one_line(report.account, 64)} in {figures.month}: {figures.jobs:,} "
            f"job{'s' if figures.jobs != 1 else ''}, {hours(figures.cpu_hours)} CPU-hours at "
            f"{percent(figures.cpu_efficiency)} CPU efficiency")


def compose(report: AccountReport, *, greeting: str, base_url: str) -> MailContent:
    body = html_body(report, greeting=greeting, base_url=base_url)
    html = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{escape(subject_of(report))}</title></head>\n"
            "<body style=\"margin:0;padding:16px;color:#1c2128;"
            f"font:15px/1.45 Arial,Helvetica,sans-serif\">\n{body}</body></html>\n")
    return MailContent(subject=subject_of(report),
                       text=text_part(report, greeting=greeting, base_url=base_url),
                       html=html, html_body=body)


def text_part(report: AccountReport, *, greeting: str, base_url: str) -> str:
    found = links(base_url, report)
    rows = [HEADINGS, *(month_row(f).cells() for f in (report.figures, *report.earlier))]
    widths = [max(len(row[column]) for row in rows) for column in range(len(HEADINGS))]
    lines = [f"Hello {one_line(greeting, 60)},", "",
             f"This is how the jobs of Slurm account {one_line(report.account, 64)} used what "
             f"they were given in {report.figures.month} (UTC), with the three months before, "
             "from the summaries kept when the jobs ended.", ""]
    lines += ["  " + "  ".join(cell.rjust(width) if column else cell.ljust(width)
                               for column, (cell, width) in enumerate(zip(row, widths)))
              for row in rows]
    lines += ["", "Efficiencies are means weighted by each job's CPU-hours; wasted CPU-hours "
              "are CPU-hours x (1 - CPU efficiency)."]
    for title, items, url in (("jobs", report.wasteful_jobs, found.job),
                              ("users", report.wasteful_users, None)):
        lines += ["", f"The most wasteful {title}:"]
        lines += [f"  {_wasted(item)}" + (f"  {url(item.name)}" if url else "")
                  for item in items] or ["  none: no measured job wasted CPU time"]
    lines += ["", "The account's page, with the months before and after:",
              f"  {found.account_page}", "", "-- ",
              "clusterwatch usage reports: sent once a month to the account's coordinators."]
    return "\n".join(lines) + "\n"


def html_body(report: AccountReport, *, greeting: str, base_url: str) -> str:
    found = links(base_url, report)
    head = "".join(f"<th style=\"{_CELL}\">{escape(title)}</th>" for title in HEADINGS)
    rows = "".join("<tr>" + "".join(f"<td style=\"{_CELL}\">{escape(cell)}</td>"
                                    for cell in month_row(figures).cells()) + "</tr>"
                   for figures in (report.figures, *report.earlier))
    parts = [
        "<div style=\"max-width:720px\">",
        f"<p>Hello {escape(one_line(greeting, 60))},</p>",
        f"<p>This is how the jobs of Slurm account <b>{escape(one_line(report.account, 64))}"
        f"</b> used what they were given in {escape(report.figures.month)} (UTC), with the "
        "three months before, from the summaries kept when the jobs ended.</p>",
        f"<table style=\"{_TABLE}\"><tr>{head}</tr>{rows}</table>",
        f"<p style=\"{_SMALL}\">Efficiencies are means weighted by each job's CPU-hours; "
        "wasted CPU-hours are CPU-hours &times; (1 &minus; CPU efficiency).</p>",
        f"<h2 style=\"{_H2}\">The most wasteful jobs</h2>",
        _list(report.wasteful_jobs, found.job),
        f"<h2 style=\"{_H2}\">The most wasteful users</h2>",
        _list(report.wasteful_users, None),
        f"<p><a href=\"{escape(found.account_page)}\">The account's page</a>, with the months "
        "before and after.</p>",
        f"<p style=\"{_SMALL}\">clusterwatch usage reports: sent once a month to the "
        "account's coordinators.</p>",
        "</div>\n",
    ]
    return "\n".join(parts)


def build_message(content: MailContent, row: MonthlyMail, *, sender: str,
                  connection: Optional[Any] = None) -> EmailMultiAlternatives:
    domain = sender.rpartition("@")[2] or "localhost"
    who = _ID_SAFE.sub("_", f"{row.month}.{row.account}.{row.user}")
    message = EmailMultiAlternatives(
        subject=content.subject, body=content.text, from_email=sender, to=[row.recipient],
        connection=connection,
        headers={"Message-ID": f"<usage-monthly.{who}.{int(row.created_at.timestamp())}"
                               f"@{domain}>",
                 "Auto-Submitted": "auto-generated",  # RFC 3834: no vacation replies
                 "X-Clusterwatch-Account": _ID_SAFE.sub("_", row.account)})
    message.attach_alternative(content.html, "text/html")
    return message


def _wasted(item: Wasted) -> str:
    return (f"{one_line(item.name, 64)}: {hours(item.wasted_cpu_hours)} of "
            f"{hours(item.cpu_hours)} CPU-hours wasted")


def _list(items: list[Wasted], url: Optional[Any]) -> str:
    if not items:
        return "<p>None: no measured job wasted CPU time.</p>"
    entries = []
    for item in items:
        words = escape(_wasted(item))
        if url is not None:
            name = escape(one_line(item.name, 64))
            words = words.replace(name, f"<a href=\"{escape(url(item.name))}\">{name}</a>", 1)
        entries.append(f"<li>{words}</li>")
    return f"<ul style=\"margin:4px 0;padding-left:22px\">{''.join(entries)}</ul>"
