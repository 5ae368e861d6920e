"""`host_disk_space` and `volume_reading_missing` from a record's `health.volumes`.

One alarm per filesystem, not per mount point: mounts with the same `device`, and those the
reporter marks `{"same_as": mount}`, are one filesystem, named by its shortest mount point
(`/` before `/var`). A mount whose reading failed says nothing about its filesystem: an
open alarm on it stays open, and `volume_reading_missing` says the reading is missing.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Optional

from clusterwatch.monitor.alarms import wording
from clusterwatch.monitor.alarms.observation import (
    DETAIL_CHARS,
    DISK,
    VOLUMES,
    AlarmState,
    Observation,
    RuleSettings,
    split_target,
    target,
)
from clusterwatch.monitor.core.humanize import size_text
from clusterwatch.monitor.record.host_record import HostRecord
from clusterwatch.monitor.record.host_state import VolumeReading


@dataclass(frozen=True)
class Reading:
    """A mount point's reading with every figure the check needs."""

    used_percent: float
    avail_bytes: float
    total_bytes: float
    device: str


@dataclass
class Filesystem:
    mount: str  # the name of its alarm: the shortest mount point with a reading
    reading: Reading
    aliases: list[str] = field(default_factory=list)  # its other mount points

    def named(self) -> str:
        also = f" (also {', '.join(sorted(self.aliases))})" if self.aliases else ""
        return f"{self.mount}{also}"


@dataclass
class Filesystems:
    filesystems: dict[str, Filesystem]  # by alarm mount
    failed: dict[str, str]  # mount -> why its reading failed
    alias_of: dict[str, str]  # alias mount -> alarm mount
    section_error: Optional[str] = None  # the whole section is missing or failed


def read_volumes(record: HostRecord) -> Filesystems:
    volumes = record.health.volumes
    if volumes is None:
        return Filesystems({}, {}, {}, "health.volumes is missing")
    if volumes.error is not None:
        return Filesystems({}, {}, {}, f"health.volumes: {volumes.error}")
    readings: dict[str, Reading] = {}
    failed: dict[str, str] = {}
    same_as: dict[str, str] = {}
    for mount, value in volumes.mounts.items():
        if value is None:
            failed[mount] = "not a reading"
        elif value.same_as is not None:
            same_as[mount] = value.same_as
        elif (reading := _reading(value)) is not None:
            readings[mount] = reading
        else:
            failed[mount] = value.error or "no reading"
    by_device: dict[str, list[str]] = {}
    for mount, reading in readings.items():
        by_device.setdefault(reading.device, []).append(mount)
    filesystems: dict[str, Filesystem] = {}
    alias_of: dict[str, str] = {}
    for mounts in by_device.values():
        first, *others = sorted(mounts, key=lambda m: (len(m), m))
        filesystems[first] = Filesystem(first, readings[first], others)
        alias_of.update((other, first) for other in others)
    for mount, original in same_as.items():
        canonical = alias_of.get(original, original)
        if canonical in filesystems:
            filesystems[canonical].aliases.append(mount)
            alias_of[mount] = canonical
        else:
            failed[mount] = f"same filesystem as {original}, which has no reading"
    return Filesystems(filesystems, failed, alias_of)


def _reading(value: VolumeReading) -> Optional[Reading]:
    if (value.used_percent is None or value.avail_bytes is None or value.total_bytes is None
            or value.device is None):
        return None
    return Reading(value.used_percent, value.avail_bytes, value.total_bytes, value.device)


def observe_disks(
    key: str,
    record: HostRecord,
    evidence_at: float,
    settings: RuleSettings,
    open_targets: Collection[str] = (),
) -> dict[str, Observation]:
    """Both checks for one fresh record; `open_targets` are the alarms open now."""
    volumes = read_volumes(record)
    limit = settings.disk_used_percent
    seen: dict[str, Observation] = {}
    for fs in volumes.filesystems.values():
        used, avail, total = (fs.reading.used_percent, fs.reading.avail_bytes,
                              fs.reading.total_bytes)
        space = f"{used:.1f} % used, {size_text(avail)} left of {size_text(total)}"
        subject = f"{key} {fs.named()}: {space}"
        if used >= limit:
            seen[target(DISK, key, fs.mount)] = Observation(
                AlarmState.FIRING, f"{used:.1f} %", _cut(f"{subject} (alarm at {limit:g} %)"),
                evidence_at)
        else:
            seen[target(DISK, key, fs.mount)] = Observation(
                AlarmState.CLEAR, f"{used:.1f} %", _cut(f"{subject}, below {limit:g} % again"),
                evidence_at)
    unread_open: list[str] = []
    for mount, why in volumes.failed.items():
        name = target(DISK, key, mount)
        seen[name] = Observation(AlarmState.UNKNOWN, "no reading", f"{key} {mount}: {why}",
                                 evidence_at)
        if name in open_targets:
            unread_open.append(mount)
    for name in open_targets:
        check, owner, filesystem = split_target(name)
        if check != DISK or owner != key or filesystem is None or name in seen:
            continue
        mount = filesystem
        if volumes.section_error is not None:
            seen[name] = Observation(AlarmState.UNKNOWN, "no reading",
                                     f"{key} {mount}: no reading", evidence_at)
            unread_open.append(mount)
        elif mount in volumes.alias_of:
            seen[name] = Observation(
                AlarmState.CLEAR, "alias",
                f"{key} {mount}: now counted as {volumes.alias_of[mount]} (the same filesystem)",
                evidence_at)
        else:
            seen[name] = Observation(
                AlarmState.CLEAR, "not watched", f"{key} {mount}: no longer among the volumes the "
                "reporter reads", evidence_at)
    seen[target(VOLUMES, key)] = _volume_reading(key, volumes, unread_open, evidence_at)
    return seen


def _volume_reading(
    key: str, volumes: Filesystems, unread_open: list[str], evidence_at: float
) -> Observation:
    collected = wording.utc(evidence_at)
    if volumes.section_error is not None:
        why = volumes.section_error
    elif not volumes.filesystems:
        why = "no volume could be read: " + _failures(volumes.failed, list(volumes.failed))
    elif unread_open:
        # A missing reading of a filesystem already in alarm must not pass for recovery.
        why = (f"{', '.join(sorted(unread_open))} (disk space alarm open) not read: "
               + _failures(volumes.failed, unread_open))
    else:
        mounts = ", ".join(sorted(volumes.filesystems))
        return Observation(AlarmState.CLEAR, "read",
                           f"{key}: disk volumes are read again ({mounts})", evidence_at)
    return Observation(AlarmState.FIRING, "no reading",
                       _cut(f"{key}: disk volume reading missing in the record collected "
                            f"{collected} — {why}"), evidence_at)


def _failures(failed: Mapping[str, str], mounts: Collection[str]) -> str:
    parts = [f"{mount}: {failed[mount]}" for mount in sorted(mounts) if mount in failed]
    return "; ".join(parts) or "no reading"


def _cut(text: str) -> str:
    return wording.one_line(text, DETAIL_CHARS)
