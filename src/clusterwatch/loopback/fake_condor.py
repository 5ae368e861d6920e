"""A stand-in `condor_status`: a shell script that prints a prepared machines file.

Put the directory first on PATH (or pass the script's path) to run the watch against it.
It uses `cat`, so a 100,000-line answer costs what reading the file costs.
"""

from __future__ import annotations

import shlex
from pathlib import Path

ARGV_LOG = "condor_status.argv"


def write_fake_condor_status(
    directory: Path, machines_file: Path, exit_code: int = 0, sleep: float = 0
) -> Path:
    """Write an executable `directory/condor_status`; return its path.

    Each run appends its arguments, tab-separated, as one line to `directory/condor_status.argv`,
    then waits `sleep` seconds, prints `machines_file` (read at run time, so a test may change
    it between runs) and exits with `exit_code`. The sleep runs detached from the script's
    output, so a caller that kills the script on a timeout is not kept waiting for EOF.
    """
    if not 0 <= exit_code <= 255:
        raise ValueError(f"exit_code must be 0-255, not {exit_code}")
    if sleep < 0:
        raise ValueError(f"sleep must not be negative, not {sleep}")
    directory = Path(directory).absolute()
    directory.mkdir(parents=True, exist_ok=True)
    argv_log = shlex.quote(str(directory / ARGV_LOG))
    lines = [
        "#!/bin/sh",
        "# Fake condor_status written by clusterwatch.loopback.fake_condor.",
        f"(IFS=$(printf '\\t'); printf '%s\\n' \"$*\") >> {argv_log}",
    ]
    if sleep > 0:
        lines.append(f"sleep {sleep:.3f} </dev/null >/dev/null 2>&1")
    lines += [
        f"cat {shlex.quote(str(Path(machines_file).absolute()))} || exit 2",
        f"exit {exit_code}",
    ]
    script = directory / "condor_status"
    script.write_text("\n".join(lines) + "\n", encoding="utf-8")
    script.chmod(0o755)
    return script


def recorded_argv(directory: Path) -> list[list[str]]:
    """The arguments of each run so far, oldest first (empty when it never ran)."""
    try:
        text = (Path(directory) / ARGV_LOG).read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    return [line.split("\t") if line else [] for line in text.splitlines()]
