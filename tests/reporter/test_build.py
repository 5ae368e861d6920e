"""The zipapp as cron runs it: built by the installed `clusterwatch reporter build`, run as
a program, its exit status is the documented contract (0, 1, 2, 64), as for
`python -m clusterwatch.reporter`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.harvester_host import Host
from tests.support.reporter_zipapp import run_app
from tests.support.tls import MonitorServer


def buffered(host: Host) -> int:
    return len(list((host.state / "buffer").glob("*.json")))


def test_it_exits_0_when_the_record_is_delivered(tmp_path: Path, zipapp: Path) -> None:
    host = Host(tmp_path)
    with MonitorServer(None) as monitor:
        monitor.start()
        host.configure(monitor.url)
        done = run_app(zipapp, *host.args())
    assert done.returncode == 0, done.stderr
    assert len(monitor.posts) == 1 and buffered(host) == 0


def test_it_exits_1_when_delivery_fails_and_the_record_is_buffered(tmp_path: Path,
                                                                   zipapp: Path) -> None:
    host = Host(tmp_path)
    with MonitorServer(None) as monitor:  # bound, never listening: connection refused
        host.configure(monitor.url)
        done = run_app(zipapp, *host.args())
    assert done.returncode == 1, done.stderr
    assert "delivery failed" in done.stderr and buffered(host) == 1


def test_it_exits_2_without_a_monitor_url_or_token(tmp_path: Path, zipapp: Path) -> None:
    host = Host(tmp_path)
    host.without_monitor()
    done = run_app(zipapp, *host.args())
    assert done.returncode == 2, done.stderr
    assert "no monitor URL or token" in done.stderr and buffered(host) == 1


@pytest.mark.parametrize("bad", [["--no-such-option"], ["--volumes", ","],
                                 ["--report-as", "../x"]])
def test_it_exits_64_on_usage_errors(tmp_path: Path, zipapp: Path, bad: list[str]) -> None:
    done = run_app(zipapp, *Host(tmp_path).args(*bad))
    assert done.returncode == 64, done.stderr


def test_it_exits_like_python_dash_m(tmp_path: Path, zipapp: Path) -> None:
    """One entry point: the zipapp and `python -m clusterwatch.reporter` agree."""
    host = Host(tmp_path)
    host.without_monitor()
    as_module = subprocess.run([sys.executable, "-m", "clusterwatch.reporter", *host.args()],
                               capture_output=True, text=True, check=False, timeout=60)
    assert (as_module.returncode, run_app(zipapp, *host.args()).returncode) == (2, 2)


def test_it_calls_itself_the_version_whose_volumes_its_record_carries(
        tmp_path: Path, zipapp: Path) -> None:
    """1.8: health.volumes with each filesystem's device, aliases counted once (issue 19);
    1.9: each fetching queue's failing streak (issue 21)."""
    done = run_app(zipapp, *Host(tmp_path).args("--print", "--volumes", "/,/"))
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert record["reporter_version"] == "1.9.0"
    assert set(record["health"]["volumes"]["/"]) >= {"device", "avail_bytes", "used_percent"}
