"""uid -> user name through the system's user database (NSS), once per uid per 10 minutes.

An unknown uid is shown as its number, so a job of a user missing from NSS is still labelled.
"""

from __future__ import annotations

import pwd
import time
from typing import Callable, Optional

from clusterwatch.jobs.label_text import label_text

TTL_S = 600.0


class UserNames:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._cache: dict[int, tuple[str, float]] = {}

    def name(self, uid: Optional[int]) -> str:
        if uid is None:
            return ""
        now = self._clock()
        cached = self._cache.get(uid)
        if cached is not None and now - cached[1] < TTL_S:
            return cached[0]
        try:
            name = label_text(pwd.getpwuid(uid).pw_name)
        except (KeyError, OverflowError):  # OverflowError: not a uid (SLURM_JOB_UID=10**20)
            name = str(uid)
        self._cache[uid] = (name, now)
        return name
