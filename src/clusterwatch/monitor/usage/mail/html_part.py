"""The end-of-job email's HTML part: the text part's content, laid out for mail readers.

Inline CSS only (mail readers drop <style> blocks and never fetch external assets), tables
for layout, no images and no script. Every value from the job or accounting is escaped.
"""

from __future__ import annotations

from html import escape
from typing import Optional

from clusterwatch.monitor.usage.analysis.summary_json import UsageDocument, WarningDocument
from clusterwatch.monitor.usage.mail.content import links, opening, peers_heading, subject_of
from clusterwatch.monitor.usage.peer_ranks import PeerRanksDocument, rank_lines
from clusterwatch.monitor.usage.rendering.figures_text import figure_lines, warning_title
from clusterwatch.monitor.usage.rendering.shown_text import one_line
from clusterwatch.monitor.usage.rendering.summary_rows import summary_rows

_BODY = ("margin:0;padding:16px;background:#ffffff;color:#1c2128;"
         "font:15px/1.45 Arial,Helvetica,sans-serif")
_H2 = "font-size:17px;margin:22px 0 8px;color:#1f2a37"
_TABLE = "border-collapse:collapse;margin:4px 0 8px;font-size:14px"
_TH = "border:1px solid #d0d4da;padding:5px 9px;text-align:left;background:#eef1f4"
_TD = "border:1px solid #d0d4da;padding:5px 9px;text-align:left;vertical-align:top"
_WARNING = "border-left:4px solid #b3261e;background:#fde7e6;padding:8px 12px;margin:10px 0"
_SMALL = "font-size:12px;color:#5b6470"
_BUTTON = ("display:inline-block;background:#1f2a37;color:#ffffff;text-decoration:none;"
           "padding:7px 14px;border-radius:4px;font-weight:bold")


def html_part(document: UsageDocument, *, greeting: str, base_url: str,
              ranks: Optional[PeerRanksDocument] = None) -> str:
    """The whole text/html part: a document around `html_body`."""
    body = html_body(document, greeting=greeting, base_url=base_url, ranks=ranks)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{escape(subject_of(document))}</title></head>\n"
            f"<body style=\"{_BODY}\">\n{body}</body></html>\n")


def html_body(document: UsageDocument, *, greeting: str, base_url: str,
              ranks: Optional[PeerRanksDocument] = None) -> str:
    found = links(base_url, document["jobid"])
    parts = [
        "<div style=\"max-width:680px\">",
        f"<p>Hello {escape(one_line(greeting, 60))},</p>",
        f"<p>{escape(opening(document))}</p>",
        f"<h2 style=\"{_H2}\">What it asked for and what it used</h2>",
        _summary_table(document),
        _peers(ranks),
        _warnings(document),
        _notes(document),
        f"<p style=\"margin:22px 0 6px\"><a href=\"{escape(found.job_page)}\" "
        f"style=\"{_BUTTON}\">The full report, with plots</a></p>",
        f"<p>The same report as a PDF is attached, and at "
        f"<a href=\"{escape(found.pdf)}\">{escape(found.pdf)}</a>.</p>",
        f"<p style=\"{_SMALL}\">clusterwatch usage reports: sent once, when the job ended.</p>",
        "</div>\n",
    ]
    return "\n".join(part for part in parts if part)


def _summary_table(document: UsageDocument) -> str:
    head = "".join(f"<th style=\"{_TH}\">{title}</th>"
                   for title in ("", "Asked for", "Used", "Efficiency"))
    rows = "".join(
        f"<tr><th style=\"{_TH}\">{escape(row.resource)}</th>"
        f"<td style=\"{_TD}\">{escape(row.allocated)}</td>"
        f"<td style=\"{_TD}\">{escape(row.used)}</td>"
        f"<td style=\"{_TD}\">{escape(row.efficiency)}</td></tr>"
        for row in summary_rows(document))
    return f"<table style=\"{_TABLE}\"><tr>{head}</tr>{rows}</table>"


def _peers(ranks: Optional[PeerRanksDocument]) -> str:
    if ranks is None:
        return ""
    rows = "".join(f"<tr><th style=\"{_TH}\">{escape(label)}</th>"
                   f"<td style=\"{_TD}\">{escape(text)}</td></tr>"
                   for label, text in rank_lines(ranks))
    return (f"<h2 style=\"{_H2}\">{escape(peers_heading(ranks))}</h2>"
            f"<table style=\"{_TABLE}\">{rows}</table>")


def _warnings(document: UsageDocument) -> str:
    found = document["warnings"]
    if not found:
        return (f"<h2 style=\"{_H2}\">Nothing to change</h2><p>No warning about this job's use "
                "of what it asked for.</p>")
    title = f"What to change next time ({len(found)} warning{'s' if len(found) != 1 else ''})"
    return f"<h2 style=\"{_H2}\">{title}</h2>" + "".join(_warning(w) for w in found)


def _warning(warning: WarningDocument) -> str:
    figures = "; ".join(f"{escape(label)}: {escape(value)}"
                        for label, value in figure_lines(warning["figures"]))
    return (f"<div style=\"{_WARNING}\">"
            f"<p style=\"margin:0 0 4px\"><b>{escape(warning_title(warning['code']))}</b>: "
            f"{escape(warning['message'])}</p>"
            f"<p style=\"margin:0 0 4px\"><b>What to change:</b> {escape(warning['advice'])}</p>"
            + (f"<p style=\"margin:0;{_SMALL}\">Figures: {figures}</p>" if figures else "")
            + "</div>")


def _notes(document: UsageDocument) -> str:
    if not document["notes"]:
        return ""
    items = "".join(f"<li>{escape(note)}</li>" for note in document["notes"])
    return (f"<h2 style=\"{_H2}\">Notes</h2>"
            f"<ul style=\"margin:4px 0;padding-left:22px\">{items}</ul>")
