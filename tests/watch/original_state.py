"""State files as the original pool-watch script wrote them, for the takeover tests.

`{"targets": {TARGET: {"last", "bad", "good", "first_stamp", "alerted"}}, "pending": [LINE],
"retry_after": T}`: see clusterwatch.watch.state_original for what each field means.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

from clusterwatch.notify.event import format_utc


def target(
    last: Optional[float],
    bad: Optional[float] = None,
    good: Optional[float] = None,
    first_stamp: Optional[float] = None,
    alerted: Any = False,
) -> dict[str, Any]:
    return {"last": last, "bad": bad, "good": good, "first_stamp": first_stamp, "alerted": alerted}


def line(t: float, action: str, target_name: str, status: str) -> str:
    """One of the original's message lines, e.g. `2026-10-02 14:16:00Z ALERT gpu:... (stale)`."""
    return f"{format_utc(t)} {action} {target_name} ({status})"


def original_state(
    targets: dict[str, Any], pending: list[Any], retry_after: Any = None
) -> dict[str, Any]:
    return {"targets": targets, "pending": pending, "retry_after": retry_after}


def write_original(state_dir: Path, data: dict[str, Any] | bytes) -> bytes:
    """Put the original's file where both programs keep it (mode 700 dir, 600 file)."""
    state_dir.mkdir(mode=0o700, exist_ok=True)
    raw = data if isinstance(data, bytes) else json.dumps(data, indent=1).encode()
    path = state_dir / "state.json"
    path.write_bytes(raw)
    path.chmod(0o600)
    return raw
