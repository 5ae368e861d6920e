"""`clusterwatch watch discover`: add newly observed targets to the inventories, never remove.

Meant for a 10-minute timer. A source that fails leaves its inventory untouched.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Optional

from clusterwatch.watch.condor import query_machines
from clusterwatch.watch.config import WatchConfig
from clusterwatch.watch.inventory import GPUS_FILE, NODES_FILE, add_entries, read_inventory
from clusterwatch.watch.prometheus import discovery_query, query_gpu_files

log = logging.getLogger(__name__)


@dataclass
class DiscoveryResult:
    added_nodes: list[str] = field(default_factory=list)
    added_gpus: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def discover(config: WatchConfig, now: float) -> DiscoveryResult:
    result = DiscoveryResult()
    nodes_path = config.config_dir / NODES_FILE
    gpus_path = config.config_dir / GPUS_FILE
    read_inventory(nodes_path)  # both must exist, as for the poll
    read_inventory(gpus_path)

    nodes = query_machines(config.condor_status, config.condor_timeout_s)
    error: Optional[str] = nodes.error
    if error is None:
        result.added_nodes = add_entries(nodes_path, _usable(nodes.machines), now)
    else:
        result.errors.append(f"condor_status: {error}")

    gpus = query_gpu_files(config.prometheus_url, discovery_query(config.prometheus_job),
                           now, config.prometheus_timeout_s)
    if gpus.error is None:
        instances = set(gpus.mtimes) | set(gpus.invalid)
        result.added_gpus = add_entries(gpus_path, _usable(instances), now)
    else:
        result.errors.append(f"Prometheus: {gpus.error}")
    for name in result.added_nodes:
        log.info("added execute node %s to %s", name, nodes_path)
    for name in result.added_gpus:
        log.info("added GPU worker %s to %s", name, gpus_path)
    return result


def _usable(names: Iterable[str]) -> list[str]:
    """Names that survive the round trip through a one-name-a-line file."""
    usable = []
    for name in names:
        if name and not name.startswith("#") and not any(ch.isspace() for ch in name):
            usable.append(name)
        else:
            log.warning("ignoring observed name %r: not usable as an inventory line", name)
    return usable
