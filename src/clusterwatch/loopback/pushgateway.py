"""A real Prometheus Pushgateway on 127.0.0.1 for tests, started like the services in
`services` (free port, log file, stopped when the `with` block ends).

Debian's build persists to /var/lib/prometheus by default: here nothing is persisted, so
every start is empty.
"""

from __future__ import annotations

import contextlib
import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Optional

from clusterwatch.loopback.services import (
    LOOPBACK,
    STARTUP_TIMEOUT,
    MissingComponent,
    Service,
    _running,
    require_binary,
)

BINARY = "prometheus-pushgateway"  # Debian's name; upstream tarballs call it pushgateway
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def pushgateway_binary() -> str:
    for name in (BINARY, "pushgateway"):
        try:
            return require_binary(name)
        except MissingComponent:
            continue
    raise MissingComponent(
        BINARY, f"install it with: sudo apt-get install --no-install-recommends {BINARY}")


@contextlib.contextmanager
def pushgateway(
    workdir: Path,
    *,
    binary: Optional[str] = None,
    startup_timeout: float = STARTUP_TIMEOUT,
) -> Iterator[Service]:
    """A Pushgateway without persistence; its log is `workdir`/pushgateway.log."""
    exe = binary or pushgateway_binary()
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)

    def command(port: int) -> list[str]:
        return [exe, f"--web.listen-address={LOOPBACK}:{port}", "--persistence.file="]

    with _running(
        "pushgateway", command, "/-/ready", workdir / "pushgateway.log", startup_timeout
    ) as service:
        yield service


def groups(url: str) -> list[dict[str, str]]:
    """The grouping labels of every group the gateway at `url` holds."""
    with _OPENER.open(f"{url.rstrip('/')}/api/v1/metrics", timeout=5.0) as response:
        answer = json.loads(response.read())
    return [dict(group["labels"]) for group in answer["data"]]


def metrics_text(url: str) -> str:
    """What Prometheus would scrape from the gateway."""
    with _OPENER.open(f"{url.rstrip('/')}/metrics", timeout=5.0) as response:
        return str(response.read().decode("utf-8"))
