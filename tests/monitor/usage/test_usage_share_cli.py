"""`clusterwatch monitor usage_share JOBID --user USER [--days N]` through the installed
console script: exit 0 with the link as the last line (and nowhere else), 1 for a job that
is not USER's (one line, as for an unknown one) or no active account, 2 for a usage error."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from clusterwatch.monitor.usage.share_links import TOKEN_RE
from tests.monitor.usage.cli_support import run
from tests.monitor.usage.site import UsageSite

pytestmark = pytest.mark.usefixtures("migrated")
BASE = "https://monitor.example.org"


def test_it_prints_a_link_for_the_jobs_owner_once(tmp_path: Path, site: UsageSite) -> None:
    site.job("4242")
    made = run(tmp_path, site, "shell", "-c",
               "from django.contrib.auth.models import User; "
               "User.objects.create_user('alice'); User.objects.create_user('bob')")
    assert made.returncode == 0, made.stderr
    first = run(tmp_path, site, "usage_share", "4242", "--user", "alice", "--days", "3",
                CLUSTERWATCH_EMAIL_BASE_URL=BASE)
    assert first.returncode == 0, first.stderr[-300:]
    *head, link = first.stdout.strip().splitlines()
    found = re.fullmatch(re.escape(BASE) + r"/usage/shared/([^/]+)/", link)
    assert found is not None and TOKEN_RE.fullmatch(found.group(1)) is not None
    secret = found.group(1)[13:]
    assert secret not in "\n".join(head) and secret not in first.stderr
    assert head[0] == "job: 4242, for: alice"
    assert head[1].startswith(f"prefix: {found.group(1)[:12]}, ")

    bob = run(tmp_path, site, "usage_share", "4242", "--user", "bob")
    assert bob.returncode == 1 and bob.stdout == ""
    assert bob.stderr.strip().splitlines()[-1].endswith("no job with this id whose user is 'bob'")
    long = run(tmp_path, site, "usage_share", "4242", "--user", "alice", "--days", "31")
    assert long.returncode == 2 and "1 to 30 days" in long.stderr
