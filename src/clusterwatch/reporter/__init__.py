"""Harvester host reporter: what only a PanDA Harvester host knows, one record per cron run.

Standard library only, Python 3.6.8 compatible (no dataclasses, no `from __future__ import
annotations`, no walrus, no `subprocess.run(capture_output=...)`), imports nothing outside
this package, and ships as one zipapp (`clusterwatch reporter build`).

Modules: `main` (options, one run), `tail` (reading a log on from its saved position, across
rotation) with `log_position` (the typed position and its JSON form in the state file),
`rotated_read` (a log rotated since the last run), `log_generations` (a log's rotated files)
and `line_chunks` (complete lines within a budget), `harvester_log` (log line parsers),
`condor_events` (HTCondor event logs), `harvester_cfg` and `harvester_db` (the harvester's
database) with `mysql_client` (the mysql client: option file, READ ONLY session, typed rows)
and `harvester_regulation` (worker starts, the job-demand cache, the limit in force), `host`
(processes, log freshness, disk volumes), `record` (assembly, schema) with `storable` (text
every database stores), `state` and `state_repair` (the state file, and what a damaged one
still gives), `state_dir` (which directory a key uses on a shared home), `commit` (the
record and its log positions as one step), `delivery` (the pass over the backlog) with
`buffer` (records waiting on disk) and `delivery_counts` (what was lost, until a record
reports it), `answer_policy` (what each HTTP answer means) and `https_post` (the
transport: one post under one deadline), `envfile`, and `queue_config` (the harvester's queue
configuration as it sees it, with `queue_config_file` and `queue_limits`) with
`queue_status` (the record's queue_status section), `submit_template`, `pilot_dispatch` and
`image_policy` (each queue's pilot dispatch read from its submit template), and `admission` with
`admission_collect`, `admission_evidence` and `launcher_stderr` (the last hour's pre-job
refusals, cancellations and errors, with evidence).

`monitor_surface` is the reporter's public surface for the monitor: the schema, the queue
configuration's reading and the harvester database's rules that the monitor (its ingest and
its remote builder) takes, named there and imported from nowhere else.
"""

# 1.9: each fetching queue's failing streak (last_ok_at, failing_since, failing_errors,
# carried across runs in the state) with 1.8's disk volumes (health.volumes: filesystem
# identity, aliases of one filesystem counted once) and the telemetry of 1.3-1.7
# (regulation, admission, queue status, pilot dispatch, image policy); 1.0 was the record
# before them.
REPORTER_VERSION = "1.9.0"
SCHEMA_VERSION = 1


def utc_text(seconds: float) -> str:
    """Epoch seconds as the record writes every time: UTC, `YYYY-MM-DDTHH:MM:SSZ`."""
    import time

    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))
