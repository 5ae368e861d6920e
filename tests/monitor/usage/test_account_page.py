"""The account pages: one account's month with the same figures as `usage_monthly --json`
(the three months before as a trend, the most wasteful jobs linked to their pages); who sees
them (staff, the coordinators of the mapping file) and the 404 alike for an unknown account
and one the asker may not see; a bad month or account name; a broken mapping file."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client

from clusterwatch.errors import ConfigError
from clusterwatch.monitor.usage.coordinators import VARIABLE, coordinators
from tests.monitor.usage.accounts_support import kept
from tests.monitor.usage.page_support import client_of, text_of, without_csrf
from tests.monitor.usage.site import UsageSite

pytestmark = pytest.mark.django_db
UTC = timezone.utc


@pytest.fixture
def accounts(usage_site: UsageSite, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """atlas' jobs in March and the months before, cms' in March; dave coordinates atlas."""
    kept("1", user="alice", end=datetime(2026, 3, 10, tzinfo=UTC), elapsed_s=7200, cpus=4,
         cpu_efficiency=0.25, memory_efficiency=0.5)
    kept("2", user="bob", end=datetime(2026, 3, 20, tzinfo=UTC), elapsed_s=3600, cpus=8,
         gpus=1, cpu_efficiency=0.75, memory_efficiency=None)
    kept("3", user="bob", end=datetime(2026, 1, 5, tzinfo=UTC), elapsed_s=3600, cpus=2,
         cpu_efficiency=0.5)
    kept("4", account="cms", user="carol", end=datetime(2026, 3, 1, tzinfo=UTC),
         elapsed_s=600)
    mapping = tmp_path / "coordinators.toml"
    mapping.write_text('atlas = ["dave"]\n"cms" = ["erin", "dave"]\nlhcb = []\n')
    monkeypatch.setenv(VARIABLE, str(mapping))
    return mapping


def test_the_page_shows_the_commands_figures_and_links_the_wasteful_jobs(
        accounts: Path) -> None:
    out = StringIO()
    call_command("usage_monthly", "--month", "2026-03", "--account", "atlas", "--json",
                 stdout=out)
    [report] = json.loads(out.getvalue())["accounts"]
    page = client_of("dave").get("/usage/accounts/atlas/?month=2026-03")
    assert page.status_code == 200
    text = text_of(page)
    figures = report["figures"]
    assert (f"2026-03 {figures['jobs']} {figures['cpu_hours']:,.1f} "
            f"{figures['gpu_hours']:,.1f} {100 * figures['cpu_efficiency']:.1f} %") in text
    assert [item["month"] for item in report["earlier"]] == ["2026-02", "2026-01", "2025-12"]
    assert "2026-01 1 2.0 0.0 50.0 %" in text  # job 3, in the trend
    content = page.content.decode()
    for job in report["wasteful_jobs"]:
        assert f'<a href="/usage/jobs/{job["name"]}/">{job["name"]}</a>' in content
    assert [job["name"] for job in report["wasteful_jobs"]] == ["1", "2"]
    assert 'href="/usage/users/alice/"' in content
    assert "cms" not in text  # another account's figures are not on it


def test_staff_and_coordinators_see_it_others_get_the_unknown_accounts_404(
        accounts: Path) -> None:
    staff = client_of("root", staff=True)
    assert staff.get("/usage/accounts/cms/?month=2026-03").status_code == 200
    assert client_of("erin").get("/usage/accounts/cms/").status_code == 200
    bob = client_of("bob")  # ran atlas' jobs, coordinates nothing
    hidden, unknown = bob.get("/usage/accounts/atlas/"), bob.get("/usage/accounts/nosuch/")
    assert hidden.status_code == unknown.status_code == 404
    assert without_csrf(hidden.content) == without_csrf(unknown.content)
    assert b"atlas" not in hidden.content
    # lhcb is in the file but has no kept job: unknown, to its coordinators and staff alike.
    assert staff.get("/usage/accounts/lhcb/").status_code == 404
    assert client_of("Dave").get("/usage/accounts/atlas/").status_code == 404  # exact names
    assert Client().get("/usage/accounts/atlas/").status_code == 302


def test_the_index_lists_staff_every_account_and_a_coordinator_theirs(
        accounts: Path) -> None:
    everyone = client_of("root", staff=True).get("/usage/accounts/?month=2026-03")
    assert everyone.status_code == 200
    assert 'href="/usage/accounts/atlas/?month=2026-03"' in everyone.content.decode()
    assert 'href="/usage/accounts/cms/?month=2026-03"' in everyone.content.decode()
    erin = client_of("erin").get("/usage/accounts/?month=2026-04").content.decode()
    assert 'href="/usage/accounts/cms/' in erin and "/usage/accounts/atlas/" not in erin
    assert "no kept job ran in 2026-04" in erin
    assert client_of("bob").get("/usage/accounts/").status_code == 404


@pytest.mark.parametrize("query", ["month=2026-13", "month=March", "month=2026-03&month=2026-04",
                                   "month=%EF%BC%92026-03", "month=9999-12"])
def test_a_bad_month_is_a_400_naming_it(accounts: Path, query: str) -> None:
    answer = client_of("root", staff=True).get(f"/usage/accounts/atlas/?{query}")
    assert answer.status_code == 400
    assert "month" in text_of(answer)


def test_a_malformed_account_name_is_a_400(accounts: Path) -> None:
    answer = client_of("root", staff=True).get("/usage/accounts/a%20b/")
    assert answer.status_code == 400 and "Not an account name" in text_of(answer)


def test_a_broken_mapping_file_grants_nothing_and_stops_a_command(
        accounts: Path, caplog: pytest.LogCaptureFixture) -> None:
    accounts.write_text('atlas = "dave"\n')
    with pytest.raises(ConfigError, match="must be a list of user names"):
        coordinators()
    assert client_of("dave").get("/usage/accounts/atlas/").status_code == 404
    assert "coordinators are not read" in caplog.text
    assert client_of("root", staff=True).get("/usage/accounts/atlas/").status_code == 200
    for text, message in (('"a b" = ["x"]', "not an account name"),
                          ('atlas = ["x y"]', "not a user name"), ("atlas = [", "not valid TOML")):
        accounts.write_text(text + "\n")
        with pytest.raises(ConfigError, match=message):
            coordinators()
    accounts.unlink()
    with pytest.raises(ConfigError, match="cannot read"):
        coordinators()
