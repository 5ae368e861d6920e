"""`alarms_status`: open alarms, each channel's queue and dead letters, the last run, the lease."""

from __future__ import annotations

from typing import IO, Any

from clusterwatch.monitor.alarms import lease as run_lease
from clusterwatch.monitor.alarms import outbox_store, wording
from clusterwatch.monitor.core.models import Alarm
from clusterwatch.notify.outbox_status import (
    RECENT_ATTEMPTS,
    ChannelWording,
    outbox_sections,
    write_channels,
)


def _wording(now: float) -> ChannelWording:
    return ChannelWording(
        no_channels="channels: none (alarms are recorded, not sent; add [[channels]] to the "
                    "alarms config)",
        when=lambda t: wording.utc_age(t, now),
        last_delivered=True,
        dead_letter_advice="dead letters were rejected for good by their channel: fix the "
                           "channel, then run `clusterwatch monitor redeliver_alarms`",
    )


def summary(now: float, recent: int = RECENT_ATTEMPTS) -> dict[str, Any]:
    outbox = outbox_store.load()
    holder = run_lease.current_holder()
    return {
        "last_run": outbox_store.last_run(),
        "lease": None if holder is None else {
            "holder": holder.holder,
            "acquired_at": holder.acquired_at.timestamp() if holder.acquired_at else None,
            "expires_at": holder.expires_at.timestamp() if holder.expires_at else None,
        },
        "open_alarms": [
            {"target": alarm.target, "status": alarm.status, "detail": alarm.detail,
             "since": alarm.opened_at.timestamp(), "incident": alarm.incident}
            for alarm in Alarm.objects.filter(closed_at__isnull=True).order_by("target")
        ],
        "recently_closed": [
            {"target": alarm.target, "detail": alarm.close_detail,
             "closed": alarm.closed_at.timestamp(), "incident": alarm.incident}
            for alarm in Alarm.objects.filter(closed_at__isnull=False)
            .order_by("-closed_at")[:recent]
            if alarm.closed_at is not None
        ],
        **outbox_sections(outbox, now, recent),
    }


def write_text(data: dict[str, Any], now: float, out: IO[str]) -> None:
    run = data["last_run"]
    if run:
        out.write(f"last run: {wording.utc_age(run['t'], now)}: {run.get('keys', 0)} keys, "
                  f"{run.get('raised', 0)} raised, {run.get('recovered', 0)} recovered, "
                  f"channels: {', '.join(run.get('channels') or []) or 'none'}\n")
    else:
        out.write("last run: never\n")
    if data["lease"]:
        lease = data["lease"]
        out.write(f"running now: {run_lease.describe(lease['holder'])}, lease until "
                  f"{wording.utc(lease['expires_at'] or now)}\n")
    alarms = data["open_alarms"]
    out.write(f"open alarms: {len(alarms)}\n")
    for item in alarms:
        out.write(f"  {item['target']} ({item['status']}) since "
                  f"{wording.utc_age(item['since'], now)}, incident {item['incident']}\n"
                  f"    {item['detail']}\n")
    closed = data["recently_closed"][:5]
    if closed:
        out.write("recently recovered:\n")
    for item in closed:
        out.write(f"  {item['target']} at {wording.utc_age(item['closed'], now)}, incident "
                  f"{item['incident']}\n    {item['detail']}\n")
    write_channels(data["channels"], out, _wording(now))

