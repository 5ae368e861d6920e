"""`clusterwatch monitor remote_harvester_report --key KEY --harvester-id ID ...`: the record
of a harvester no reporter can run beside, built from the PanDA server's database and its
queue configuration, stored under KEY as ingest stores a posted record (clusterwatch.monitor
.panda.remote_report). Exit 0 stored or printed; 1 a source failed (the record is still
stored, that source an error field) or the monitor's database failed; 78 configuration error.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from clusterwatch.errors import ConfigError, RunError
from clusterwatch.monitor.panda.remote_report import IriSource, build, store


class Command(BaseCommand):
    help = ("Build the host record of a remote harvester (e.g. Perlmutter's) from the PanDA "
            "server's database (CLUSTERWATCH_PANDA_DATABASE_URL) and its queue configuration "
            "(--queue-config FILE, or --iri-url, --iri-resource, --iri-path and "
            "--iri-token-file), and store it under --key as ingest does. Exit 0 stored or "
            "printed, 1 a source failed (the record is stored with its error), "
            "78 configuration error.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--key", required=True,
                            help="the key to store the record under, e.g. perlmutter-harvester")
        parser.add_argument("--harvester-id", required=True,
                            help="the harvester instance's id, e.g. Perlmutter_test_1")
        parser.add_argument("--print", action="store_true", dest="print_only",
                            help="print the record as JSON and store nothing")
        parser.add_argument("--queue-config", metavar="FILE",
                            help="the harvester's panda_queueconfig.json, a local copy")
        parser.add_argument("--iri-url", metavar="URL",
                            help="the NERSC IRI API, e.g. https://api.iri.nersc.gov/api/v1")
        parser.add_argument("--iri-resource", metavar="ID", help="the file system's resource id")
        parser.add_argument("--iri-path", metavar="PATH",
                            help="the queue configuration's absolute path at NERSC")
        parser.add_argument("--iri-token-file", metavar="FILE",
                            help="a mode-600 file holding the IRI API's bearer token")

    def handle(self, *args: Any, **options: Any) -> None:
        iri_options = [options[name] for name in ("iri_url", "iri_resource", "iri_path",
                                                  "iri_token_file")]
        iri = None
        if any(value is not None for value in iri_options):
            if any(value is None for value in iri_options):
                raise ConfigError("--iri-url, --iri-resource, --iri-path and --iri-token-file "
                                  "go together: give all four")
            iri = IriSource(*iri_options)
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
