"""`clusterwatch monitor alarm_ack ALARM --comment TEXT [--author NAME]` ("I'm on it") and
`alarm_ack ALARM --undo`: acknowledge an open alarm, or take the acknowledgement back.

ALARM is its incident id, its target (`panda_unreachable:pandaharvester01`) or a key with one
open alarm. The acknowledgement belongs to the incident: the alarm goes on as before (its
recovery is delivered) and the key's next incident starts unacknowledged. Exit 0 done; 1 no
such open alarm, or it is already acknowledged (not, with --undo); 2 a usage error (no
comment, one too long or with control characters, a key with several open alarms), one line,
nothing stored.
"""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from clusterwatch.monitor.alarms import operations, wording
from clusterwatch.monitor.site.management.commands._usage import login_name, one_line_usage


class Command(BaseCommand):
    help = "Acknowledge an open alarm (who is on it, and why), or take that back with --undo."

    def create_parser(self, prog_name: str, subcommand: str, **kwargs: Any) -> CommandParser:
        return one_line_usage(super().create_parser(prog_name, subcommand, **kwargs))

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("alarm", metavar="ALARM",
                            help="incident id, target, or a key with one open alarm")
        parser.add_argument("--comment", default=None, help="what you are doing about it")
        parser.add_argument("--author", default=None, help="who (default: your login name)")
        parser.add_argument("--undo", action="store_true",
                            help="withdraw the acknowledgement (someone else should look)")

    def handle(self, *args: Any, **options: Any) -> None:
        now = time.time()
        author = " ".join((options["author"] or login_name()).split())
        comment = " ".join((options["comment"] or "").split())
        if options["undo"] and options["comment"] is not None:
            raise CommandError("--undo takes no --comment", returncode=2)
        if not options["undo"] and not comment:
            raise CommandError("an acknowledgement needs a comment (--comment): say what you "
                               "are doing", returncode=2)
        try:
            comment = operations.ack_comment(comment)
        except ValueError as exc:  # too long, or control characters: usage, nothing stored
            raise CommandError(str(exc), returncode=2) from None
        try:
            alarm = operations.find_alarm(options["alarm"])
        except LookupError as exc:
            raise CommandError(str(exc), returncode=1) from None
        except ValueError as exc:  # a key with several open alarms: name one
            raise CommandError(str(exc), returncode=2) from None
        try:
            if options["undo"]:
                alarm = operations.unacknowledge(alarm.incident, by=author, now=now)
            else:
                alarm = operations.acknowledge(alarm.incident, author=author, comment=comment,
                                               now=now)
        except (LookupError, ValueError) as exc:  # closed, or already (not) acknowledged
            raise CommandError(str(exc), returncode=1) from None
        if options["undo"]:
            self.stdout.write(f"{alarm.target} (incident {alarm.incident}): no longer "
                              "acknowledged")
        else:
            self.stdout.write(f"{alarm.target} (incident {alarm.incident}): acknowledged by "
                              f"{alarm.acknowledged_by} at {wording.utc(now)}: "
                              f"{alarm.ack_comment}")
