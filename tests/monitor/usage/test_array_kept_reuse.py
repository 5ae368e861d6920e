"""GET /api/v1/arrays/<id>/usage when a task's id was used before (Slurm's ids start again
after slurmdbd's database is reset, or wrap at FirstJobId's bound): the summary kept for the
old job of that id is someone else's, and the array's document holds only what accounting
says of the task now, never that job's figures or name. And an array of two users' tasks:
the unknown job's 404 to each of them, whole to staff."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from clusterwatch.monitor.usage.models import KeptSummary
from clusterwatch.monitor.usage.usage_report import load_report
from tests.monitor.usage.page_support import client_of
from tests.monitor.usage.site import UsageSite

pytestmark = pytest.mark.django_db
NOW = datetime.now(timezone.utc).replace(microsecond=0)


def test_a_task_whose_id_has_someone_elses_kept_summary_gets_accountings_figures(
        usage_site: UsageSite) -> None:
    usage_site.job("4300_1", raw_id="4301", user="bob", name="bobs-secret-run",
                   start=NOW - timedelta(days=200))
    load_report("4300_1")
    assert KeptSummary.objects.get(jobid="4300_1").user == "bob"
    usage_site._jobs.clear()  # accounting starts again; the kept summary stays
    for task in (1, 2):
        usage_site.job(f"4300_{task}", raw_id=str(4300 + 2 - task), user="alice",
                       name="alices-run", start=NOW - timedelta(hours=3))
    answer = client_of("alice").get("/api/v1/arrays/4300/usage")
    assert answer.status_code == 200
    assert b"bobs-secret-run" not in answer.content and b'"bob"' not in answer.content
    tasks = answer.json()["tasks"]
    assert [(t["jobid"], t["user"], t["name"]) for t in tasks] == [
        ("4300_1", "alice", "alices-run"), ("4300_2", "alice", "alices-run")]


def test_an_array_of_two_users_is_the_unknown_jobs_404_to_each_and_whole_to_staff(
        usage_site: UsageSite) -> None:
    for task, user in ((1, "alice"), (2, "bob")):
        usage_site.job(f"4400_{task}", raw_id=str(4400 + 2 - task), user=user,
                       name=f"{user}s-task", start=NOW - timedelta(hours=3))
    clients = {name: client_of(name) for name in ("alice", "bob")}
    unknown = clients["alice"].get("/api/v1/arrays/4499/usage")
    assert unknown.status_code == 404
    for name, client in clients.items():
        answer = client.get("/api/v1/arrays/4400/usage")
        assert (answer.status_code, answer.content) == (404, unknown.content), name
    staff = client_of("root", staff=True).get("/api/v1/arrays/4400/usage")
    assert staff.status_code == 200 and staff.json()["user"] is None
    assert [t["user"] for t in staff.json()["tasks"]] == ["alice", "bob"]
