"""Real cgroup v1 job hierarchies with real processes, beside the scheduler's, for benchmarks.

`CgroupLab` creates one directory per controller, `<cgroup root>/<controller>/<name>/`, lays
out Slurm-shaped job directories below it (`slurm/uid_<uid>/job_<id>/step_<s>/task_<t>`)
and a directory of symlinks, `root`, with `root/<controller>` pointing at the lab directory
of that controller. An exporter given `--cgroup-root <root>` therefore sees
`<root>/<controller>/slurm/uid_<uid>/job_<id>/...`, exactly Slurm's layout, and none of the
machine's other cgroups. `spawn` starts a process and moves it into a task directory in every
controller. On exit every spawned process is killed and every directory removed, also after
Ctrl-C or SIGTERM (signals are held back while cleaning up). Needs root and cgroup v1.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Optional

DEFAULT_CGROUP_ROOT = Path("/sys/fs/cgroup")
# freezer first: it is where Slurm's proctrack/cgroup (and so the exporter) lists processes.
CONTROLLERS = ("freezer", "cpuacct", "cpuset", "memory", "pids")
_HELD = {signal.SIGINT, signal.SIGTERM}


class CgroupLab:
    def __init__(
        self,
        cgroup_root: Path = DEFAULT_CGROUP_ROOT,
        controllers: Sequence[str] = CONTROLLERS,
        name: Optional[str] = None,
    ) -> None:
        self.cgroup_root = Path(cgroup_root)
        self.controllers = tuple(controllers)
        self.name = name or f"clusterwatch_lab_{os.getpid()}"
        self.root = Path()
        self._processes: list[subprocess.Popen[bytes]] = []
        self._created: list[Path] = []  # in creation order: removed in reverse

    def __enter__(self) -> CgroupLab:
        if os.geteuid() != 0:
            raise PermissionError("creating cgroups needs root")
        missing = [c for c in self.controllers if not (self.cgroup_root / c / "cgroup.procs")
                   .exists()]
        if missing:
            raise FileNotFoundError(
                f"no cgroup v1 hierarchy for {', '.join(missing)} under {self.cgroup_root}")
        self.root = Path(tempfile.mkdtemp(prefix="cw-cgroup-lab-"))
        try:
            for controller in self.controllers:
                self._mkdir(self.cgroup_root / controller / self.name)
                (self.root / controller).symlink_to(self.cgroup_root / controller / self.name)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def task_dir(self, uid: int, jobid: int, step: str = "0", task: int = 0) -> str:
        """Create the task's directories in every controller; return the path below `root`."""
        relative = f"slurm/uid_{uid}/job_{jobid}/step_{step}/task_{task}"
        for controller in self.controllers:
            directory = self.cgroup_root / controller / self.name
            for part in relative.split("/"):
                directory = directory / part
                if not directory.is_dir():
                    self._mkdir(directory)
        return relative

    def spawn(self, argv: Sequence[str], task_dir: str, user: Optional[int] = None,
              env: Optional[Mapping[str, str]] = None) -> subprocess.Popen[bytes]:
        """Start `argv` (as uid `user`) and move it into `task_dir` in every controller."""
        # Ctrl-C between the fork and the append would leak the child: signals wait until
        # it is recorded (the child gets the caller's usual mask back before exec).
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD)
        try:
            process = subprocess.Popen(
                list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, user=user, env=env, close_fds=True,
                preexec_fn=lambda: signal.pthread_sigmask(signal.SIG_SETMASK, previous))
            self._processes.append(process)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)
        for controller in self.controllers:
            path = self.cgroup_root / controller / self.name / task_dir / "cgroup.procs"
            path.write_text(str(process.pid))
        return process

    @property
    def processes(self) -> list[subprocess.Popen[bytes]]:
        return list(self._processes)

    def close(self) -> None:
        """Kill and reap every spawned process, remove every cgroup and the symlinks."""
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD)
        try:
            for process in self._processes:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
            for process in self._processes:
                process.wait()
            self._processes.clear()
            for directory in reversed(self._created):
                _rmdir(directory)
            self._created.clear()
            if self.root != Path():
                shutil.rmtree(self.root, ignore_errors=True)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)

    def _mkdir(self, directory: Path) -> None:
        directory.mkdir()
        self._created.append(directory)
        if (directory / "cpuset.cpus").exists():
            # A new cpuset is empty and refuses tasks until it has CPUs and memory nodes.
            for name in ("cpuset.cpus", "cpuset.mems"):
                (directory / name).write_text((directory.parent / name).read_text())


def _rmdir(directory: Path) -> None:
    for _ in range(50):  # EBUSY while killed tasks are still leaving the cgroup
        try:
            directory.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.05)
    directory.rmdir()  # raise the last error
