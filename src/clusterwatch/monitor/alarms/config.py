"""The alarms' TOML file (`CLUSTERWATCH_ALARMS_CONFIG`, default `DATA_DIR/alarms.toml`).

    disk_used_percent = 90        # host_disk_space at or above this
    report_interval_s = 300       # default: CLUSTERWATCH_REPORT_INTERVAL_S
    stale_after_intervals = 3     # reporter_stale when silent for more than this many
    never_reported_grace_s = 900  # a key with a token and no record (default: the stale limit)

    [[channels]]                  # the pool watch's syntax (clusterwatch.notify.channel_config)
    type = "slack"
    webhook_file = "slack_webhook"   # mode 600, next to this file

    [[maintenance]]               # notify.silences.parse_windows: holds alerts while open
    comment = "Tuesday reboots"
    matchers = ["key:pandaharvester0*"]   # kinds: key, host, queue, filesystem
    day = "tue"                   # weekly (day, time, duration, zone), or one-off start, end
    time = "06:00"
    duration = "2h"
    zone = "Europe/Zurich"

A missing file means no channels (alarms are still recorded); anything wrong in a file that
exists is a ConfigError naming the file and the setting, never a secret.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from clusterwatch.errors import ConfigError
from clusterwatch.monitor.alarms.holds import KINDS
from clusterwatch.monitor.alarms.observation import RuleSettings
from clusterwatch.notify.channel_config import (
    ChannelConfig,
    parse_channels,
    positive,
    reject_unknown,
)
from clusterwatch.notify.silences import Window, parse_windows
from clusterwatch.toml_file import read_toml

KNOWN_KEYS = {"disk_used_percent", "report_interval_s", "stale_after_intervals",
              "never_reported_grace_s", "channels", "maintenance"}


@dataclass(frozen=True)
class AlarmsConfig:
    path: Path
    found: bool  # False: no file, so no channels
    rules: RuleSettings
    channels: tuple[ChannelConfig, ...] = ()
    windows: tuple[Window, ...] = ()  # [[maintenance]]


def load_config(path: Path, report_interval_s: float) -> AlarmsConfig:
    data = read_toml(path)
    if data is None:
        return AlarmsConfig(path, False, RuleSettings(report_interval_s=report_interval_s))
    try:
        reject_unknown(data, KNOWN_KEYS, "top level")
        percent = data.get("disk_used_percent", 90.0)
        if (isinstance(percent, bool) or not isinstance(percent, (int, float))
                or not 0 < percent <= 100):
            raise ConfigError(f"disk_used_percent must be a number above 0 and at most 100, "
                              f"not {percent!r}")
        grace: Optional[float] = None
        if "never_reported_grace_s" in data:
            grace = positive(data, "never_reported_grace_s")
        intervals = data.get("stale_after_intervals", 3)
        if isinstance(intervals, bool) or not isinstance(intervals, (int, float)) or intervals <= 0:
            raise ConfigError(f"stale_after_intervals must be a positive number, not "
                              f"{intervals!r}")
        rules = RuleSettings(
            disk_used_percent=float(percent),
            report_interval_s=positive(data, "report_interval_s", float(report_interval_s)),
            stale_after_intervals=float(intervals),
            never_reported_grace_s=grace,
        )
        channels = parse_channels(data.get("channels", []), path.parent)
        windows = parse_windows(data.get("maintenance", []), KINDS)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    return AlarmsConfig(path, True, rules, channels, windows)


def windows_or_error(path: Path, report_interval_s: float
                     ) -> tuple[tuple[Window, ...], Optional[str]]:
    """The maintenance windows of `path`, or none and why they could not be read.

    For what only shows holds (alarms_status, the alarms page): a broken alarms.toml is
    evaluate_alarms' error to raise; they still show the silences' holds and say that the
    windows' are unknown.
    """
    try:
        return load_config(path, report_interval_s).windows, None
    except ConfigError as exc:
        return (), str(exc)
