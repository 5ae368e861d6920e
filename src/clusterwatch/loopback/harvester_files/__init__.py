"""Real-format files of a harvester host, one copy for the demo, the tests and the benchmarks.

`logs/new` and `logs/old` are excerpts of the harvester's component logs (panda-*.log) of
the current and the 2020 generation, `logs/info` one log at INFO level; `condor/` holds
HTCondor job event logs (ISO and legacy formats), the batch logs a worker's `batchLog` points
to. The reporter's tests parse them, and `clusterwatch monitor demo` feeds them to the real
reporter. They are package data, shipped in the wheel, so the demo runs from an installed
clusterwatch as well as from a checkout.
"""

from __future__ import annotations

from pathlib import Path

HARVESTER_FILES = Path(__file__).resolve().parent
CONDOR_LOGS = HARVESTER_FILES / "condor"
HARVESTER_LOGS = HARVESTER_FILES / "logs"


def harvester_file(*parts: str) -> Path:
    """A file or folder of this package's data; FileNotFoundError names a broken install."""
    path = HARVESTER_FILES.joinpath(*parts)
    if not path.exists():
        raise FileNotFoundError(f"{path} not found: this clusterwatch installation lacks its "
                                "package data (clusterwatch.loopback.harvester_files); "
                                "reinstall it")
    return path
