"""`clusterwatch monitor remote_harvester_report --key KEY --harvester-id ID ...`: the record
of a harvester no reporter can run beside, built from the PanDA server's database and its
queue configuration, stored under KEY as ingest stores a posted record (clusterwatch.monitor
.panda.remote_report). Exit 0 stored or printed; 1 a source failed (the record is still
stored, that source an error field) or the monitor's database failed; 78 configuration error.

`--registered` (the timer's mode) builds every remote key of the harvester registry in turn
from what its entry keeps (clusterwatch.monitor.panda.remote.registered): a line per key on
stderr; exit 78 if an entry is misconfigured, else 1 if a source failed, else 0.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from clusterwatch.errors import EXIT_CONFIG, EXIT_FAILURE, ConfigError, RunError
from clusterwatch.monitor.core import registry
from clusterwatch.monitor.panda.remote.registered import build_registered, worst
from clusterwatch.monitor.panda.remote.run import add_builder_arguments, build, iri_source, store

_IRI = ("iri_url", "iri_resource", "iri_path", "iri_token_file")
_SINGLE = ("key", "harvester_id", "queue_config", *_IRI)


class Command(BaseCommand):
    help = ("Build the host record of a remote harvester (e.g. Perlmutter's) from the PanDA "
            "server's database (CLUSTERWATCH_PANDA_DATABASE_URL) and its queue configuration "
            "(--queue-config FILE, or --iri-url, --iri-resource, --iri-path and "
            "--iri-token-file), and store it under --key as ingest does. Exit 0 stored or "
            "printed, 1 a source failed (the record is stored with its error), "
            "78 configuration error. --registered builds every remote key of the harvester "
            "registry instead (the timer's mode).")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--registered", action="store_true",
                            help="build every remote key of the harvester registry from what "
                                 "its entry keeps (register_harvester), instead of the "
                                 "options below; a line per key on stderr")
        parser.add_argument("--key",
                            help="the key to store the record under, e.g. perlmutter-harvester")
        parser.add_argument("--print", action="store_true", dest="print_only",
                            help="print the record as JSON and store nothing")
        add_builder_arguments(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        if options["registered"]:
            self._registered(options)
            return
        if options["key"] is None or options["harvester_id"] is None:
            raise CommandError("give --key KEY --harvester-id ID (or --registered)",
                               returncode=2)
        iri = iri_source(*(options[name] for name in _IRI))
        outcome = build(os.environ, options["key"], options["harvester_id"],
                        options["queue_config"], iri)
        text = json.dumps(outcome.record, indent=1, sort_keys=False)
        if options["print_only"]:
            self.stdout.write(text)
        else:
            latest = store(options["key"], outcome.record, len(text.encode("utf-8")))
            self.stdout.write(f"stored the record of {options['harvester_id']} under "
                              f"{options['key']}" + ("" if latest else " (not the latest)"))
        for failed in outcome.failed:
            print(f"clusterwatch: {failed}", file=sys.stderr)
        if outcome.failed:
            raise RunError(f"{len(outcome.failed)} source(s) failed; the record "
                           + ("printed" if options["print_only"] else "stored")
                           + " carries their errors")

    def _registered(self, options: dict[str, Any]) -> None:
        if options["print_only"] or any(options[name] is not None for name in _SINGLE):
            raise CommandError("--registered takes the harvesters from the registry: give "
                               "no other option", returncode=2)
        entries = registry.registered(remote_only=True)
        if not entries:
            print("clusterwatch: no remote harvester is registered (register_harvester KEY "
                  "--remote --harvester-id ID ...)", file=sys.stderr)
        outcomes = build_registered(os.environ, entries)
        for outcome in outcomes:
            print(f"clusterwatch: {outcome.line}", file=sys.stderr)
        status = worst(outcomes)
        bad = ", ".join(outcome.key for outcome in outcomes if outcome.status == status)
        if status == EXIT_CONFIG:
            raise ConfigError(f"{bad}: not built (see the line above for each)")
        if status == EXIT_FAILURE:
            raise RunError(f"{bad}: a source failed or the record was refused (see above)")
