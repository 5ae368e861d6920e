"""`clusterwatch monitor alarm_silence add MATCHER... (--for DURATION | --until TIME) --comment
TEXT [--author NAME]`, `alarm_silence list [--json]`, `alarm_silence expire ID`: the alarms
page's silences for scripts (`alarms.operations`, so both check and store them alike).

MATCHER is KIND:PATTERN, KIND one of key, host, queue, filesystem, PATTERN a shell-style
glob; `add` prints the new silence's id as its last line. Exit 0 done; 1 `expire` of a
silence that does not exist or has ended; 2 a usage error (a bad matcher, duration or time, no
comment), one line, nothing stored.
"""

from __future__ import annotations

import json
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from clusterwatch.monitor.alarms import operations
from clusterwatch.monitor.core.models import AlarmSilence
from clusterwatch.monitor.site.management.commands._usage import (
    UsageParser,
    login_name,
    one_line_usage,
)
from clusterwatch.notify import silences
from clusterwatch.notify.silences import SilenceError


def state_of(row: AlarmSilence, now: float) -> str:
    if row.expired_at is not None and row.expired_at.timestamp() <= now:
        return "expired"
    if row.ends_at.timestamp() <= now:
        return "ended"
    return "active" if row.starts_at.timestamp() <= now else "pending"


def as_json(row: AlarmSilence, now: float) -> dict[str, Any]:
    return {
        "id": row.id, "state": state_of(row, now), "matchers": list(row.matchers),
        "starts_at": row.starts_at.timestamp(), "ends_at": row.ends_at.timestamp(),
        "expired_at": row.expired_at.timestamp() if row.expired_at is not None else None,
        "author": row.author, "comment": row.comment, "created_at": row.created_at.timestamp(),
    }


def as_line(row: AlarmSilence, now: float) -> str:
    """`3f2a9c0d1e4b active key:pandaharvester01 from ... until ... by alice: renewal`."""
    until = (f"expired {silences.utc(row.expired_at.timestamp())}"
             if row.expired_at is not None else f"until {silences.utc(row.ends_at.timestamp())}")
    return (f"{row.id} {state_of(row, now)} {' '.join(row.matchers)} from "
            f"{silences.utc(row.starts_at.timestamp())} {until} by {row.author}: {row.comment}")


class Command(BaseCommand):
    help = ("Silence the monitor's alarms (their incidents still open and close; only the "
            "delivery is held), list the silences, or expire one.")

    def create_parser(self, prog_name: str, subcommand: str, **kwargs: Any) -> CommandParser:
        return one_line_usage(super().create_parser(prog_name, subcommand, **kwargs))

    def add_arguments(self, parser: CommandParser) -> None:
        verbs = parser.add_subparsers(dest="verb", metavar="{add,list,expire}", required=True,
                                      parser_class=UsageParser)
        add = verbs.add_parser("add", help="a new silence; its id is the last line printed")
        add.add_argument("matchers", nargs="+", metavar="MATCHER",
                         help="KIND:PATTERN, KIND one of key, host, queue, filesystem "
                              "(e.g. key:pandaharvester0*, queue:BNL_*)")
        span = add.add_mutually_exclusive_group(required=True)
        span.add_argument("--for", dest="duration", metavar="DURATION",
                          help="how long from now: 90m, 2h, 3d, 1h30m")
        span.add_argument("--until", metavar="TIME",
                          help="when it ends, ISO 8601 with a zone: 2026-12-10T08:00:00Z")
        add.add_argument("--comment", required=True, help="why (shown with every held alarm)")
        add.add_argument("--author", default=None, help="who (default: your login name)")
        listing = verbs.add_parser("list", help="active and recently ended silences")
        listing.add_argument("--json", action="store_true", help="print them as JSON")
        expire = verbs.add_parser("expire", help="end a silence now")
        expire.add_argument("silence_id", metavar="ID", help="the silence's id")

    def handle(self, *args: Any, **options: Any) -> None:
        now = time.time()
        verb = options["verb"]
        if verb == "add":
            self._add(options, now)
        elif verb == "list":
            rows = operations.list_silences(now)
            if options["json"]:
                self.stdout.write(json.dumps([as_json(row, now) for row in rows], indent=2))
                return
            for row in rows:
                self.stdout.write(as_line(row, now))
            if not rows:
                self.stdout.write("no silences")
        else:
            try:
                row = operations.expire_silence(options["silence_id"], now, login_name())
            except (LookupError, SilenceError) as exc:
                raise CommandError(str(exc), returncode=1) from None
            self.stdout.write(f"expired silence {row.id} ({' '.join(row.matchers)}: "
                              f"{row.comment})")

    def _add(self, options: dict[str, Any], now: float) -> None:
        try:
            duration = (silences.parse_duration(options["duration"])
                        if options["duration"] is not None else None)
            until = silences.parse_time(options["until"]) if options["until"] is not None else None
            row = operations.add_silence(
                options["matchers"], duration_s=duration, until=until,
                comment=options["comment"], author=options["author"] or login_name(), now=now)
        except SilenceError as exc:
            raise CommandError(str(exc), returncode=2) from None
        self.stdout.write(as_line(row, now))
        self.stdout.write(row.id)
