"""`clusterwatch monitor create_usage_token USER [--note TEXT]` through the installed console
script: exit 0 with the token as the last line (and nowhere else), 1 for no active account
or a note over 200 characters (one line), 2 without USER, 78 a configuration error."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.monitor.usage.cli_support import run
from tests.monitor.usage.site import UsageSite

# Each test's data directory is a copy of the migrated one (`migrated`, in conftest.py).
pytestmark = pytest.mark.usefixtures("migrated")


def accounts(tmp_path: Path, site: UsageSite) -> None:
    made = run(tmp_path, site, "shell", "-c",
               "from django.contrib.auth.models import User; "
               "User.objects.create_user('alice'); "
               "User.objects.create_user('gone', is_active=False)")
    assert made.returncode == 0, made.stderr


def test_it_prints_a_new_token_once_as_the_last_line(tmp_path: Path,
                                                     site: UsageSite) -> None:
    accounts(tmp_path, site)
    first = run(tmp_path, site, "create_usage_token", "alice", "--note", "backup script")
    assert first.returncode == 0, first.stderr
    *head, token = first.stdout.strip().splitlines()
    assert token.startswith("cwu_") and len(token) > 30
    assert token not in "\n".join(head) and token not in first.stderr
    second = run(tmp_path, site, "create_usage_token", "alice")
    assert second.returncode == 0 and second.stdout.strip().splitlines()[-1] != token


def test_its_failures_exit_1_2_and_78_with_one_line(tmp_path: Path,
                                                    site: UsageSite) -> None:
    accounts(tmp_path, site)
    for arguments in (["nobody"], ["gone"], ["alice", "--note", "x" * 201]):
        done = run(tmp_path, site, "create_usage_token", *arguments)
        assert (done.returncode, done.stdout) == (1, ""), (arguments, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    missing = run(tmp_path, site, "create_usage_token")
    assert missing.returncode == 2 and "USER" in missing.stderr
    broken = run(tmp_path, site, "create_usage_token", "alice",
                 CLUSTERWATCH_EMAIL_PORT="not-a-port")
    assert broken.returncode == 78 and broken.stdout == ""
    assert broken.stderr.strip().splitlines() == [
        "clusterwatch: configuration error: CLUSTERWATCH_EMAIL_PORT must be a port number "
        "(1-65535), not 'not-a-port'"]
