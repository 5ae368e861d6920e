"""A record against the schema the reporter ships, and against the URL it was posted to.

The schema is the reporter's own file (`clusterwatch.reporter/record-v1.schema.json`, read
with importlib.resources), so both sides validate against the same text. Per process it is
loaded once into two checkers: jsonschema's validator, the reference that explains every
refusal, and a compiled yes/no check (`fastschema`) that accepts a valid 200 KB record in a
few milliseconds instead of jsonschema's ~70.
"""

from __future__ import annotations

import datetime as dt
import functools
import itertools
import json
import logging
from collections.abc import Iterable
from importlib import resources
from typing import Any, Optional

import jsonschema
from jsonschema.exceptions import ValidationError, best_match

from clusterwatch.monitor.ingest import fastschema
from clusterwatch.monitor.ingest.errors import Rejection
from clusterwatch.monitor.record.times import parse_utc
from clusterwatch.reporter.monitor_surface import SCHEMA_FILE, SCHEMA_PACKAGE

log = logging.getLogger(__name__)



def schema_document() -> dict[str, Any]:
    text = resources.files(SCHEMA_PACKAGE).joinpath(SCHEMA_FILE).read_text(encoding="utf-8")
    document: dict[str, Any] = json.loads(text)
    return document


@functools.lru_cache(maxsize=1)
def checkers() -> tuple[Any, Optional[fastschema.Check]]:
    """(jsonschema validator, compiled check or None when the schema needs jsonschema alone)."""
    schema = schema_document()
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    # No format checker: the schema states its formats as patterns, and format checking is
    # both off by default in jsonschema and slow.
    reference = cls(schema)
    try:
        fast: Optional[fastschema.Check] = fastschema.compile_schema(schema)
    except fastschema.UnsupportedSchema as exc:
        log.warning("record schema: %s; validating with jsonschema alone (slower)", exc)
        fast = None
    return reference, fast


def schema_problem(record: Any) -> Optional[str]:
    """None for a valid record, else where and why it fails (`at a.b: ...`)."""
    reference, fast = checkers()
    if fast is not None and fast(record):
        return None
    # The first error is enough to explain (best_match still picks the telling one inside
    # an anyOf), and stopping there keeps a huge invalid record from costing seconds.
    error = best_match(itertools.islice(reference.iter_errors(record), 1))
    if error is None:
        if fast is not None:
            log.warning("the compiled schema check refused a record jsonschema accepts; "
                        "jsonschema decides")
        return None
    return describe(error)


def describe(error: ValidationError) -> str:
    return f"at {where(error.absolute_path)}: {error.message}"


def where(path: Iterable[Any]) -> str:
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text or "the top level"


def check_record(record: dict[str, Any], key: str) -> dt.datetime:
    """The record's `collected_at`, once the record may be stored under `key`.

    400 when it fails the schema or its `collected_at` matches the pattern but is no real
    time (`2026-13-45T99:00:00Z`). 403 when its `host` is not the URL's key: the reporter
    always sends its key (`--report-as`, default the short host name) as `host`, so a
    difference means its monitor URL names another host's key, and storing the record there
    would mix two hosts under one key (their latest records, their disks in the alarms).
    403 is among the statuses the reporter keeps records buffered for (a configuration fix,
    not a bad record), so nothing is lost while the URL is corrected.
    """
    problem = schema_problem(record)
    if problem is not None:
        raise Rejection(400, "schema", problem)
    collected_at = parse_utc(record["collected_at"])
    if collected_at is None:
        raise Rejection(400, "schema", f"at collected_at: {record['collected_at']!r} is not a "
                                       "real UTC time")
    if not _storable(collected_at):
        raise Rejection(400, "schema", f"at collected_at: {record['collected_at']!r} is not "
                                       "between the years 1970 and 9000")
    if record["host"] != key:
        raise Rejection(403, "host_mismatch",
                        f"the record's host {record['host']!r} is not this URL's key {key!r}; "
                        f"post it to /api/host-reports/{record['host']}/ (the reporter's "
                        "--report-as and its monitor URL must name the same key)")
    return collected_at


def _storable(moment: dt.datetime) -> bool:
    # Year 1 and 9999 are valid to strptime but overflow when a database or a page converts
    # them across time zones; no reporter clock is that far off.
    return 1970 <= moment.year <= 9000
