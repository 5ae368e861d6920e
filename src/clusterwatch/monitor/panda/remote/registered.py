"""`remote_harvester_report --registered`: the record of every remote key of the harvester
registry, built and stored in turn from what its entry keeps (`registry.Builder`), as the
timer runs it.

One key failing never stops the others. Each key ends as one `KeyOutcome`: 0 stored, 1 a
source failed (the record is stored with that source's error) or the record was refused,
78 its entry is misconfigured (no harvester id, no queue configuration or half the IRI
options, a token file others can read) or the PanDA database settings are. The run's exit
status is the worst of them: 78, then 1, then 0.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from clusterwatch.errors import EXIT_CONFIG, EXIT_FAILURE, EXIT_OK, ConfigError, RunError
from clusterwatch.monitor.core.registry import Registration
from clusterwatch.monitor.panda.remote.run import build, iri_source, store

_UNSET = ("registered without what the builder needs: clusterwatch monitor register_harvester "
          "{key} --remote --harvester-id ID --queue-config FILE (or the four --iri-* options)")


@dataclass(frozen=True)
class KeyOutcome:
    key: str
    status: int  # EXIT_OK, EXIT_FAILURE or EXIT_CONFIG
    line: str  # what stderr says of this key


def build_registered(environ: Mapping[str, str],
                     entries: Iterable[Registration]) -> list[KeyOutcome]:
    """Builds and stores the record of each remote entry of `entries`, in their order."""
    return [_one(environ, entry) for entry in entries if entry.remote]


def worst(outcomes: Iterable[KeyOutcome]) -> int:
    """The run's exit status: a misconfigured entry first, then a failed source."""
    statuses = {outcome.status for outcome in outcomes}
    for status in (EXIT_CONFIG, EXIT_FAILURE):
        if status in statuses:
            return status
    return EXIT_OK


def _one(environ: Mapping[str, str], entry: Registration) -> KeyOutcome:
    key, wanted = entry.key, entry.builder
    try:
        if not wanted.harvester_id:
            raise ConfigError(_UNSET.format(key=key))
        iri = iri_source(wanted.iri_url, wanted.iri_resource, wanted.iri_path,
                         wanted.iri_token_file)
        outcome = build(environ, key, wanted.harvester_id, wanted.queue_config or None, iri)
        text = json.dumps(outcome.record, indent=1)
        latest = store(key, outcome.record, len(text.encode("utf-8")))
    except ConfigError as exc:
        return KeyOutcome(key, EXIT_CONFIG, f"{key}: configuration error: {exc}")
    except RunError as exc:  # the record was refused
        return KeyOutcome(key, EXIT_FAILURE, f"{key}: {exc}")
    said = f"{key}: stored the record of {wanted.harvester_id}" + (
        "" if latest else " (not the latest)")
    if outcome.failed:
        return KeyOutcome(key, EXIT_FAILURE, f"{said}; {len(outcome.failed)} source(s) "
                          f"failed: " + "; ".join(outcome.failed))
    return KeyOutcome(key, EXIT_OK, said)
