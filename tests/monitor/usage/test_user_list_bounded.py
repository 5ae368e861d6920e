"""A user's list over a very large history (issue 19, item 9): accounting's answer is read as
a stream and only the newest jobs of the period are kept, so a worker's memory stays bounded
(a 1,000,000-job history held 3 GB), and the page says the list was cut."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone as django_timezone

from clusterwatch.monitor.usage.web import user_jobs
from tests.monitor.usage.page_support import client_of
from tests.monitor.usage.sacct_support import history_sacct
from tests.monitor.usage.site import UsageSite

JOBS = 100_000  # 200,000 lines of sacct output: the unbounded reading held 340 MB
# The peak is the process's own VmHWM: getrusage's ru_maxrss survives exec, so a child of a
# pytest worker that has grown to 300 MB would report the worker's peak, not its own.
MEASURE = """\
import json, sys
from datetime import datetime, timezone
from clusterwatch.monitor.usage.accounting.sacct import SacctAccounting
since = datetime(2023, 1, 1, tzinfo=timezone.utc)
listing = SacctAccounting(sys.argv[1], timeout_s=120).jobs_of_user("alice", since, limit=2000)
print(json.dumps({"jobs": [job.jobid for job in listing], "cut": listing.cut,
                  "peak_kib": next(int(line.split()[1]) for line in open("/proc/self/status")
                                   if line.startswith("VmHWM:"))}))
"""


def test_a_history_of_200000_lines_is_read_in_bounded_memory(tmp_path: Path) -> None:
    program = tmp_path / "sacct"
    history_sacct(program, JOBS)
    run = subprocess.run([sys.executable, "-c", MEASURE, str(program)], capture_output=True,
                         text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stderr
    found = json.loads(run.stdout)
    assert found["cut"] is True
    assert found["jobs"] == [str(100_000 + JOBS - 1 - n) for n in range(2000)]  # the newest
    assert found["peak_kib"] < 200 * 1024, found["peak_kib"]


@pytest.mark.django_db
def test_the_page_says_when_it_shows_only_the_newest_jobs_of_the_period(
        usage_site: UsageSite, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(user_jobs, "LIMIT", 3)
    start = django_timezone.now().replace(microsecond=0) - timedelta(days=5)
    for number in range(5):
        usage_site.job(str(800 + number), start=start + timedelta(hours=number))
    alice = client_of("alice")
    page = alice.get("/usage/users/alice/").content.decode()
    assert "these are the newest 3 jobs of the period" in page
    assert all(f"/usage/jobs/{jobid}/" in page for jobid in ("804", "803", "802"))
    assert "/usage/jobs/801/" not in page
    answer = alice.get("/api/v1/users/alice").json()
    assert (answer["cut"], answer["limit"]) == (True, 3)
    assert [job["jobid"] for job in answer["jobs"]] == ["804", "803", "802"]
    monkeypatch.setattr(user_jobs, "LIMIT", 5)
    assert "newest" not in alice.get("/usage/users/alice/").content.decode()
