"""`alarms_status`: open alarms, each channel's queue and dead letters, the last run, the lease."""

from __future__ import annotations

from typing import IO, Any

from clusterwatch.monitor.alarms import lease as run_lease
from clusterwatch.monitor.alarms import outbox_store, wording
from clusterwatch.monitor.models import Alarm
from clusterwatch.notify.event import Event


def summary(now: float, recent: int = 20) -> dict[str, Any]:
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
        "channels": outbox.channel_summaries(now),
        "recent_attempts": [attempt.to_json() for attempt in outbox.history[-recent:]],
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
    if not data["channels"]:
        out.write("channels: none (alarms are recorded, not sent; add [[channels]] to the "
                  "alarms config)\n")
    for name, channel in data["channels"].items():
        state = f"{len(channel['pending'])} pending, {len(channel['dead_letters'])} dead letters"
        if channel["rate_limited_until"]:
            state += f", rate-limited until {wording.utc(channel['rate_limited_until'])}"
        if channel["last_error"]:
            state += (f", last error {channel['last_error']} at "
                      f"{wording.utc_age(channel['last_error_t'], now)}")
        if channel["last_success_t"]:
            state += f", last delivered {wording.utc_age(channel['last_success_t'], now)}"
        out.write(f"channel {name}: {state}\n")
        for label, key in (("pending", "pending"), ("DEAD", "dead_letters")):
            for event in channel[key]:
                out.write(f"  {label}: {Event.from_json(event).line()}\n")
    if any(channel["dead_letters"] for channel in data["channels"].values()):
        out.write("dead letters were rejected for good by their channel: fix the channel, "
                  "then run `clusterwatch monitor redeliver_alarms`\n")

