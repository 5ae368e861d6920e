"""An adversarial review of the usage reports' access: the ways around the rules that the
matrix (test_access.py) does not try. Each test is a way someone could reach another user's
job, or tell that it exists, and checks that it fails."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import unquote

import pytest
from django.contrib.auth.models import User
from django.test import Client

from clusterwatch.monitor.usage.config import get_config
from clusterwatch.monitor.usage.models import KeptSummary
from clusterwatch.monitor.usage.rendering.cache import RenderKind, render_key
from clusterwatch.monitor.usage.usage_report import load_report
from tests.monitor.usage.access_support import (
    HIDDEN,
    JOBID,
    OWNER,
    Answer,
    add_hidden_job,
    runs,
    wrapped_sacct,
)
from tests.monitor.usage.site import UsageSite

pytestmark = pytest.mark.django_db


def logged_in(name: str, *, staff: bool = False) -> Client:
    user = User.objects.filter(username=name).first() or User.objects.create_user(
        name, is_staff=staff)
    client = Client()
    client.force_login(user)
    return client


def test_it_asks_accounting_about_a_hidden_kept_job_as_about_an_unknown_one(
        usage_site: UsageSite, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A kept job refused without asking accounting answered faster than an unknown job
    # (one sacct run less), and 404 where an unknown job got 503 while accounting was down.
    add_hidden_job(usage_site)
    load_report(JOBID)
    log = wrapped_sacct(usage_site, tmp_path, monkeypatch)
    bob = logged_in("bob")
    for path in ("/api/v1/jobs/{}/usage", "/usage/jobs/{}/", "/pdf/{}", "/mail/{}"):
        before = runs(log)
        unknown = Answer.of(bob.get(path.format("4243")))
        asked_unknown = runs(log) - before
        hidden = Answer.of(bob.get(path.format(JOBID)))
        assert runs(log) - before - asked_unknown == asked_unknown == 1, path
        assert hidden == unknown, path


def test_it_lists_only_the_jobs_whose_user_is_exactly_the_name_asked(
        usage_site: UsageSite, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # sacct resolves --user through the name service, which may ignore case or take a uid:
    # its answer for Alice or 1000 can be alice's jobs.
    add_hidden_job(usage_site)
    wrapped_sacct(usage_site, tmp_path, monkeypatch, names={"Alice": OWNER, "1000": OWNER})
    for name in ("Alice", "1000"):
        client = logged_in(name)
        listing = client.get(f"/api/v1/users/{name}")
        assert listing.status_code == 200 and listing.json()["jobs"] == []
        page = client.get(f"/usage/users/{name}/")
        assert page.status_code == 200
        assert Answer.of(page).leaks(name) == []
    assert ({j["jobid"] for j in logged_in(OWNER).get("/api/v1/users/alice").json()["jobs"]}
            == {JOBID, "4300_1", "4300_2"})  # her job and her array's tasks


@pytest.mark.parametrize("asked", ["130", "123_4", "123", "123_5", "0130", "123_04"])
def test_it_hides_an_array_task_under_every_id_it_answers_to(
        usage_site: UsageSite, asked: str) -> None:
    # Task 123_4 is job 130 to sacct, task 123_5 is 123 (the array's own id).
    bob, alice = logged_in("bob"), logged_in(OWNER)
    path = f"/api/v1/jobs/{asked}/usage"
    unknown = Answer.of(bob.get(path))
    usage_site.job("123_4", raw_id="130", user=OWNER)
    usage_site.job("123_5", raw_id="123", user=OWNER)
    live = Answer.of(bob.get(path))
    found = alice.get(path)
    if found.status_code == 200:
        assert found.json()["jobid"] in ("123_4", "123_5")
        load_report(found.json()["jobid"])
    assert KeptSummary.objects.count() == (found.status_code == 200)
    kept = Answer.of(bob.get(path))
    assert unknown.status == 404 and unknown == live == kept


def test_it_serves_a_cached_drawing_only_to_who_may_see_the_job(
        usage_site: UsageSite) -> None:
    alice, bob, root = logged_in(OWNER), logged_in("bob"), logged_in("root", staff=True)
    paths = ("/pdf/{}", "/pie/{}/", "/plot/{}/cpu", "/plot/{}/jobs_cpu_percent")
    before = [Answer.of(bob.get(p.format(JOBID))) for p in paths]
    add_hidden_job(usage_site)
    drawn = [alice.get(p.format(JOBID)).content for p in paths]
    cache = get_config().cache_dir
    assert len(list(cache.iterdir())) == 3  # the original's metric name shares the file
    assert not any(OWNER in entry.name for entry in cache.iterdir())
    assert [Answer.of(bob.get(p.format(JOBID))) for p in paths] == before
    assert [root.get(p.format(JOBID)).content for p in paths] == drawn
    document = load_report(JOBID, with_series=False).document
    assert (render_key(RenderKind.PDF, document, None)
            != render_key(RenderKind.PDF, {**document, "user": "bob"}, None))


# 404 from no path matching (an encoded slash is a slash), 400 from the views' checks, 404
# for a well-formed id or name that is not bob's.
@pytest.mark.parametrize(("path", "status"), [
    ("/api/v1/jobs/4242%2F/usage", 404), ("/api/v1/jobs/4242%2Fusage", 404),
    ("/pdf/4242%2F..%2F4242", 404), ("/plot/4242/..%2Fcpu", 404),
    ("/api/v1/users/alice%2F", 404),
    ("/api/v1/jobs/4242./usage", 400), ("/api/v1/jobs/4242%00/usage", 400),
    ("/api/v1/jobs/4242%0A/usage", 400), ("/api/v1/jobs/4242%20/usage", 400),
    ("/api/v1/jobs/+4242/usage", 400), ("/plot/4242/cpu%00", 400),
    ("/api/v1/jobs/%EF%BC%94%EF%BC%92%EF%BC%94%EF%BC%92/usage", 400),  # fullwidth digits
    ("/usage/jobs/4242./", 400), ("/usage/jobs/4242%3B/", 400), ("/mail/4242%23", 400),
    ("/usage/users/%D0%B0lice/", 400), ("/usage/users/%EF%BD%81lice/", 400),  # look-alikes
    ("/api/v1/users/alice%00", 400), ("/api/v1/users/%61lice%20", 400),
    ("/api/v1/users/alice,bob", 400),
    ("/api/v1/jobs/04242/usage", 404), ("/usage/users/alice./", 404),
    ("/usage/users/ALICE/", 404),
])
def test_it_shows_another_user_nothing_through_a_path_trick(usage_site: UsageSite,
                                                             path: str, status: int) -> None:
    bob = logged_in("bob")
    unknown = Answer.of(bob.get(path))
    add_hidden_job(usage_site)
    live = Answer.of(bob.get(path))
    load_report(JOBID)
    kept = Answer.of(bob.get(path))
    assert unknown.status == status and unknown == live == kept
    # What the answer quotes of the path asked is no leak.
    assert [s for s in unknown.leaks("bob") if s.decode() not in unquote(path)] == []


def test_it_takes_a_percent_encoded_job_id_as_the_same_job(usage_site: UsageSite) -> None:
    add_hidden_job(usage_site)
    path = "/api/v1/jobs/%34%32%34%32/usage"
    assert logged_in(OWNER).get(path).json()["jobid"] == JOBID
    assert logged_in("bob").get(path).status_code == 404


def test_it_never_names_another_users_latest_job_in_the_index(usage_site: UsageSite) -> None:
    bob = logged_in("bob")
    usage_site.job("77", user="bob", hours=0.5)
    load_report("77")
    before = Answer.of(bob.get("/"))
    add_hidden_job(usage_site)
    load_report(JOBID)  # alice's is now the most recent kept job of all
    after = Answer.of(bob.get("/"))
    assert after == before and b"/usage/jobs/77/" in after.body
    assert after.leaks("bob") == []


def test_it_answers_json_refusals_alike_in_size_and_content(usage_site: UsageSite) -> None:
    add_hidden_job(usage_site)
    bob = logged_in("bob")
    unknown, hidden = bob.get("/api/v1/jobs/4243/usage"), bob.get(f"/api/v1/jobs/{JOBID}/usage")
    assert len(unknown.content) == len(hidden.content)
    assert json.loads(hidden.content) == json.loads(unknown.content)
    assert not any(secret in hidden.content for secret in HIDDEN)
