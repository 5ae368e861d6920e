"""`clusterwatch monitor remote_harvester_report` as its timer runs it, for the tests of the
command (test_remote_harvester_report.py, test_remote_registered.py): a monitor data
directory copied from the migrated one, a PanDA database of the test's own, and the
command run on them with its output checked for the password and the token.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path
from typing import Any, Optional

from clusterwatch.monitor.panda.panda_settings import PASSWORD_SETTING, PandaDatabase
from tests.monitor.panda.iri_support import TOKEN
from tests.monitor.panda.remote_rows import HARVESTER, KEY
from tests.support.monitor_console import CLUSTERWATCH, console_environ, copy_migrated


class Run:
    """One test's monitor data directory and PanDA database, and the command run on them."""

    def __init__(self, tmp_path: Path, migrated: Path, database: PandaDatabase) -> None:
        self.data = copy_migrated(migrated, tmp_path / "data")
        self.tmp_path = tmp_path
        self.database = database
        self.password_file = tmp_path / "panda-password"
        self.password_file.write_text(f"{database.password}\n")
        self.password_file.chmod(0o600)
        self.url = (f"postgresql://{database.user}@127.0.0.1:{database.port}/"
                    f"{database.dbname}")

    def __call__(self, *arguments: str, **environ: str) -> subprocess.CompletedProcess[str]:
        env = {"CLUSTERWATCH_PANDA_DATABASE_URL": self.url,
               PASSWORD_SETTING: str(self.password_file), **environ}
        done = subprocess.run(
            [CLUSTERWATCH, "monitor", "remote_harvester_report", "--key", KEY,
             "--harvester-id", HARVESTER, *arguments], env=console_environ(self.data, env),
            capture_output=True, text=True, timeout=120, check=False)
        secret = self.database.password or ""
        assert secret not in done.stdout + done.stderr and TOKEN not in done.stdout + done.stderr
        assert "Traceback" not in done.stderr
        return done

    def latest(self) -> Optional[dict[str, Any]]:
        with sqlite3.connect(self.data / "monitor.sqlite3") as connection:
            found = connection.execute(
                "SELECT r.record FROM monitor_latestreport l JOIN monitor_hostreport r "
                "ON r.id = l.report_id WHERE l.key = ?", (KEY,)).fetchone()
            count = connection.execute("SELECT count(*) FROM monitor_hostreport").fetchone()
        self.stored = count[0]
        return json.loads(found[0]) if found else None
