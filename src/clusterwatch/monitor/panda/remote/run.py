"""One run of the remote harvester builder: the queue configuration (a file, or through the
NERSC IRI API), the PanDA server's rows, the record, and where it goes.

Settings are checked before anything is read (ConfigError, exit 78): the PanDA database
settings, the key, the token file. A source that fails after that (the database, a table,
the IRI API, a malformed configuration) is that part's error field in a record that is still
built and stored; `failed` names them so the command exits 1.

The record is stored through ingest's own steps, the ones a POST takes: the schema and key
check, the clock horizon, then `store_record` (history, the "latest" rule, the page indexes).
"""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional

from clusterwatch.errors import ConfigError, RunError
from clusterwatch.monitor.panda.iri.client import view_file
from clusterwatch.monitor.panda.iri.errors import IriError
from clusterwatch.monitor.panda.iri.settings import check_view_target, read_token_file
from clusterwatch.monitor.panda.panda_settings import URL_SETTING, panda_database
from clusterwatch.monitor.panda.remote.builder import ServerRows, build_record
from clusterwatch.monitor.panda.remote.harvester_tables import read_server_rows
from clusterwatch.monitor.panda.remote.limits import QueueConfig
from clusterwatch.monitor.panda.server_rows import SourceFailed
from clusterwatch.reporter.monitor_surface import (
    QueueConfigError,
    decode_queue_config,
    load_queue_config,
    parse_queue_config,
)

TABLES = ("harvester_instances", "harvester_workers", "harvester_dialogs",
          "harvester_metrics", "harvester_worker_stats")


@dataclass(frozen=True)
class IriSource:
    """Where the NERSC IRI API has the queue configuration, and the token file."""

    url: str
    resource: str
    path: str
    token_file: str


def add_builder_arguments(options: Any) -> None:
    """--harvester-id, --queue-config and the four --iri-* options on `options` (a parser or
    an argument group): remote_harvester_report takes them, register_harvester keeps them."""
    options.add_argument("--harvester-id", metavar="ID",
                         help="the harvester instance's id, e.g. Perlmutter_test_1")
    options.add_argument("--queue-config", metavar="FILE",
                         help="the harvester's panda_queueconfig.json, a local copy")
    options.add_argument("--iri-url", metavar="URL",
                         help="the NERSC IRI API, e.g. https://api.iri.nersc.gov/api/v1")
    options.add_argument("--iri-resource", metavar="ID", help="the file system's resource id")
    options.add_argument("--iri-path", metavar="PATH",
                         help="the queue configuration's absolute path at NERSC")
    options.add_argument("--iri-token-file", metavar="FILE",
                         help="a mode-600 file holding the IRI API's bearer token (read at "
                              "each run; only its path is ever kept)")


def iri_source(url: Optional[str], resource: Optional[str], path: Optional[str],
               token_file: Optional[str]) -> Optional[IriSource]:
    """The IRI source the four options give (None: none given); ConfigError for some only."""
    given = (url, resource, path, token_file)
    if not any(given):
        return None
    if url and resource and path and token_file:
        return IriSource(url, resource, path, token_file)
    raise ConfigError("--iri-url, --iri-resource, --iri-path and --iri-token-file go "
                      "together: give all four")


def check_builder(harvester_id: str, iri: Optional[IriSource]) -> None:
    """ConfigError for a harvester id or IRI target no run could use (the token aside, which
    is read at each run): build checks them, and register_harvester before keeping them."""
    if not harvester_id.strip() or not harvester_id.isprintable() or len(harvester_id) > 50:
        raise ConfigError("--harvester-id: give the harvester's id (at most 50 characters), "
                          "e.g. Perlmutter_test_1")
    if iri is not None:
        check_view_target(iri.url, iri.resource, iri.path)


def check_not_a_reporters_key(key: str) -> None:
    """ConfigError when `key` belongs to a host reporter: a built record stored under it would
    stand as that harvester's latest until its reporter posts again (a typo in --key)."""
    from clusterwatch.monitor.core.models import HostTokenKey, RegisteredHarvester

    if RegisteredHarvester.objects.filter(key=key, remote=False).exists():
        raise ConfigError(f"--key {key}: registered as a reporting harvester (its reporter "
                          "posts its record); `register_harvester KEY --remote ...` first if "
                          "its record is to be built from the PanDA server")
    if HostTokenKey.objects.filter(key=key, token__revoked_at__isnull=True).exists():
        raise ConfigError(f"--key {key}: a host token may post this key's record, so a reporter "
                          "reports it; a remote harvester's key has no host token")


@dataclass(frozen=True)
class Outcome:
    record: dict[str, Any]
    failed: tuple[str, ...]  # the sources that failed, for the exit status and stderr


def build(environ: Mapping[str, str], key: str, harvester_id: str,
          queue_file: Optional[str], iri: Optional[IriSource],
          now: Optional[dt.datetime] = None) -> Outcome:
    """The record of `harvester_id` under `key`; ConfigError before anything is read."""
    from clusterwatch.monitor.ingest.tokens import valid_key  # Django models: set up by now

    database = panda_database(environ)
    if database is None:
        raise ConfigError(f"{URL_SETTING} is not set: the remote builder reads the PanDA "
                          "server's database")
    if not valid_key(key):
        raise ConfigError(f"--key: {key[:80]!r} is not a valid key (letters, digits, . _ -)")
    check_not_a_reporters_key(key)
    check_builder(harvester_id, iri)
    if (queue_file is None) == (iri is None):
        raise ConfigError("give the queue configuration as --queue-config FILE, or as "
                          "--iri-url, --iri-resource, --iri-path and --iri-token-file")
    token = ""
    if iri is not None:
        token = read_token_file(iri.token_file)
    started = time.monotonic()
    when = now or dt.datetime.now(dt.timezone.utc)
    if queue_file is not None:
        config, source = _from_file(queue_file), queue_file
    else:
        assert iri is not None
        config, source = _from_iri(iri, token), f"IRI {iri.resource}:{iri.path}"
    rows = read_server_rows(database, harvester_id, when)
    record = build_record(harvester_id, key, rows, config, when, queue_config_source=source,
                          collect_seconds=time.monotonic() - started)
    return Outcome(record, _failed(rows, config))


def store(key: str, record: dict[str, Any], size_bytes: int) -> bool:
    """Stores `record` as ingest would; whether it became the key's latest."""
    from clusterwatch.monitor.core import sqlite_tuning
    from clusterwatch.monitor.ingest import body, horizon, store, validation
    from clusterwatch.monitor.ingest.errors import Rejection

    try:
        # A POST's body checks too: values from the PanDA database (a metrics document) may
        # hold what the schema allows but no database stores (NUL, a lone surrogate, inf).
        body.parse_object(json.dumps(record).encode("ascii"))
        horizon.check_not_ahead(validation.check_record(record, key))
    except Rejection as refused:  # the builder's fault, not the operator's
        raise RunError(f"the record was refused: {refused.error}: {refused.detail}") from None
    try:
        with sqlite_tuning.write_lock():
            _, latest = store.store_record(key, record, size_bytes)
    except store.AlreadyStored as stored:  # two runs in one second over unchanged rows
        return store.is_latest(stored.report)
    return latest


def _from_file(path: str) -> QueueConfig:
    try:
        return parse_queue_config(load_queue_config(path))
    except QueueConfigError as exc:
        return SourceFailed(str(exc))


def _from_iri(iri: IriSource, token: str) -> QueueConfig:
    source = f"IRI {iri.resource}:{iri.path}"
    try:
        data = view_file(iri.url, iri.resource, iri.path, token)
        return parse_queue_config(decode_queue_config(data, source))
    except (IriError, QueueConfigError) as exc:
        return SourceFailed(str(exc))


def _failed(rows: ServerRows, config: QueueConfig) -> tuple[str, ...]:
    parts = (rows.instances, rows.workers, rows.dialogs, rows.metrics, rows.worker_stats)
    failed = [f"{table}: {part.reason}" for table, part in zip(TABLES, parts)
              if isinstance(part, SourceFailed)]
    if isinstance(config, SourceFailed):  # a file's reasons name it already
        failed.append(config.reason if config.reason.startswith("queue configuration")
                      else f"queue configuration: {config.reason}")
    return tuple(failed)
