from __future__ import annotations

import json

from clusterwatch.monitor.usage.analysis.figures import analyse
from clusterwatch.monitor.usage.analysis.rules import check
from clusterwatch.monitor.usage.analysis.summary_json import USAGE_KEYS, usage_document
from tests.monitor.usage.usage_support import GiB, MiB, good_series, one, record

# The interface: scripts and tests rely on these keys being there.
REQUIRED = ("jobid", "user", "account", "partition", "state", "start", "end", "elapsed_s",
            "cpus_allocated", "cpu_efficiency", "memory_requested_bytes", "memory_peak_bytes",
            "memory_efficiency", "samples", "warnings")


def test_the_document_has_every_key_of_the_interface_and_is_plain_json() -> None:
    job = record(memory_requested_bytes=8 * GiB)
    summary = analyse(job, good_series(memory_rss_bytes=[one(lambda t: 200 * MiB)]))
    document = usage_document(job, summary, check(job, summary))
    assert set(REQUIRED) <= set(document)
    assert tuple(document) == USAGE_KEYS
    decoded = json.loads(json.dumps(document))
    assert decoded["start"] == "2024-03-01T12:00:00Z" and decoded["end"] == "2024-03-01T13:00:00Z"
    assert decoded["cpu_efficiency"] == 0.975 and decoded["samples"] == 120
    assert decoded["memory"]["accounting_max_rss_bytes"] == 3 * GiB
    (warning,) = decoded["warnings"]
    assert set(warning) == {"code", "message", "advice", "figures"}
    assert warning["code"] == "memory_over_request"
    assert warning["figures"]["memory_peak_bytes"] == 200 * MiB


def test_what_was_not_measured_is_null_not_zero() -> None:
    job = record(state="RUNNING", end=None, max_rss_bytes=None, total_cpu_s=None)
    document = json.loads(json.dumps(usage_document(job, analyse(job, None), ())))
    assert document["running"] is True and document["end"] is None
    assert document["cpu_efficiency"] is None and document["memory_peak_bytes"] is None
    assert document["memory_efficiency"] is None and document["samples"] == 0
    assert document["warnings"] == [] and document["notes"]
