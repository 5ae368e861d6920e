"""The PDF read back the way a person would meet it: poppler turns it into PNG pages (each
must have something on it) and into text (the table's figures and the warnings must be
there). A missing poppler-utils fails under CI=true (tests/components.py)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Optional

import pytest
from PIL import Image

from clusterwatch.monitor.usage.analysis.summary_json import UsageDocument
from clusterwatch.monitor.usage.metrics.series import JobSeries
from clusterwatch.monitor.usage.rendering.pdf import render_pdf
from clusterwatch.monitor.usage.rendering.plot_metrics import measured_metrics
from tests.components import need_binary
from tests.monitor.usage.render_support import document_of
from tests.monitor.usage.usage_support import GiB, MiB, good_series, one, record

GONE = "the series are gone: Prometheus' retention has dropped them"


def _wasteful() -> tuple[UsageDocument, JobSeries]:
    """Four CPUs of which two are busy, 8 GiB asked and 200 MiB used: two warnings."""
    job = record(cpus_allocated=4, memory_requested_bytes=8 * GiB, name="md <run> & co $HOME")
    series = good_series(memory_rss_bytes=[one(lambda t: 200 * MiB)],
                         read_bytes=[one(lambda t: 4096 * t)])
    return document_of(job, series), series


@pytest.fixture(scope="module")
def wasteful() -> tuple[UsageDocument, JobSeries, bytes]:
    """The report drawn once for the tests that only read it."""
    document, series = _wasteful()
    return document, series, render_pdf(document, series)


def _pages(pdf: bytes, tmp_path: Path) -> list[Image.Image]:
    source = tmp_path / "report.pdf"
    source.write_bytes(pdf)
    subprocess.run([need_binary("pdftoppm"), "-r", "40", "-png", str(source),
                    str(tmp_path / "page")], check=True, timeout=60)
    return [Image.open(path).convert("RGB") for path in sorted(tmp_path.glob("page-*.png"))]


def _text(pdf: bytes, tmp_path: Path) -> str:
    source = tmp_path / "text.pdf"
    source.write_bytes(pdf)
    done = subprocess.run([need_binary("pdftotext"), "-layout", str(source), "-"],
                          capture_output=True, text=True, check=True, timeout=60)
    return re.sub(r"[ \t]+", " ", done.stdout)


def _info(pdf: bytes, tmp_path: Path) -> dict[str, str]:
    source = tmp_path / "info.pdf"
    source.write_bytes(pdf)
    done = subprocess.run([need_binary("pdfinfo"), str(source)], capture_output=True,
                          text=True, check=True, timeout=60)
    return dict(line.split(":", 1) for line in done.stdout.splitlines() if ":" in line)


def _inked(page: Image.Image) -> float:
    """The share of the page that is not white."""
    histogram = page.convert("L").histogram()
    return 1 - sum(histogram[245:]) / (page.width * page.height)


def _coloured(page: Image.Image) -> int:
    """Pixels that are neither white, black nor grey (saturation 40 of 255 or more): the
    curves of a plot, the pie."""
    return sum(page.convert("HSV").split()[1].histogram()[40:])


def _images(pdf: bytes) -> int:
    return len(re.findall(rb"/Subtype /Image", pdf))


def test_every_page_has_content_and_the_page_count_is_the_documents(
        tmp_path: Path, wasteful: tuple[UsageDocument, JobSeries, bytes]) -> None:
    pdf = wasteful[2]
    assert pdf.startswith(b"%PDF-")
    pages = _pages(pdf, tmp_path)
    declared = int(_info(pdf, tmp_path)["Pages"])
    assert len(pages) == declared == len(re.findall(rb"/Type /Page\b(?!s)", pdf)) >= 3
    for number, page in enumerate(pages, 1):
        assert _inked(page) > 0.01, f"page {number} is blank"


def test_it_holds_the_pie_and_every_measured_plot(
        tmp_path: Path, wasteful: tuple[UsageDocument, JobSeries, bytes]) -> None:
    _document, series, pdf = wasteful
    measured = measured_metrics(series)
    assert len(measured) >= 7
    assert _images(pdf) == 1 + len(measured)
    # After the first page, each page holds plots: curves in colour.
    assert all(_coloured(page) > 100 for page in _pages(pdf, tmp_path)[1:])


def test_its_text_has_the_table_and_the_warnings(
        tmp_path: Path, wasteful: tuple[UsageDocument, JobSeries, bytes]) -> None:
    document, _series, pdf = wasteful
    text = _text(pdf, tmp_path)
    assert "Job 4242: md <run> & co $HOME" in text  # the name as typed, markup escaped
    assert "user alice, account physics, partition cpu" in text
    assert "Allocated Used Efficiency" in text
    assert re.search(r"CPU 4 CPUs 1\.95 CPUs on average \(7,020 CPU-seconds\) 48\.8 %", text)
    assert re.search(r"Memory 8\.0 GiB 200\.0 MiB at peak \(RSS \+ shared memory\) 2\.4 %", text)
    assert re.search(r"GPUs 0 none asked", text)
    assert re.search(r"Time limit 2 ?h 1 ?h 50\.0 % of the limit", text)  # poppler may join "1 h"
    assert "Warnings (2)" in text
    flat = " ".join(text.split())
    for warning in document["warnings"]:
        assert f"({warning['code']})" in flat
        assert " ".join(warning["message"].split()) in flat
        assert " ".join(warning["advice"].split()) in flat
    assert "CPU efficiency (CPU time used / allocated): 48.8 %" in flat
    assert "page cache (file data the kernel keeps" in flat


def test_a_job_without_warnings_says_so(tmp_path: Path) -> None:
    series = good_series()
    text = _text(render_pdf(document_of(record(), series), series), tmp_path)
    assert "Warnings\n" in text and "None: nothing in this job's figures calls" in text


def test_without_series_it_says_why_and_draws_no_plot(tmp_path: Path) -> None:
    document = document_of(record(), None)
    pdf = render_pdf(document, None, GONE)
    text = " ".join(_text(pdf, tmp_path).split())
    assert f"No plots: {GONE}." in text
    assert "accounting alone" in text  # the document's own note
    assert _images(pdf) == 1  # the pie, from accounting's user and system times
    assert all(_inked(page) > 0.01 for page in _pages(pdf, tmp_path))


@pytest.mark.parametrize("note", [None, "too few scrapes"])
def test_too_few_scrapes_gives_no_plots(tmp_path: Path, note: Optional[str]) -> None:
    series = good_series()
    document = document_of(record(), series, measured=False, samples=3)
    pdf = render_pdf(document, series, note)
    assert _images(pdf) == 1
    text = " ".join(_text(pdf, tmp_path).split())
    assert f"No plots: {note or 'too few scrapes: the exporter saw this job 3 times'}" in text


def test_its_title_is_set_and_the_same_report_gives_the_same_bytes(
        tmp_path: Path, wasteful: tuple[UsageDocument, JobSeries, bytes]) -> None:
    document, series, pdf = wasteful
    info = _info(pdf, tmp_path)
    assert info["Title"].strip() == "Usage report of job 4242"
    assert info["Author"].strip() == "clusterwatch"
    assert render_pdf(document, series) == pdf
    changed = document_of(record(cpus_allocated=4, memory_requested_bytes=8 * GiB,
                                 name="another name"), series)
    assert render_pdf(changed, series) != pdf
