"""Constants and helpers of the IRI client's tests; the fixtures are in conftest.py."""

from __future__ import annotations

from pathlib import Path

TOKEN = "iri-7f3c9a1e5b2d4f60aa81c0ffee"  # distinctive: a leak is found by searching for it
RESOURCE = "59e80c79-4dfd-4c53-9c07-7405685fcd37"  # NERSC's cfs
CONFIG_PATH = "/global/cfs/cdirs/m1234/harvester/panda_queueconfig.json"
CONFIG = b'{"NERSC_Perlmutter_ePIC": {"queueStatus": "online", "site": "P\xc3\xa9rlmutter"}}\n'


def token_file(directory: Path, token: str = TOKEN, mode: int = 0o600) -> Path:
    path = directory / "iri-token"
    path.write_text(token + "\n")
    path.chmod(mode)
    return path
