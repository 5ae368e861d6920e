"""`clusterwatch monitor register_harvester KEY [--remote [--harvester-id ID (--queue-config
FILE | --iri-url URL --iri-resource ID --iri-path PATH --iri-token-file FILE)]] [--note TEXT]`:
add a key to the harvester registry (`clusterwatch.monitor.core.registry`), for a remote key with
what `remote_harvester_report --registered` builds its record from. Registering a key again
replaces its entry (its registration time stays). Exit 0 added or updated, 2 a bad key or
options that do not go together or that the builder would refuse."""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from clusterwatch.errors import ConfigError
from clusterwatch.monitor.core import registry
from clusterwatch.monitor.panda.remote.run import add_builder_arguments, check_builder, iri_source


class Command(BaseCommand):
    help = "Register a harvester key the monitor expects a record from."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("key", metavar="KEY", help="the harvester's record key")
        parser.add_argument("--remote", action="store_true",
                            help="its record is built from the PanDA server "
                                 "(remote_harvester_report)")
        parser.add_argument("--note", default="", help="a note shown in the admin")
        builder = parser.add_argument_group(
            "the remote builder's settings (with --remote; remote_harvester_report's options)")
        add_builder_arguments(builder)

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            created = registry.register(options["key"], options["remote"], options["note"],
                                        _builder(options))
        except (ValueError, ConfigError) as exc:
            raise CommandError(str(exc), returncode=2) from None
        kind = "remote" if options["remote"] else "reporting"
        self.stdout.write(f"{'registered' if created else 'updated'} {options['key']} ({kind})")


def _builder(options: dict[str, Any]) -> registry.Builder:
    """The builder's settings as given; ValueError for a shape the builder would refuse."""
    given = registry.Builder(**{name: options[name] or "" for name in registry.BUILDER_FIELDS})
    if given == registry.Builder():
        return given
    # The timer runs elsewhere than where this was typed: files are kept as absolute paths.
    given = dataclasses.replace(given, **{
        name: os.path.abspath(getattr(given, name))
        for name in ("queue_config", "iri_token_file") if getattr(given, name)})
    iri = iri_source(given.iri_url, given.iri_resource, given.iri_path, given.iri_token_file)
    if not given.harvester_id or (iri is None) == (not given.queue_config):
        raise ValueError("a remote key's builder needs --harvester-id ID and either "
                         "--queue-config FILE or the four --iri-* options")
    check_builder(given.harvester_id, iri)  # as the timer's run would refuse them (a 78)
    return given
