"""Where `clusterwatch usage` gets its figures: the environment over a system file.

The file, /etc/clusterwatch/usage.toml (CLUSTERWATCH_USAGE_CONFIG names another), is what a
centre installs on its login nodes once, so researchers type no setting:

    [usage]
    monitor_url = "https://monitor.example.org"   # ask the monitor (kept summaries)
    prometheus_url = "http://prometheus:9090"     # or compute locally
    sacct = "/usr/bin/sacct"
    thresholds = "/etc/clusterwatch/usage-thresholds.toml"
    scrape_interval_s = 30
    prometheus_timeout_s = 10
    munge_socket = "/run/munge/munge.socket.2"

Each key is the monitor's variable of the same meaning (CLUSTERWATCH_PROMETHEUS_URL ...),
and a variable set in the environment wins over the file, so the local computation reads
exactly what the monitor reads (usage/config.read_config). A monitor URL, when there is one,
is asked first: its kept summaries outlive Prometheus' retention.
"""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from clusterwatch.errors import ConfigError
from clusterwatch.monitor.core import prefixed_settings
from clusterwatch.monitor.usage.config import UsageConfig, read_config
from clusterwatch.toml_file import read_toml

SYSTEM_FILE = Path("/etc/clusterwatch/usage.toml")
TOKEN_FILE = Path("~/.config/clusterwatch/usage-token")  # `create_usage_token` output, mode 600

# key of [usage] -> the variable it stands for
FILE_KEYS = {
    "prometheus_url": "CLUSTERWATCH_PROMETHEUS_URL",
    "sacct": "CLUSTERWATCH_SACCT",
    "thresholds": "CLUSTERWATCH_USAGE_THRESHOLDS",
    "scrape_interval_s": "CLUSTERWATCH_SCRAPE_INTERVAL_S",
    "prometheus_timeout_s": "CLUSTERWATCH_PROMETHEUS_TIMEOUT_S",
    "monitor_url": "CLUSTERWATCH_MONITOR_URL",
    "token_file": "CLUSTERWATCH_USAGE_TOKEN_FILE",
    "munge_socket": "CLUSTERWATCH_MUNGE_SOCKET",
    "monitor_timeout_s": "CLUSTERWATCH_MONITOR_TIMEOUT_S",
}


@dataclass(frozen=True)
class MonitorSettings:
    url: str  # base URL, no trailing slash; never shown (it may carry credentials)
    token_file: Optional[Path]  # a usage token's file; None: MUNGE
    munge_socket: Optional[str]
    timeout_s: float


@dataclass(frozen=True)
class TerminalSettings:
    monitor: Optional[MonitorSettings]  # asked when set
    local: Optional[UsageConfig]  # accounting + Prometheus on this host, when configured
    local_error: Optional[str]  # why `local` is None although a Prometheus URL was given


def read_settings(environ: Optional[Mapping[str, str]] = None, *,
                  monitor_url: Optional[str] = None,
                  token_file: Optional[str] = None) -> TerminalSettings:
    """The settings; ConfigError (exit 78) for a file or value that is wrong, or when no
    source at all is configured. `monitor_url` and `token_file` are the command's options."""
    env = dict(os.environ if environ is None else environ)
    merged = {**_file_settings(env), **{k: v for k, v in env.items() if v.strip()}}
    if monitor_url is not None:
        merged["CLUSTERWATCH_MONITOR_URL"] = monitor_url
    if token_file is not None:
        merged["CLUSTERWATCH_USAGE_TOKEN_FILE"] = token_file
    monitor = _monitor(merged)
    local, local_error = None, None
    if merged.get("CLUSTERWATCH_PROMETHEUS_URL", "").strip():
        try:
            # The monitor's own reader; its cache directory is the monitor's and unused here.
            local = read_config(merged, Path("."))
        except ConfigError as exc:
            if monitor is None:
                raise
            local_error = str(exc)
    if monitor is None and local is None:
        raise ConfigError(
            "no source of figures: set CLUSTERWATCH_MONITOR_URL (or --monitor URL) to ask the "
            "monitor, or CLUSTERWATCH_PROMETHEUS_URL to compute here from sacct and "
            f"Prometheus, or write them in {_system_file(env)}")
    return TerminalSettings(monitor, local, local_error)


def _system_file(environ: Mapping[str, str]) -> Path:
    named = environ.get("CLUSTERWATCH_USAGE_CONFIG", "").strip()
    return Path(named) if named else SYSTEM_FILE


def _file_settings(environ: Mapping[str, str]) -> dict[str, str]:
    path = _system_file(environ)
    document = read_toml(path)
    if document is None:
        if environ.get("CLUSTERWATCH_USAGE_CONFIG", "").strip():
            raise ConfigError(f"CLUSTERWATCH_USAGE_CONFIG: {path} does not exist")
        return {}
    unknown = sorted(set(document) - {"usage"})
    if unknown:
        raise ConfigError(f"{path}: unknown table or key {unknown[0]!r} (only [usage])")
    table: Any = document.get("usage", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: usage must be a table ([usage])")
    found = {}
    for key, value in table.items():
        if key not in FILE_KEYS:
            raise ConfigError(f"{path}: [usage] has no key {key!r} (known: "
                              f"{', '.join(sorted(FILE_KEYS))})")
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise ConfigError(f"{path}: [usage] {key} must be a string or a number")
        found[FILE_KEYS[key]] = str(value)
    return found


def _monitor(merged: Mapping[str, str]) -> Optional[MonitorSettings]:
    url = merged.get("CLUSTERWATCH_MONITOR_URL", "").strip()
    if not url:
        return None
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError("CLUSTERWATCH_MONITOR_URL must be an http:// or https:// URL with a "
                          "host, e.g. https://monitor.example.org")
    named = merged.get("CLUSTERWATCH_USAGE_TOKEN_FILE", "").strip()
    default = TOKEN_FILE.expanduser()
    token_file = Path(named).expanduser() if named else (default if default.exists() else None)
    timeout_s = prefixed_settings.seconds(merged, "CLUSTERWATCH_MONITOR_TIMEOUT_S", 30.0,
                                          most=3600)
    return MonitorSettings(url.rstrip("/"), token_file,
                           merged.get("CLUSTERWATCH_MUNGE_SOCKET", "").strip() or None,
                           timeout_s)
