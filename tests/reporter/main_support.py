"""What the whole-run tests of the reporter share: a job_fetcher log line, the check of a
record against the shipped JSON Schema, and the newest record a run left in the buffer."""

from __future__ import annotations

import json
from typing import Any

import jsonschema

from clusterwatch.reporter.buffer import Buffer
from clusterwatch.reporter.record import load_schema
from tests.support.harvester_host import Host

VALIDATOR = jsonschema.Draft202012Validator(load_schema())

FETCH_OK = ("{t},507 panda.log.job_fetcher: INFO     run <queueName=BNL_PanDA_1> got 35 jobs "
            "for prodSourceLabel=managed rtype=None with OK  : took 2.816 sec\n")


def validate(record: dict[str, Any]) -> None:
    errors = sorted(VALIDATOR.iter_errors(record), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:10])


def newest_buffered(host: Host) -> dict[str, Any]:
    """The newest record a run left in the host's buffer, validated."""
    buffer = Buffer(str(host.state))
    record: dict[str, Any] = json.loads(buffer.read(buffer.names()[-1]))
    validate(record)
    return record
