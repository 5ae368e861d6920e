"""What the admission tests share: the fixture files, the default patterns compiled, and an
admission section as the real reporter builds it from those files."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Optional

from clusterwatch.reporter.admission_collect import AdmissionSettings, build_section
from clusterwatch.reporter.launcher_stderr import (
    DEFAULT_LIFETIME_PATTERN,
    DEFAULT_STARTUP_PATTERN,
    LIFETIME_GROUPS,
    STARTUP_GROUPS,
    compile_patterns,
)

FILES = Path(__file__).resolve().parents[1] / "reporter" / "admission_files"
STARTUP = compile_patterns([DEFAULT_STARTUP_PATTERN], STARTUP_GROUPS, "--startup-pattern")
LIFETIME = compile_patterns([DEFAULT_LIFETIME_PATTERN], LIFETIME_GROUPS, "--lifetime-pattern")
BASE = "https://h.example.org/logs"
# (worker, status, nativeExitCode, event log): three refusals (two on one slot, one grid),
# a SIGTERM cancellation, an error and a finished worker.
ENDS = ((1, "failed", 73, "v23_refusal.log"), (2, "failed", 73, "v23_refusal.log"),
        (3, "failed", 73, "grid_refusal.log"), (4, "cancelled", None, "v23_sigterm.log"),
        (5, "failed", 64, "v23_error.log"), (6, "finished", 0, "v23_ok.log"))


def built_section(tmp_path: Path, queue: str,
                  ends: tuple[tuple[int, str, Optional[int], str], ...] = ENDS
                  ) -> dict[str, Any]:
    """The section the reporter builds for `ends` of `queue`, each with the full stderr."""
    shutil.copytree(FILES, tmp_path / "26-10-22_13", dirs_exist_ok=True)
    submitters = {queue: {"logBaseURL": BASE, "logDir": str(tmp_path)}}
    workers = [{"workerID": n, "computingSite": queue, "status": status, "nativeExitCode": code,
                "startTime": "2026-10-22T13:10:00Z", "endTime": "2026-10-22T13:14:00Z",
                "batchLog": f"{BASE}/26-10-22_13/{log}",
                "stdErr": f"{BASE}/26-10-22_13/stderr_refusal.err"}
               for n, status, code, log in ends]
    return build_section(workers, submitters, {}, AdmissionSettings())[0]
