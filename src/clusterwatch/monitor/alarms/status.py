"""`alarms_status`: open alarms (each one's hold and acknowledgement), the silences, each
channel's queue and dead letters, the last run, the lease."""

from __future__ import annotations

from collections.abc import Sequence
from typing import IO, Any, Callable, Optional

from clusterwatch.monitor.alarms import holds, outbox_store, silence_store, store, wording
from clusterwatch.monitor.alarms import lease as run_lease
from clusterwatch.monitor.core.models import Alarm
from clusterwatch.notify.outbox_status import (
    RECENT_ATTEMPTS,
    ChannelWording,
    outbox_sections,
    write_channels,
)
from clusterwatch.notify.silences import Hold, Window


def _wording(now: float) -> ChannelWording:
    return ChannelWording(
        no_channels="channels: none (alarms are recorded, not sent; add [[channels]] to the "
                    "alarms config)",
        when=lambda t: wording.utc_age(t, now),
        last_delivered=True,
        dead_letter_advice="dead letters were rejected for good by their channel: fix the "
                           "channel, then run `clusterwatch monitor redeliver_alarms`",
    )


def _hold(hold: Optional[Hold]) -> Optional[dict[str, Any]]:
    return None if hold is None else {"by": hold.by, "author": hold.author,
                                      "comment": hold.comment, "until": hold.until,
                                      "text": hold.describe()}


def _open_alarm(alarm: Alarm, hold: Callable[[str], Optional[Hold]]) -> dict[str, Any]:
    acked = alarm.acknowledged_at
    return {
        "target": alarm.target, "status": alarm.status, "detail": alarm.detail,
        "since": alarm.opened_at.timestamp(), "incident": alarm.incident,
        "alert_held": alarm.alert_held,  # its alert not sent yet
        "held_by": _hold(hold(alarm.target)),  # what holds it now
        "acknowledged": None if acked is None else {
            "by": alarm.acknowledged_by, "at": acked.timestamp(), "comment": alarm.ack_comment},
    }


def summary(now: float, recent: int = RECENT_ATTEMPTS, windows: Sequence[Window] = (),
            windows_error: Optional[str] = None) -> dict[str, Any]:
    """Everything `alarms_status` shows; `windows` from alarms.toml (`windows_error`: why
    they could not be read, so holds by windows are unknown)."""
    outbox = outbox_store.load()
    holder = run_lease.current_holder()
    found = silence_store.silences()
    hold = holds.holder(store.key_facts(), found, windows, now)
    return {
        "last_run": outbox_store.last_run(),
        "lease": None if holder is None else {
            "holder": holder.holder,
            "acquired_at": holder.acquired_at.timestamp() if holder.acquired_at else None,
            "expires_at": holder.expires_at.timestamp() if holder.expires_at else None,
        },
        "open_alarms": [
            _open_alarm(alarm, hold)
            for alarm in Alarm.objects.filter(closed_at__isnull=True).order_by("target")
        ],
        "silences": [{**silence.to_json(), "active": silence.active(now)} for silence in found
                     if silence.ended_at > now],
        "windows": [{"text": window.describe(), "open": window.open_at(now) is not None}
                    for window in windows],
        "windows_error": windows_error,
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
                  f"{_held_words(run)}"
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
        for line in _hold_lines(item):
            out.write(f"    {line}\n")
    _write_silences(data, now, out)
    closed = data["recently_closed"][:5]
    if closed:
        out.write("recently recovered:\n")
    for item in closed:
        out.write(f"  {item['target']} at {wording.utc_age(item['closed'], now)}, incident "
                  f"{item['incident']}\n    {item['detail']}\n")
    write_channels(data["channels"], out, _wording(now))



def _hold_lines(item: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    held_by = item["held_by"]
    if held_by is not None:
        lines.append(held_by["text"] + ("" if item["alert_held"] else
                                         "; its alert went out before"))
    elif item["alert_held"]:
        lines.append("alert held until now: the next run sends it")
    acked = item["acknowledged"]
    if acked is not None:
        lines.append(f"acknowledged by {acked['by']} since {wording.utc(acked['at'])}"
                     + (f": {acked['comment']}" if acked["comment"] else ""))
    return lines


def _write_silences(data: dict[str, Any], now: float, out: IO[str]) -> None:
    found = data["silences"]
    if found:
        out.write(f"silences: {len(found)} (alarm_silence list shows the ended ones too)\n")
    for item in found:
        when = "until" if item["active"] else f"from {wording.utc(item['starts_at'])} until"
        out.write(f"  {item['id']} {' '.join(item['matchers'])} {when} "
                  f"{wording.utc(item['ends_at'])} by {item['author']}: {item['comment']}\n")
    if data["windows_error"]:
        out.write(f"maintenance windows: not read ({data['windows_error']})\n")
    for window in data["windows"]:
        out.write(f"  maintenance {'open' if window['open'] else 'closed'}: "
                  f"{window['text']}\n")


def _held_words(run: dict[str, Any]) -> str:
    """`1 held, 2 released, ` when the run held or released alerts; nothing otherwise."""
    words = [f"{run[name]} {name}" for name in ("held", "released") if run.get(name)]
    return "".join(f"{word}, " for word in words)
