"""`clusterwatch usage --monitor URL`: the reports asked of a running monitor's API (a live
server over a real socket), the caller proven by a usage token file: the same documents as
the API, the report's link, another user's job refused as unknown, a token file others can
read refused as configuration, a monitor that is down one line."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from clusterwatch.cli import main
from clusterwatch.loopback.services import free_port
from clusterwatch.monitor.core import api_tokens
from tests.monitor.usage.site import GiB, UsageSite

pytestmark = pytest.mark.django_db(transaction=True)
NOW = datetime.now(timezone.utc).replace(microsecond=0)


def token_file(directory: Path, user: str, mode: int = 0o600) -> Path:
    _row, token = api_tokens.create(User.objects.create_user(user, password=None))
    path = directory / f"{user}-token"
    path.write_text(token + "\n")
    path.chmod(mode)
    return path


def usage(capsys: pytest.CaptureFixture[str], *arguments: str) -> tuple[int, str, str]:
    status = main(["usage", "--color", "never", *arguments])
    out, err = capsys.readouterr()
    return status, out, err


def test_the_monitors_documents_are_printed_as_the_api_answers_them(
        usage_site: UsageSite, live_server: Any, tmp_path: Path,
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLUSTERWATCH_USAGE_CONFIG", str(tmp_path / "none.toml"))
    (tmp_path / "none.toml").write_text("[usage]\n")
    begun, ended = usage_site.job("4242", start=NOW - timedelta(hours=3), req_mem="8G")
    usage_site.measured("4242", begun, ended, busy_cpus=1.0, memory_bytes=1 * GiB)
    for task in (1, 2, 3):
        usage_site.job(f"90_{task}", raw_id=str(93 - task), start=NOW - timedelta(hours=2))
    usage_site.job("5151", user="bob", start=NOW - timedelta(hours=2))
    alice = token_file(tmp_path, "alice")
    mine = ("--monitor", live_server.url, "--token-file", str(alice))

    status, out, err = usage(capsys, *mine, "--json", "4242")
    assert (status, err) == (0, "")
    document = json.loads(out)
    assert "peer_ranks" in document and document["cpu_efficiency"] == pytest.approx(0.5, 0.02)
    status, out, _err = usage(capsys, *mine, "4242")
    assert status == 0 and f"Report with plots: {live_server.url}/usage/jobs/4242/" in out
    # The monitor's peer ranks, in its words (too few kept jobs on `cpu` here).
    assert ("CPU efficiency among the last 30 days' jobs: not enough jobs to compare"
            in out)

    status, out, _err = usage(capsys, *mine, "--json", "90")
    array = json.loads(out)
    assert status == 0 and [t["jobid"] for t in array["tasks"]] == ["90_1", "90_2", "90_3"]
    assert array["summary"]["states"] == {"COMPLETED": 3}

    monkeypatch.setenv("USER", "alice")
    monkeypatch.setenv("LOGNAME", "alice")
    status, out, err = usage(capsys, *mine, "--parsable")
    assert (status, err) == (0, "")
    assert sorted(line.split("|")[0] for line in out.splitlines()[1:]) == [
        "4242", "90_1", "90_2", "90_3"]  # hers, and not bob's 5151
    status, out, err = usage(capsys, *mine, "--user", "bob")
    assert (status, out) == (1, "")
    assert err == "clusterwatch: the monitor has no user bob whose jobs you may see\n"

    status, out, err = usage(capsys, *mine, "5151")
    assert (status, out) == (1, "")
    assert err == "clusterwatch: the monitor has no job 5151 that you may see\n"

    loose = token_file(tmp_path, "carol", 0o644)
    status, _out, err = usage(capsys, "--monitor", live_server.url, "--token-file", str(loose),
                              "4242")
    assert status == 78 and "readable by others" in err and "cwu_" not in err

    status, _out, err = usage(capsys, "--monitor", f"http://127.0.0.1:{free_port()}",
                              "--token-file", str(alice), "4242")
    assert status == 1 and err == (
        "clusterwatch: job 4242: the monitor did not answer: connection\n")
