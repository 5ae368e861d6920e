"""`clusterwatch monitor redeliver_alarms`: queue dead letters again, after fixing a channel."""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from clusterwatch.errors import EXIT_USAGE
from clusterwatch.monitor.alarms import outbox_store
from clusterwatch.monitor.alarms.lease import Lease, LeaseBusy

LEASE_S = 30.0
POLL_S = 0.5


class Command(BaseCommand):
    help = ("Queue the alarm messages a channel rejected for good (dead letters) again, once "
            "the channel is fixed; the next evaluate_alarms run sends them.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--channel", metavar="NAME", help="only this channel")
        parser.add_argument("--wait", type=float, default=60.0, metavar="SECONDS",
                            help="how long to wait for a running evaluate_alarms (default 60)")

    def handle(self, *args: Any, **options: Any) -> None:
        # The outbox is changed only under the lease, as evaluate_alarms changes it.
        lease = Lease(ttl_s=LEASE_S, clock=time.time)
        deadline = time.monotonic() + max(0.0, options["wait"])
        while True:
            try:
                lease.acquire()
                break
            except LeaseBusy as exc:
                if time.monotonic() >= deadline:
                    raise CommandError(f"{exc}; try again when it has finished") from None
                time.sleep(POLL_S)
        try:
            with transaction.atomic():
                if not lease.renew():  # first statement: locks the lease row
                    raise CommandError("the alarm lease was taken over meanwhile; try again")
                outbox = outbox_store.load(for_update=True)
                name = options["channel"]
                if name and name not in outbox.channels:
                    known = ", ".join(sorted(outbox.channels)) or "none"
                    raise CommandError(f"no channel named {name!r} in the alarm outbox "
                                       f"(channels: {known})", returncode=EXIT_USAGE)
                count = outbox.requeue_dead(name)
                outbox_store.save(outbox)
        finally:
            lease.release()
        self.stdout.write(f"{count} message(s) queued again; the next evaluate_alarms run "
                          "sends them")
