"""benchmarks/bench_usage_mail.py runs end to end at its smoke size (a real Prometheus with
backfilled jobs, the fake sacct, aiosmtpd, the console script), so the benchmark cannot rot,
and its figures say what the fix is for: every email once, over one SMTP connection, each
PDF drawn once. Its time is printed, not judged here."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.components import need_binary

BENCH = Path(__file__).resolve().parents[3] / "benchmarks" / "bench_usage_mail.py"


def test_it_mails_a_small_mass_ending_end_to_end(tmp_path: Path) -> None:
    need_binary("prometheus")
    need_binary("promtool")
    environ = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("CLUSTERWATCH_") and name != "DJANGO_SETTINGS_MODULE"
    }
    done = subprocess.run(
        [sys.executable, str(BENCH), "--quick", "--workdir", str(tmp_path / "bench")],
        capture_output=True,
        text=True,
        timeout=300,
        env=environ,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert "emails: 10 received for 10 jobs, 0 twice; exit 0" in done.stdout
    assert (
        "SMTP connections: 1; 10 PDFs drawn, 0 from the render cache, over 1 SMTP connection"
        in done.stdout
    )
    assert "ms wall and" in done.stdout and "target: 1,000 emails < 300 s" in done.stdout


def test_it_refuses_a_batch_of_no_emails() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH), "--emails", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2 and "--emails" in done.stderr
