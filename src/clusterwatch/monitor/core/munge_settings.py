"""Whether the monitor takes MUNGE credentials, and how it decodes them.

Off unless configured: CLUSTERWATCH_MUNGE=1, or CLUSTERWATCH_MUNGE_SOCKET set (the socket of
the monitor host's munged, which must hold the cluster's key); CLUSTERWATCH_MUNGE=0 keeps it
off whatever else is set. CLUSTERWATCH_UNMUNGE names the decoder (default `unmunge` on PATH),
CLUSTERWATCH_MUNGE_TIMEOUT_S its deadline. Read from the environment on each request that
sends a MUNGE credential, as the PanDA view's database setting is, so nothing is cached.
There is no secret among them: the key is munged's, never the monitor's.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Optional

from clusterwatch.monitor.core.prefixed_settings import FALSE, flag, seconds
from clusterwatch.monitor.core.secrets import SettingError
from clusterwatch.monitor.core.unmunge import DEFAULT_TIMEOUT_S

ENABLED = "CLUSTERWATCH_MUNGE"
SOCKET = "CLUSTERWATCH_MUNGE_SOCKET"
PROGRAM = "CLUSTERWATCH_UNMUNGE"
TIMEOUT = "CLUSTERWATCH_MUNGE_TIMEOUT_S"
MOST_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class MungeSettings:
    program: str  # unmunge, by name on PATH or by path
    socket: Optional[str]  # None: unmunge's own default (/run/munge/munge.socket.2)
    timeout_s: float


def munge_settings(environ: Mapping[str, str] = os.environ) -> Optional[MungeSettings]:
    """The settings when MUNGE authentication is on, None when it is off; a SettingError
    (one line, starting with the variable) for a value that cannot be used."""
    values = {name: environ.get(name, "").strip() for name in (ENABLED, SOCKET, PROGRAM,
                                                               TIMEOUT)}
    explicit = values[ENABLED]
    if explicit.lower() in FALSE:
        return None
    if not flag(values, ENABLED) and not values[SOCKET]:
        return None
    socket = values[SOCKET] or None
    if socket is not None and not os.path.isabs(socket):
        raise SettingError(f"{SOCKET} must be an absolute path (munged's socket, e.g. "
                           "/run/munge/munge.socket.2)")
    return MungeSettings(program=values[PROGRAM] or "unmunge", socket=socket,
                         timeout_s=seconds(values, TIMEOUT, DEFAULT_TIMEOUT_S, MOST_TIMEOUT_S))
