"""The usage reports' settings, read from the environment once per process.

CLUSTERWATCH_PROMETHEUS_URL       base URL of a Prometheus-compatible query API (Prometheus,
                                  Thanos, VictoriaMetrics); unset: the usage reports are off
CLUSTERWATCH_SACCT                the sacct program (default `sacct` on PATH)
CLUSTERWATCH_ACCOUNTING           `sacct` (default) or `slurmdb` (the restricted view)
CLUSTERWATCH_USAGE_THRESHOLDS     TOML file with a [thresholds] table (docs/usage.md)
CLUSTERWATCH_SCRAPE_INTERVAL_S    the exporter's scrape interval (default 30)
CLUSTERWATCH_PROMETHEUS_TIMEOUT_S deadline of one report's queries together (default 10)
CLUSTERWATCH_USAGE_ACCOUNT_ACCESS 1/true: members of a job's account see its report

A bad value is a SettingError (a ConfigError) whose one-line message names the variable
(exit 78).
"""

from __future__ import annotations

import functools
import os
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from clusterwatch.monitor.core import prefixed_settings
from clusterwatch.monitor.core.secrets import SettingError
from clusterwatch.monitor.usage.analysis.thresholds import Thresholds, load_thresholds

ACCOUNTING_KINDS = ("sacct", "slurmdb")


@dataclass(frozen=True)
class UsageConfig:
    prometheus_url: str
    sacct_program: str
    accounting: str
    thresholds: Thresholds
    scrape_interval_s: float
    prometheus_timeout_s: float
    account_access: bool
    cache_dir: Path


def usage_enabled(environ: Optional[Mapping[str, str]] = None) -> bool:
    env = os.environ if environ is None else environ
    return bool(env.get("CLUSTERWATCH_PROMETHEUS_URL", "").strip())


def read_config(environ: Mapping[str, str], data_dir: Path) -> UsageConfig:
    url = environ.get("CLUSTERWATCH_PROMETHEUS_URL", "").strip()
    if not url:
        raise SettingError("CLUSTERWATCH_PROMETHEUS_URL is not set: the usage reports are off")
    _check_url(url)
    accounting = environ.get("CLUSTERWATCH_ACCOUNTING", "").strip() or "sacct"
    if accounting not in ACCOUNTING_KINDS:
        raise SettingError(f"CLUSTERWATCH_ACCOUNTING must be one of "
                          f"{', '.join(ACCOUNTING_KINDS)}, not {accounting[:40]!r}")
    thresholds_file = environ.get("CLUSTERWATCH_USAGE_THRESHOLDS", "").strip()
    return UsageConfig(
        prometheus_url=url.rstrip("/"),
        sacct_program=environ.get("CLUSTERWATCH_SACCT", "").strip() or "sacct",
        accounting=accounting,
        thresholds=load_thresholds(Path(thresholds_file) if thresholds_file else None),
        scrape_interval_s=_seconds(environ, "CLUSTERWATCH_SCRAPE_INTERVAL_S", 30.0),
        prometheus_timeout_s=_seconds(environ, "CLUSTERWATCH_PROMETHEUS_TIMEOUT_S", 10.0),
        account_access=_flag(environ, "CLUSTERWATCH_USAGE_ACCOUNT_ACCESS"),
        cache_dir=data_dir / "usage-cache",
    )


@functools.lru_cache(maxsize=1)
def get_config() -> UsageConfig:
    """The process's configuration (the environment does not change under a running server)."""
    from django.conf import settings

    return read_config(os.environ, Path(settings.DATA_DIR))


def _check_url(url: str) -> None:
    # Never quote the URL itself in the message: it may carry credentials.
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SettingError("CLUSTERWATCH_PROMETHEUS_URL must be an http:// or https:// URL "
                          "with a host, e.g. http://prometheus.example.org:9090")


def _seconds(environ: Mapping[str, str], name: str, default: float) -> float:
    return prefixed_settings.seconds(environ, name, default, most=86400)


def _flag(environ: Mapping[str, str], name: str) -> bool:
    return prefixed_settings.flag({name: environ.get(name, "").strip()}, name)
