"""A job's usage report as a PDF, with reportlab (no TeX): the summary table, the memory kinds
explained, the warnings with their figures and advice, the notes, the CPU pie and every plot
of a measured metric.

Built with reportlab's `invariant` mode (fixed creation date and document id), so the same
document and series give the same bytes: the render cache can keep it. Every text from the
data is escaped before reportlab's paragraph markup sees it (a job named `<b>` or `a & b`
prints as typed).
"""

from __future__ import annotations

import io
from typing import Any, Optional
from xml.sax.saxutils import escape

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from PIL import Image as PILImage
from reportlab import rl_config
from reportlab.lib import colors
from reportlab.lib.pagesizes import A4
from reportlab.lib.styles import ParagraphStyle, getSampleStyleSheet
from reportlab.lib.units import cm
from reportlab.lib.utils import ImageReader
from reportlab.pdfgen.canvas import Canvas
from reportlab.platypus import (
    KeepTogether,
    Paragraph,
    SimpleDocTemplate,
    Spacer,
    Table,
    TableStyle,
)
from reportlab.platypus.flowables import Flowable

from clusterwatch.monitor.usage.analysis.summary_json import UsageDocument
from clusterwatch.monitor.usage.metrics.series import JobSeries
from clusterwatch.monitor.usage.rendering.figures_text import (
    figure_lines,
    moment_text,
    warning_title,
)
from clusterwatch.monitor.usage.rendering.plots import measured_figures, pie_figure, unplotted
from clusterwatch.monitor.usage.rendering.shown_text import shown
from clusterwatch.monitor.usage.rendering.summary_rows import memory_sentence, summary_rows

MARGIN = 2 * cm
WIDTH = A4[0] - 2 * MARGIN
PLOT_DPI = 110  # sharp enough on paper at 17 cm wide, small enough to build in time
# Images go into the PDF as binary Flate streams, not also ASCII85-encoded: without
# reportlab's C accelerator that encoding is pure Python and took a quarter of a week-long
# job's PDF (0.5 s). Binary streams are what every PDF reader expects.
rl_config.useA85 = 0
_STYLES = getSampleStyleSheet()
_SMALL = ParagraphStyle("small", parent=_STYLES["BodyText"], fontSize=8, leading=10)
_CELL = ParagraphStyle("cell", parent=_STYLES["BodyText"], fontSize=9, leading=11)


def render_pdf(document: UsageDocument, series: Optional[JobSeries],
               series_note: Optional[str] = None) -> bytes:
    buffer = io.BytesIO()
    title = f"Usage report of job {document['jobid']}"
    doc = SimpleDocTemplate(buffer, pagesize=A4, leftMargin=MARGIN, rightMargin=MARGIN,
                            topMargin=MARGIN, bottomMargin=MARGIN, title=title,
                            author="clusterwatch", subject=_who(document), invariant=1)

    def footer(canvas: Canvas, _doc: Any) -> None:
        canvas.setFont("Helvetica", 8)
        canvas.drawString(MARGIN, MARGIN / 2, f"{title}, page {canvas.getPageNumber()}")

    doc.build(_story(document, series, series_note), onFirstPage=footer, onLaterPages=footer)
    return buffer.getvalue()


def _story(document: UsageDocument, series: Optional[JobSeries],
           series_note: Optional[str]) -> list[Flowable]:
    name = shown(document["name"])  # capped: a 100,000-character name took 9 s to lay out
    heading = f"Job {document['jobid']}" + (f": {name}" if name else "")
    story: list[Flowable] = [Paragraph(_text(heading), _STYLES["Title"]),
                             Paragraph(_text(_who(document)), _STYLES["BodyText"]),
                             Paragraph(_text(_when(document)), _STYLES["BodyText"]),
                             Spacer(1, 0.3 * cm), _summary_table(document), Spacer(1, 0.3 * cm),
                             Paragraph(_text(memory_sentence(document)), _SMALL)]
    story += _warnings(document)
    if document["notes"]:
        story.append(Paragraph("Notes", _STYLES["Heading2"]))
        story += [Paragraph(_text(note), _STYLES["BodyText"], bulletText="-")
                  for note in document["notes"]]
    story.append(KeepTogether([Paragraph("CPU time: user vs system", _STYLES["Heading2"]),
                               _Picture(pie_figure(document), WIDTH * 0.6)]))
    heading = Paragraph("Over the job's life", _STYLES["Heading2"])
    why = unplotted(document, series, series_note)
    figures = measured_figures(document, series) if series is not None and why is None else []
    if not figures:
        why = why or "no metric was measured"
        return [*story, heading, Paragraph(_text(f"No plots: {why}."), _STYLES["BodyText"])]
    images = [_Picture(figure, WIDTH) for figure in figures]
    # The heading stays with the first plot instead of ending a page alone.
    return [*story, KeepTogether([heading, images[0]]), *images[1:]]


def _summary_table(document: UsageDocument) -> Table:
    rows = [["", "Allocated", "Used", "Efficiency"]]
    rows += [[row.resource, row.allocated, row.used, row.efficiency]
             for row in summary_rows(document)]
    cells = [[Paragraph(_text(cell), _CELL) for cell in row] for row in rows]
    table = Table(cells, colWidths=[2.2 * cm, 3.8 * cm, 7.2 * cm, WIDTH - 13.2 * cm])
    table.setStyle(TableStyle([
        ("BACKGROUND", (0, 0), (-1, 0), colors.HexColor("#e8ecf4")),
        ("GRID", (0, 0), (-1, -1), 0.4, colors.HexColor("#9aa4b8")),
        ("VALIGN", (0, 0), (-1, -1), "TOP"),
    ]))
    return table


def _warnings(document: UsageDocument) -> list[Flowable]:
    found = document["warnings"]
    if not found:
        return [Paragraph("Warnings", _STYLES["Heading2"]),
                Paragraph("None: nothing in this job's figures calls for a change.",
                          _STYLES["BodyText"])]
    story: list[Flowable] = [Paragraph(f"Warnings ({len(found)})", _STYLES["Heading2"])]
    for warning in found:
        story.append(KeepTogether([
            Paragraph(f"<b>{_text(warning_title(warning['code']))}</b> "
                      f"({_text(warning['code'])}): {_text(warning['message'])}",
                      _STYLES["BodyText"]),
            Paragraph(f"What to change: {_text(warning['advice'])}", _STYLES["BodyText"]),
            Paragraph("Figures: " + "; ".join(
                f"{_text(label)}: {_text(value)}"
                for label, value in figure_lines(warning["figures"])), _SMALL),
            Spacer(1, 0.2 * cm)]))
    return story


class _Picture(Flowable):
    """A drawn figure, placed at a given width."""

    def __init__(self, figure: Figure, width: float) -> None:
        super().__init__()
        # The drawn pixels go to reportlab as they are: a PNG in between would be
        # compressed only to be decompressed again.
        figure.set_dpi(PLOT_DPI)
        canvas = FigureCanvasAgg(figure)
        canvas.draw()  # type: ignore[no-untyped-call]
        pixels = PILImage.frombuffer(
            "RGBA", canvas.get_width_height(),
            canvas.buffer_rgba(),  # type: ignore[no-untyped-call]
            "raw", "RGBA", 0, 1).convert("RGB")
        self.image = ImageReader(pixels)
        inches = figure.get_size_inches()
        self.width, self.height = width, width * inches[1] / inches[0]

    def wrap(self, _available_width: float, _available_height: float) -> tuple[float, float]:
        return self.width, self.height

    def draw(self) -> None:
        self.canv.drawImage(self.image, 0, 0, self.width, self.height)


def _who(document: UsageDocument) -> str:
    return (f"user {shown(document['user'])}, account {shown(document['account'])}, "
            f"partition {shown(document['partition'])}")


def _when(document: UsageDocument) -> str:
    state = shown(document["state"]) + (" (still running)" if document["running"] else "")
    start = moment_text(document["start"], "not started")
    end = moment_text(document["end"], "not ended")
    return f"State {state}; from {start} to {end}; {document['nodes']} node(s)."


def _text(value: str) -> str:
    """Data as text: reportlab's paragraphs read markup, so <, > and & are escaped."""
    return escape(value)
