"""Host facts: daemon log freshness, harvester processes, disk volumes.

Each function takes its environment (a log directory and a clock, a proc root, stat
functions) so tests run it on fixture trees, and turns what it cannot read into
{"error": "..."} rather than raising.
"""

# typing.List/Dict rather than list[...]: the reporter must run on Python 3.6.

import fnmatch
import os
import stat as stat_module
from typing import Any, Callable, Dict, List, Optional

StatvfsFn = Callable[[str], Any]
StatFn = Callable[[str], Any]

DAEMON_LOG_PATTERN = "panda-*.log"


def _why(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def daemon_logs(log_dir: str, now: float) -> Dict[str, Any]:
    """{"panda-job_fetcher.log": {"age_s", "bytes"}, ...} for each panda-*.log in log_dir.

    age_s is whole seconds since the last write, 0 when the file's time is ahead of `now`
    (clock skew). A log that vanishes between listing and stat is left out.
    """
    try:
        names = sorted(os.listdir(log_dir))
    except OSError as exc:
        return {"error": f"cannot list {log_dir}: {_why(exc)}"}
    logs = {}  # type: Dict[str, Any]
    for name in names:
        if not fnmatch.fnmatchcase(name, DAEMON_LOG_PATTERN):
            continue
        try:
            st = os.stat(os.path.join(log_dir, name))
        except FileNotFoundError:
            continue
        except OSError as exc:
            logs[name] = {"error": f"cannot stat {name}: {_why(exc)}"}
            continue
        if not stat_module.S_ISREG(st.st_mode):
            continue
        logs[name] = {"age_s": max(0, int(now - st.st_mtime)), "bytes": st.st_size}
    return logs


def harvester_form(argv: List[str]) -> Optional[str]:
    """ "master.py" or "uwsgi" when argv is a harvester process, else None.

    Both forms need the program itself in argv[0], so that a shell, `tail -f` or `grep`
    naming the same paths is not counted:
    - master.py: `python -u .../pandaharvester/harvesterbody/master.py --pid ...`, or
      `python -m pandaharvester.harvesterbody.master`;
    - uWSGI: `.../bin/uwsgi .../etc/panda/panda_harvester-uwsgi.ini` (argv names
      `panda_harvester`, not `pandaharvester`); its master and workers all count.
    """
    if not argv:
        return None
    program = os.path.basename(argv[0])
    rest = argv[1:]
    if "python" in program:
        for arg in rest:
            path = arg.replace(os.sep, "/")
            if path.endswith("pandaharvester/harvesterbody/master.py"):
                return "master.py"
            if arg == "pandaharvester.harvesterbody.master":
                return "master.py"
    if program.startswith("uwsgi") and any("panda_harvester" in arg for arg in rest):
        return "uwsgi"
    return None


def harvester_processes(proc_root: str = "/proc") -> Dict[str, Any]:
    """{"count": n, "by_form": {"master.py": a, "uwsgi": b}} from /proc/<pid>/cmdline."""
    try:
        entries = os.listdir(proc_root)
    except OSError as exc:
        return {"error": f"cannot list {proc_root}: {_why(exc)}"}
    by_form = {"master.py": 0, "uwsgi": 0}
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(os.path.join(proc_root, entry, "cmdline"), "rb") as f:
                raw = f.read()
        except OSError:
            continue  # exited since the listing, or not ours to read
        argv = [a.decode("utf-8", "replace") for a in raw.split(b"\0") if a]
        form = harvester_form(argv)
        if form is not None:
            by_form[form] += 1
    return {"count": sum(by_form.values()), "by_form": by_form}


def volumes(
    mounts: List[str],
    statvfs: StatvfsFn = os.statvfs,
    stat: StatFn = os.stat,
) -> Dict[str, Any]:
    """{mount: {"total_bytes", "avail_bytes", "used_percent", "device"}} for each mount.

    avail_bytes is what an unprivileged account may still write (f_bavail); used_percent
    is df's Use%: used / (used + avail), one decimal. device is "major:minor" of st_dev.
    A mount on the same filesystem as an earlier one (same st_dev, e.g. /data as a plain
    directory on /) is {"same_as": "<earlier mount>"}, so no filesystem counts twice.
    """
    result = {}  # type: Dict[str, Any]
    seen = {}  # type: Dict[int, str]
    for mount in mounts:
        if mount in result:
            continue
        try:
            dev = stat(mount).st_dev
            if dev in seen:
                result[mount] = {"same_as": seen[dev]}
                continue
            vfs = statvfs(mount)
        except OSError as exc:
            result[mount] = {"error": f"cannot stat {mount}: {_why(exc)}"}
            continue
        seen[dev] = mount
        frsize = vfs.f_frsize or vfs.f_bsize
        total = vfs.f_blocks * frsize
        avail = vfs.f_bavail * frsize
        used = (vfs.f_blocks - vfs.f_bfree) * frsize
        used_percent = round(100.0 * used / (used + avail), 1) if used + avail > 0 else 0.0
        result[mount] = {
            "total_bytes": total,
            "avail_bytes": avail,
            "used_percent": used_percent,
            "device": f"{os.major(dev)}:{os.minor(dev)}",
        }
    return result
