"""`clusterwatch usage --monitor URL` proving who asks with MUNGE, as on a Slurm login node:
the console script runs as alice (`cwjobtest`, a real local account) with no token file, so
it asks the session's real munged for a credential per request (`munge -n`), and the
monitor (a live server with MUNGE on) decodes it with the real unmunge: alice gets her job,
and bob's is refused as unknown."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from clusterwatch.loopback.munge import LoopbackMunge
from clusterwatch.loopback.slurm import ensure_user
from tests.components import unavailable
from tests.jobs.exporter_process import console_script
from tests.monitor.usage.site import GiB, UsageSite

pytestmark = pytest.mark.django_db(transaction=True)
ALICE, BOB = "cwjobtest", "cwjobother"


@pytest.fixture
def open_dir() -> Iterator[Path]:
    """A directory alice may read (pytest's tmp_path is root's, mode 700)."""
    folder = Path(tempfile.mkdtemp(prefix="cw-terminal-munge-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_alices_munge_credential_gets_her_job_and_not_bobs(
        usage_site: UsageSite, munged: LoopbackMunge, live_server: Any, open_dir: Path,
        monkeypatch: pytest.MonkeyPatch, need_binary: Callable[[str], str]) -> None:
    if os.geteuid() != 0:
        unavailable("running the command as another user (setpriv) needs root")
    monkeypatch.setenv("CLUSTERWATCH_MUNGE_SOCKET", str(munged.socket))  # the monitor's
    alice = ensure_user(ALICE)
    for name in (ALICE, BOB):
        ensure_user(name)
        User.objects.create_user(name, password=None)
    begun = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(hours=3)
    start, end = usage_site.job("4242", user=ALICE, start=begun)
    usage_site.measured("4242", start, end, busy_cpus=1.0, memory_bytes=1 * GiB)
    usage_site.job("4243", user=BOB, start=begun)
    system = open_dir / "usage.toml"
    system.write_text(f"[usage]\nmonitor_url = {live_server.url!r}\n"
                      f"munge_socket = {str(munged.socket)!r}\n")
    system.chmod(0o644)
    env = {"PATH": os.environ["PATH"], "HOME": str(open_dir), "USER": ALICE,
           "CLUSTERWATCH_USAGE_CONFIG": str(system)}

    def as_alice(*arguments: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [need_binary("setpriv"), f"--reuid={alice.pw_uid}", f"--regid={alice.pw_gid}",
             "--clear-groups", console_script(need_binary), "usage", *arguments],
            env=env, capture_output=True, text=True, timeout=60, check=False, cwd="/",
            stdin=subprocess.DEVNULL)

    mine = as_alice("--json", "4242")
    assert (mine.returncode, mine.stderr) == (0, "")
    assert json.loads(mine.stdout)["user"] == ALICE
    bobs = as_alice("4243")
    assert (bobs.returncode, bobs.stdout) == (1, "")
    assert bobs.stderr == "clusterwatch: the monitor has no job 4243 that you may see\n"
    # A credential is good once: the table asks with a new one.
    listed = as_alice("--parsable")
    assert listed.returncode == 0, listed.stderr
    assert [line.split("|")[0] for line in listed.stdout.splitlines()[1:]] == ["4242"]
