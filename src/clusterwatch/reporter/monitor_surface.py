"""What the monitor takes from the reporter: its one door into this package.

The monitor validates the record against the reporter's schema and builds the same sections
for a harvester no reporter can run beside (monitor/panda/remote), with the reporter's own
rules so that both records mean the same. Everything it needs is named here and nowhere else
(tests/test_architecture.py holds the monitor to it), so a reporter refactor that breaks the
monitor fails at this one import instead of somewhere in the monitor's pages.

Standard library and Python 3.6 like the rest of the reporter: the zipapp carries this file
too, unused.
"""

from clusterwatch.reporter import SCHEMA_VERSION
from clusterwatch.reporter.condor_events import MAX_REASON_CHARS, SOURCE_DIAG, SOURCE_NONE
from clusterwatch.reporter.harvester_db import (
    CANDIDATE_LIMIT,
    CANDIDATE_WINDOW_S,
    FINAL_STATUSES,
    LIVE_STATUSES,
    not_finished_read,
    workers_ended_part,
)
from clusterwatch.reporter.queue_config import EffectiveQueue, QueueConfigSet, parse_queue_config
from clusterwatch.reporter.queue_config_file import (
    QueueConfigError,
    decode_queue_config,
    json_kind,
    load_queue_config,
)
from clusterwatch.reporter.queue_status import FATAL, queue_status_section, unreadable_section
from clusterwatch.reporter.record import SCHEMA_FILE, group_not_finished

# The package holding the record's JSON Schema (SCHEMA_FILE) as data, for importlib.resources.
SCHEMA_PACKAGE = "clusterwatch.reporter"

__all__ = [
    "CANDIDATE_LIMIT",
    "CANDIDATE_WINDOW_S",
    "FATAL",
    "FINAL_STATUSES",
    "LIVE_STATUSES",
    "MAX_REASON_CHARS",
    "SCHEMA_FILE",
    "SCHEMA_PACKAGE",
    "SCHEMA_VERSION",
    "SOURCE_DIAG",
    "SOURCE_NONE",
    "EffectiveQueue",
    "QueueConfigError",
    "QueueConfigSet",
    "decode_queue_config",
    "group_not_finished",
    "json_kind",
    "load_queue_config",
    "not_finished_read",
    "parse_queue_config",
    "queue_status_section",
    "unreadable_section",
    "workers_ended_part",
]
