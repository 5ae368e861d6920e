"""Watch configuration: the seed-compatible directory layout plus an optional `watch.toml`.

Defaults reproduce the original guide: config in ~/.config/htcondor-watch/ (expected_nodes,
gpu_instances, slack_webhook), state in ~/.local/state/htcondor-watch/. Secrets (webhook
URLs) are read from files of mode 600 and never from the command line.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from clusterwatch.errors import ConfigError
from clusterwatch.notify.channel_config import CHANNEL_TYPES as CHANNEL_TYPES
from clusterwatch.notify.channel_config import (
    MAX_TIMEOUT_S,
    ChannelConfig,
    check_url,
    parse_channels,
)
from clusterwatch.notify.channel_config import positive as _positive
from clusterwatch.notify.channel_config import read_secret as read_secret
from clusterwatch.notify.channel_config import reject_unknown as _reject_unknown
from clusterwatch.notify.channel_config import string as _string
from clusterwatch.notify.silences import Window, parse_windows
from clusterwatch.toml_file import read_toml
from clusterwatch.watch.decisions import DEFAULT_THRESHOLDS, Thresholds
from clusterwatch.watch.holds import MATCHER_KINDS

log = logging.getLogger(__name__)

CONFIG_FILE = "watch.toml"
SLACK_WEBHOOK_FILE = "slack_webhook"


def default_config_dir() -> Path:
    return _xdg_base("XDG_CONFIG_HOME", Path.home() / ".config") / "htcondor-watch"


def default_state_dir() -> Path:
    return _xdg_base("XDG_STATE_HOME", Path.home() / ".local" / "state") / "htcondor-watch"


def _xdg_base(variable: str, fallback: Path) -> Path:
    # The XDG Base Directory spec: an unset, empty or relative value means the default.
    value = os.environ.get(variable, "")
    return Path(value) if os.path.isabs(value) else fallback


@dataclass(frozen=True)
class WatchConfig:
    config_dir: Path
    state_dir: Path
    prometheus_url: str = "http://127.0.0.1:9090"
    prometheus_job: str = "node"
    prometheus_timeout_s: float = 10.0
    condor_status: str = "condor_status"
    condor_timeout_s: float = 15.0
    thresholds: Thresholds = DEFAULT_THRESHOLDS
    channels: tuple[ChannelConfig, ...] = ()
    health_textfile: Optional[Path] = None  # extra copy for node_exporter's textfile dir
    lock_timeout_s: float = 50.0
    windows: tuple[Window, ...] = ()  # [[maintenance]]: hold alerts while one is open


def load_config(
    config_dir: Optional[Path] = None,
    state_dir: Optional[Path] = None,
    prometheus_url: Optional[str] = None,
    condor_status: Optional[str] = None,
) -> WatchConfig:
    """Read `watch.toml` (optional) from the config dir; command-line values win."""
    config_dir = (config_dir or default_config_dir()).expanduser()
    if not config_dir.is_dir():
        raise ConfigError(f"config directory {config_dir} does not exist")
    data = read_toml(config_dir / CONFIG_FILE) or {}
    known = {"state_dir", "prometheus", "condor", "thresholds", "health", "channels",
             "maintenance"}
    _reject_unknown(data, known, CONFIG_FILE)
    prom = _table(data, "prometheus", {"url", "job", "timeout_s"})
    condor = _table(data, "condor", {"status_command", "timeout_s"})
    limits = _table(data, "thresholds", {"fail_s", "recover_s", "max_gap_s", "fresh_s",
                                         "node_silence_s"})
    health = _table(data, "health", {"textfile"})
    thresholds = Thresholds(**{key: _positive(limits, key, 0.0, "[thresholds]")
                               for key in limits})
    if thresholds.fresh_s >= thresholds.fail_s:
        raise ConfigError("thresholds: fresh_s must be below fail_s")
    toml_state_dir = _string(data, "state_dir", "")
    if state_dir is None:
        # Relative paths in watch.toml are taken from the config dir, not from wherever
        # the command runs (/ under systemd).
        state_dir = (config_dir / Path(toml_state_dir).expanduser() if toml_state_dir
                     else default_state_dir())
    textfile = _string(health, "textfile", "[health]")
    # Checked even where a command-line value wins: a wrong file is wrong either way.
    toml_prometheus_url = _string(prom, "url", "[prometheus]", "http://127.0.0.1:9090")
    toml_condor_status = _string(condor, "status_command", "[condor]", "condor_status")
    return WatchConfig(
        config_dir=config_dir,
        state_dir=state_dir.expanduser(),
        prometheus_url=_prometheus_url(prometheus_url, toml_prometheus_url),
        prometheus_job=_label_value(_string(prom, "job", "[prometheus]", "node")),
        prometheus_timeout_s=_positive(prom, "timeout_s", 10.0, "[prometheus]", MAX_TIMEOUT_S),
        condor_status=condor_status or toml_condor_status,
        condor_timeout_s=_positive(condor, "timeout_s", 15.0, "[condor]", MAX_TIMEOUT_S),
        thresholds=thresholds,
        channels=_channels(data, config_dir),
        windows=parse_windows(data["maintenance"], MATCHER_KINDS) if "maintenance" in data
        else (),
        health_textfile=config_dir / Path(textfile).expanduser() if textfile else None,
    )


def _channels(data: dict[str, Any], config_dir: Path) -> tuple[ChannelConfig, ...]:
    raw = data.get("channels")
    if raw is None:
        # Seed layout: a slack_webhook file next to the inventories enables Slack.
        seed = config_dir / SLACK_WEBHOOK_FILE
        return (ChannelConfig("slack", "slack", secret_file=seed),) if seed.exists() else ()
    channels = parse_channels(raw, config_dir)
    seed = config_dir / SLACK_WEBHOOK_FILE
    if seed.exists() and all(c.secret_file != seed for c in channels):
        log.warning("%s exists but no [[channels]] entry uses it: it is ignored", seed)
    return tuple(channels)


def _table(data: dict[str, Any], key: str, allowed: set[str]) -> dict[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise ConfigError(f"[{key}] must be a table")
    _reject_unknown(value, allowed, f"[{key}]")
    return value


def _prometheus_url(option: Optional[str], toml_url: str) -> str:
    """The command line's URL, else watch.toml's; both checked, as any other setting."""
    # The URL may carry credentials (user:password@host): the message does not quote it.
    check_url(toml_url, "[prometheus] url")
    if option:
        check_url(option, "--prometheus-url")
    return option or toml_url


def _label_value(job: str) -> str:
    if not job or any(c in job for c in '"\\\n'):
        raise ConfigError(f"prometheus.job {job!r} cannot be used as a label value")
    return job
