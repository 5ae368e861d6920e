import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from clusterwatch.reporter.host import daemon_logs, harvester_form, harvester_processes, volumes

NOW = 1_790_000_000.0

# /proc/<pid>/cmdline as the kernel shows it: arguments each ended by NUL. The master.py and
# uWSGI forms follow harvester-formats.md section 2.1; the paths (/opt/harvester venv,
# python3.6 site-packages) and the other processes are realistic examples, not taken from a
# real host.
MASTER = [
    "/opt/harvester/bin/python",
    "-u",
    "/opt/harvester/lib/python3.6/site-packages/pandaharvester/harvesterbody/master.py",
    "--pid",
    "/var/log/harvester/panda_harvester.pid",
]
UWSGI = ["/opt/harvester/bin/uwsgi", "/opt/harvester/etc/panda/panda_harvester-uwsgi.ini"]
NOT_HARVESTER = {
    "tail": ["tail", "-f", "/var/log/harvester/panda_harvester-uwsgi.ini"],
    "grep": ["grep", "pandaharvester/harvesterbody/master.py"],
    "init script": ["/bin/bash", "/etc/rc.d/init.d/panda_harvester", "start"],
    "other uwsgi": ["/usr/sbin/uwsgi", "/etc/uwsgi/apps/monitor.ini"],
    "other python": ["/usr/bin/python3", "/usr/bin/harvester-reporter.pyz"],
    "kernel thread": [],
}


def make_proc(root: Path, procs: dict[str, list[str]]) -> None:
    for pid, argv in procs.items():
        (root / pid).mkdir(parents=True)
        (root / pid / "cmdline").write_bytes(b"".join(a.encode() + b"\0" for a in argv))


def touch(path: Path, size: int, mtime: float) -> None:
    path.write_bytes(b"x" * size)
    os.utime(path, (mtime, mtime))


def test_it_reports_age_and_size_of_each_daemon_log(tmp_path: Path) -> None:
    touch(tmp_path / "panda-job_fetcher.log", 120, NOW - 42.7)
    touch(tmp_path / "panda-submitter.log", 0, NOW - 3600)
    touch(tmp_path / "panda-submitter.log.1", 5, NOW)
    touch(tmp_path / "panda-submitter.log-20261001.gz", 5, NOW)
    touch(tmp_path / "panda_harvester.pid", 5, NOW)
    (tmp_path / "panda-dir.log").mkdir()
    assert daemon_logs(str(tmp_path), NOW) == {
        "panda-job_fetcher.log": {"age_s": 42, "bytes": 120},
        "panda-submitter.log": {"age_s": 3600, "bytes": 0},
    }


def test_it_reports_age_zero_for_a_log_dated_in_the_future(tmp_path: Path) -> None:
    touch(tmp_path / "panda-monitor.log", 1, NOW + 30)
    assert daemon_logs(str(tmp_path), NOW) == {"panda-monitor.log": {"age_s": 0, "bytes": 1}}


def test_it_reports_an_unreadable_log_dir(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    assert daemon_logs(str(missing), NOW) == {
        "error": f"cannot list {missing}: No such file or directory"
    }


def test_it_counts_both_harvester_process_forms(tmp_path: Path) -> None:
    procs = {"2911": MASTER, "4100": UWSGI, "4101": UWSGI, "4102": UWSGI}
    procs.update({str(5000 + i): argv for i, argv in enumerate(NOT_HARVESTER.values())})
    make_proc(tmp_path, procs)
    (tmp_path / "self").mkdir()
    (tmp_path / "sys").mkdir()
    assert harvester_processes(str(tmp_path)) == {
        "count": 4,
        "by_form": {"master.py": 1, "uwsgi": 3},
    }


def test_it_skips_processes_that_vanished_after_the_listing(tmp_path: Path) -> None:
    make_proc(tmp_path, {"2911": MASTER})
    (tmp_path / "3000").mkdir()  # exited: no cmdline any more
    assert harvester_processes(str(tmp_path))["count"] == 1


def test_it_reports_zero_when_the_harvester_is_down(tmp_path: Path) -> None:
    make_proc(tmp_path, {"1": ["/usr/lib/systemd/systemd", "--system"]})
    assert harvester_processes(str(tmp_path)) == {
        "count": 0,
        "by_form": {"master.py": 0, "uwsgi": 0},
    }


def test_it_reports_an_unreadable_proc_root(tmp_path: Path) -> None:
    result = harvester_processes(str(tmp_path / "missing"))
    assert result == {"error": f"cannot list {tmp_path / 'missing'}: No such file or directory"}


@pytest.mark.parametrize(
    "argv,form",
    [
        (MASTER, "master.py"),
        (["python3", "-m", "pandaharvester.harvesterbody.master", "--foreground"], "master.py"),
        (UWSGI, "uwsgi"),
        (["uwsgi", "--ini", "/opt/harvester/etc/panda/panda_harvester-uwsgi.ini"], "uwsgi"),
        *[(argv, None) for argv in NOT_HARVESTER.values()],
    ],
)
def test_it_recognises_a_harvester_argv(argv: list[str], form: Any) -> None:
    assert harvester_form(argv) == form


def vfs(blocks: int, bfree: int, bavail: int, frsize: int = 4096) -> SimpleNamespace:
    return SimpleNamespace(
        f_blocks=blocks, f_bfree=bfree, f_bavail=bavail, f_frsize=frsize, f_bsize=frsize
    )


def test_it_reports_volumes_once_per_filesystem() -> None:
    devs = {"/": os.makedev(253, 0), "/var": os.makedev(253, 2), "/data": os.makedev(253, 0)}
    stats = {os.makedev(253, 0): vfs(1000, 300, 250), os.makedev(253, 2): vfs(200, 200, 190)}

    def fake_stat(path: str) -> SimpleNamespace:
        if path not in devs:
            raise FileNotFoundError(2, "No such file or directory", path)
        return SimpleNamespace(st_dev=devs[path])

    def fake_statvfs(path: str) -> SimpleNamespace:
        return stats[devs[path]]

    result = volumes(["/", "/var", "/data", "/tmp", "/"], statvfs=fake_statvfs, stat=fake_stat)
    assert result == {
        # df: used 700 blocks, avail 250 -> 700 / 950 = 73.7 %
        "/": {
            "total_bytes": 1000 * 4096,
            "avail_bytes": 250 * 4096,
            "used_percent": 73.7,
            "device": "253:0",
        },
        "/var": {
            "total_bytes": 200 * 4096,
            "avail_bytes": 190 * 4096,
            "used_percent": 0.0,
            "device": "253:2",
        },
        "/data": {"same_as": "/"},
        "/tmp": {"error": "cannot stat /tmp: No such file or directory"},
    }


def test_it_reports_a_statvfs_failure_as_the_mounts_error() -> None:
    def fail(path: str) -> Any:
        raise PermissionError(13, "Permission denied", path)

    result = volumes(["/data"], statvfs=fail, stat=lambda p: SimpleNamespace(st_dev=7))
    assert result == {"/data": {"error": "cannot stat /data: Permission denied"}}


def test_it_reports_an_empty_filesystem_as_zero_percent() -> None:
    result = volumes(
        ["/proc"], statvfs=lambda p: vfs(0, 0, 0), stat=lambda p: SimpleNamespace(st_dev=5)
    )
    assert result["/proc"]["used_percent"] == 0.0


def test_it_reads_the_real_root_filesystem() -> None:
    result = volumes(["/"])
    st = os.statvfs("/")
    assert result["/"]["total_bytes"] == st.f_blocks * st.f_frsize
    assert 0.0 <= result["/"]["used_percent"] <= 100.0
    dev = os.stat("/").st_dev
    assert result["/"]["device"] == f"{os.major(dev)}:{os.minor(dev)}"
