"""Where matplotlib keeps its configuration and font list when the monitor draws.

matplotlib writes a font list (a scan of the system's fonts: about a second) under
MPLCONFIGDIR, else under ~/.config and ~/.cache. A service account's home is often read-only
or absent: matplotlib then still draws, but makes a temporary directory in every process,
scans the fonts again in each and logs a warning. `use_matplotlib_dir` gives it a directory
of the monitor's own instead (mode 700). It sets MPLCONFIGDIR, matplotlib's one setting for
this, so it must run before matplotlib is first imported; a MPLCONFIGDIR set by the service
wins.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Optional

_log = logging.getLogger(__name__)


def use_matplotlib_dir(directory: Path) -> Optional[Path]:
    """The directory matplotlib will use, or None when it decides alone (matplotlib already
    imported, or `directory` cannot be made: it then falls back to a temporary one)."""
    chosen = os.environ.get("MPLCONFIGDIR")
    if chosen:
        return Path(chosen)
    if "matplotlib" in sys.modules:
        return None
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as problem:
        _log.warning("matplotlib directory %s cannot be made (%s): matplotlib will use a "
                     "temporary one", directory, problem)
        return None
    os.environ["MPLCONFIGDIR"] = str(directory)
    return directory
