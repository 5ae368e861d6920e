"""The outside probes of issue 19 replayed against the monitor under gunicorn, as they met
it: every date parameter of every usage and PanDA endpoint that declares one, with every
hostile value (`?until=9999-12-31` was a 500); a 100,000-character job name (its PDF took
29-31 s through gunicorn) and a name holding bidirectional controls (raw on the pages).
One monitor for the module; a staff member logged in through the login form."""

from __future__ import annotations

import json
import re
import subprocess
import urllib.parse
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from clusterwatch.monitor.usage.rendering.shown_text import MARKS_LIMIT, SHOWN_LIMIT
from tests.components import need_binary
from tests.monitor.usage.date_fuzz import DATED, TODAY, queries
from tests.monitor.usage.prometheus_range import RangePrometheus
from tests.monitor.usage.served_usage import Served, served_usage
from tests.monitor.usage.site import UsageSite

LONG = "x" * 100_000
BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
ZALGO = "a" + "\u0301" * 100_000 + "b"  # one letter under a tower of 100,000 accents


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, migrated_database: dict[str, str]
) -> Iterator[Served]:
    tmp_path = tmp_path_factory.mktemp("probes")
    now = datetime.now(timezone.utc).replace(microsecond=0)
    with RangePrometheus() as prometheus:
        site = UsageSite(tmp_path, prometheus)
        site.job("4242", start=now - timedelta(days=1))
        site.job("4243", start=now - timedelta(days=2), name=LONG)
        site.job("4244", start=now - timedelta(days=3), name=f"evil\u202egnp.exe{BIDI}tail")
        site.job("4245", start=now - timedelta(days=4), name=ZALGO, account=f"ph\u202eys{BIDI}")
        with served_usage(tmp_path, migrated_database, site) as served:
            yield served


def test_no_date_parameter_of_any_endpoint_is_a_500_under_gunicorn(served: Served) -> None:
    answers = 0
    for endpoint in DATED:
        for query, asked in queries(endpoint):
            status, body = served.session.get(f"{endpoint.path}?{urllib.parse.urlencode(query)}")
            answers += 1
            assert status in (200, 400), (endpoint.path, query, status)
            if status == 400:
                assert asked in body.decode().casefold(), (endpoint.path, query)
    assert answers > 100
    status, body = served.session.get("/usage/users/alice/?until=9999-12-31")
    assert status == 200 and f'name="until" value="{TODAY.isoformat()}"' in body.decode()


def test_a_100000_character_name_gives_a_pdf_with_the_name_shortened(
    served: Served, tmp_path: Path
) -> None:
    status, body = served.session.get("/api/v1/jobs/4243/usage")
    assert status == 200 and json.loads(body)["name"] == LONG
    status, pdf = served.session.get("/pdf/4243", timeout=60)
    assert status == 200 and pdf.startswith(b"%PDF")
    (tmp_path / "job.pdf").write_bytes(pdf)
    text = subprocess.run(
        [need_binary("pdftotext"), str(tmp_path / "job.pdf"), "-"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    shown_xs = sum(len(run) for run in re.findall(r"x{5,}", text))
    assert SHOWN_LIMIT // 2 < shown_xs < SHOWN_LIMIT and "…" in text
    status, page = served.session.get("/usage/jobs/4243/")
    assert status == 200 and "x" * SHOWN_LIMIT not in page.decode()


def test_no_bidi_control_reaches_the_job_page_or_the_user_list(served: Served) -> None:
    for path in ("/usage/jobs/4244/", "/usage/users/alice/"):
        status, body = served.session.get(path)
        assert status == 200, path
        page = body.decode()
        assert not set(BIDI) & set(page) and "evil gnp.exe tail" in page, path


def test_the_staff_page_and_a_tower_of_accents_are_shown_as_every_report_shows_names(
    served: Served,
) -> None:
    status, body = served.session.get("/usage/jobs/4245/")  # ended days ago: kept now
    assert status == 200
    page = body.decode()
    assert "a" + "\u0301" * MARKS_LIMIT + "b" in page
    assert "\u0301" * (MARKS_LIMIT + 1) not in page and not set(BIDI) & set(page)
    status, body = served.session.get("/usage/staff/")
    assert status == 200
    page = body.decode()
    assert "4245" in page and "ph ys" in page and not set(BIDI) & set(page)
