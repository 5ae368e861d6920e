"""What the integration chains share: a harvester's cron runs of the built zipapp against a
monitor under gunicorn (`Scenario`), and the `monitor shell` snippets that make the operator
and print a host's latest stored record."""

from __future__ import annotations

import dataclasses
import math
import os
import re
import subprocess
import time
from pathlib import Path

from clusterwatch.loopback.harvester_scenario import Harvester
from clusterwatch.loopback.http_recorder import HttpRecorder
from clusterwatch.loopback.monitor_server import MonitorServer

REPORTER_TIMEOUT_S = 60
LINE_SPAN_S = 0.45  # a cycle's first line is logged up to 0.42 s before its moment
# Only what cron would give the reporter: no proxy (the monitor is on loopback) and none of
# the caller's monitor or reporter settings.
_NOT_PASSED = re.compile(r"^(?:CLUSTERWATCH_|SWF_|DJANGO_)|proxy$", re.IGNORECASE)
# `monitor shell -c` snippets: the operator (password from CW_TEST_PASSWORD), and the latest
# stored records of a host key (`LATEST % key`) as JSON.
CREATE_OPERATOR = """
import os
from django.contrib.auth.models import User
from clusterwatch.monitor.core.operators import set_operator
set_operator(User.objects.create_user("operator", password=os.environ["CW_TEST_PASSWORD"]), True)
"""
LATEST = """
import json
import re
from clusterwatch.monitor.core.models import LatestReport
print(json.dumps([row.report.record for row in LatestReport.objects.filter(key=%r)]))
"""


@dataclasses.dataclass
class Scenario:
    """The running parts and what has been said so far (for the leak checks)."""

    server: MonitorServer
    slack: HttpRecorder
    host: Harvester
    python3: str
    app: Path
    volume: str
    token: str = ""
    outputs: list[str] = dataclasses.field(default_factory=list)
    last_run_ended: float = 0.0
    next_run_at: float = 0.0

    def interval(self) -> tuple[float, float]:
        """(start, end) for the harvester's lines before the next run: from the end of the
        previous run to a whole second at least a second away, when the next one starts."""
        self.next_run_at = math.floor(max(self.last_run_ended, time.time()) + 1.0) + 1.0
        return self.last_run_ended + LINE_SPAN_S, self.next_run_at - 0.05

    def report(self) -> None:
        """One cron run of the zipapp; exit 0 means the record (and any backlog) posted."""
        # collected_at has whole seconds and "latest" moves only to a newer one, so a run
        # starts in a later second than the previous one, and after the lines it is to
        # read were dated: a wait on the clock (under 2 s), not a guess.
        if self.last_run_ended:
            start_at = max(self.next_run_at, math.floor(self.last_run_ended) + 1.0)
            time.sleep(max(0.0, start_at - time.time()))
        environ = {name: value for name, value in os.environ.items()
                   if not _NOT_PASSED.search(name)}
        done = subprocess.run(
            [self.python3, str(self.app), *self.host.reporter_args([self.volume])],
            env=environ, capture_output=True, text=True, timeout=REPORTER_TIMEOUT_S,
            check=False, stdin=subprocess.DEVNULL)
        self.last_run_ended = time.time()
        self.outputs.append(done.stdout + done.stderr)
        assert self.token not in done.stdout + done.stderr, "the reporter printed its token"
        assert done.returncode == 0, f"reporter exit {done.returncode}: {done.stderr[-2000:]}"

    def manage(self, *arguments: str) -> str:
        done = self.server.manage(*arguments)
        self.outputs.append(done.stdout + done.stderr)
        return done.stdout
