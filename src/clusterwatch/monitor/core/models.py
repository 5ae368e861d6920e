"""What the monitor stores.

The API tokens of scripts (the usage reports' API and the image-demand API). Ingest: tokens
bound to keys, every posted record (`HostReport`), and three small indexes kept
up to date at ingest so pages never scan old records: the latest record per key (by
`collected_at`, not by arrival), the queues that latest record mentions, and the
worker-to-PandaID pushes seen.
"""

from __future__ import annotations

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models
from django.utils import timezone

from clusterwatch.monitor.core.json_text import CompactJSONEncoder
from clusterwatch.monitor.core.record_keys import KEY_PATTERN


class ApiToken(models.Model):
    """A script's credential for the monitor's APIs, acting as its user with the same
    visibility (`core.api_tokens`). Only a lookup prefix and a SHA-256 digest are stored.

    Made by the usage app (`create_usage_token`), which created the table: moved here in
    Django's state only, the table keeps its name; the usage app's proxy `UsageApiToken`
    keeps the admin's address and permissions.
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                             related_name="api_tokens")
    prefix = models.CharField(max_length=16, unique=True)
    digest = models.CharField(max_length=64)
    note = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "usage_usageapitoken"

    def __str__(self) -> str:
        return f"API token {self.prefix}…"


class HostToken(models.Model):
    """A reporter's credential. Only a lookup prefix and a SHA-256 digest are stored."""

    prefix = models.CharField(max_length=16, unique=True)
    digest = models.CharField(max_length=64)
    created_at = models.DateTimeField(default=timezone.now)
    revoked_at = models.DateTimeField(null=True, blank=True)
    note = models.CharField(max_length=200, blank=True)

    def __str__(self) -> str:
        return f"token {self.prefix}…"

    @property
    def active(self) -> bool:
        return self.revoked_at is None


class HostTokenKey(models.Model):
    """One key (report name, usually a short host name) a token may write."""

    token = models.ForeignKey(HostToken, on_delete=models.CASCADE, related_name="keys")
    key = models.CharField(max_length=128, db_index=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["token", "key"], name="token_key_once")]

    def __str__(self) -> str:
        return str(self.key)


class HostReport(models.Model):
    """One record as posted; kept whole until retention removes it."""

    key = models.CharField(max_length=128)
    collected_at = models.DateTimeField()
    received_at = models.DateTimeField(default=timezone.now)
    size_bytes = models.PositiveIntegerField()
    # written by orjson (json_text); lz4 on PostgreSQL (migration 0012: keep it if the
    # column's type ever changes, which resets it)
    record = models.JSONField(encoder=CompactJSONEncoder)
    token = models.ForeignKey(HostToken, on_delete=models.SET_NULL, null=True, blank=True)
    # SHA-256 of the record's canonical JSON (`ingest.digest`): the unique constraint below
    # is what makes a retry racing its first attempt a duplicate instead of a second row.
    # Null on records stored before it existed (ingest compares those by content).
    digest = models.CharField(max_length=64, null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["key", "-collected_at"], name="report_key_collected"),
            models.Index(fields=["received_at"], name="report_received"),
        ]
        constraints = [
            models.UniqueConstraint(fields=["key", "digest"], name="report_digest_once"),
        ]

    def __str__(self) -> str:
        return f"{self.key} @ {self.collected_at:%Y-%m-%d %H:%M:%SZ}"


class LatestReport(models.Model):
    """The newest record of a key by `collected_at`; a late backlog record never replaces it."""

    key = models.CharField(max_length=128, primary_key=True)
    report = models.ForeignKey(HostReport, on_delete=models.CASCADE, related_name="+")
    collected_at = models.DateTimeField()
    # What the hosts overview shows of the record (`record.slices.host_summary`), so the page
    # never reads the whole record; null on a row no ingest or migration has filled. lz4 on
    # PostgreSQL, as `HostReport.record`.
    summary = models.JSONField(null=True, blank=True, encoder=CompactJSONEncoder)

    def __str__(self) -> str:
        return str(self.key)


class LatestQueue(models.Model):
    """A PanDA queue named in the latest record of a key (replaced with that record)."""

    key = models.CharField(max_length=128)
    queue = models.CharField(max_length=200, db_index=True)
    report = models.ForeignKey(HostReport, on_delete=models.CASCADE, related_name="+")
    # What the queue page shows of the record for this queue (`record.slices.queue_slice`);
    # lz4 on PostgreSQL, as `HostReport.record`.
    page_slice = models.JSONField(null=True, blank=True, encoder=CompactJSONEncoder)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["key", "queue"], name="latest_queue_once")]


class JobPush(models.Model):
    """A worker a harvester submitted for a PanDA job (push mode), from `recent_pushes`."""

    pandaid = models.BigIntegerField(db_index=True)
    workerid = models.BigIntegerField()
    queue = models.CharField(max_length=200)
    key = models.CharField(max_length=128)
    at = models.DateTimeField()
    report = models.ForeignKey(HostReport, on_delete=models.CASCADE, related_name="+")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["key", "pandaid", "workerid"], name="push_once"),
        ]


# Alarms (see clusterwatch.monitor.alarms): incidents, the notification outbox and the run
# lease. The outbox is `clusterwatch.notify.outbox.Outbox` as JSON in one row, so the pool
# watch's delivery rules apply unchanged; every change to it is made under a row lock.


class Alarm(models.Model):
    """One incident: opened when a condition holds, closed by an explicit recovery."""

    target = models.CharField(max_length=400)  # "<check>:<key>[:<filesystem>]"
    kind = models.CharField(max_length=64)  # the check: host_disk_space, ...
    key = models.CharField(max_length=128, db_index=True)
    incident = models.CharField(max_length=32, unique=True)
    status = models.CharField(max_length=200)
    detail = models.TextField()  # the alert's message (kept current while it is open)
    opened_at = models.DateTimeField()
    # collected_at of the record the alarm was raised on (null: raised on no record, e.g. a
    # key that never reported); only a newer record may recover it.
    evidence_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(default=timezone.now)
    closed_at = models.DateTimeField(null=True, blank=True)
    close_detail = models.TextField(blank=True)
    # True while the incident's alert is held back by a silence or maintenance window (not
    # appended to the outbox); a recovery is appended only for an incident whose alert was.
    alert_held = models.BooleanField(default=False)
    # The acknowledgement ("I'm on it"): belongs to its incident, never cleared.
    acknowledged_by = models.CharField(max_length=150, blank=True)
    acknowledged_at = models.DateTimeField(null=True, blank=True)
    ack_comment = models.TextField(blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["target"], condition=models.Q(closed_at__isnull=True),
                                    name="alarm_open_once"),
        ]
        indexes = [models.Index(fields=["closed_at", "target"], name="alarm_open_target")]

    def __str__(self) -> str:
        return f"{self.target} ({'closed' if self.closed_at else 'open'})"


class AlarmSilence(models.Model):
    """A silence over the monitor's alarms (notify.silences.Silence as a row)."""

    id = models.CharField(max_length=12, primary_key=True)  # 12 hex characters, random
    matchers = models.JSONField(default=list)  # ["key:pandaharvester0*", ...]
    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField()
    author = models.CharField(max_length=150)
    comment = models.TextField()
    created_at = models.DateTimeField(default=timezone.now)
    expired_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"silence {self.id}"


class AlarmOutbox(models.Model):
    """The single row holding the alarm outbox and a summary of the last run."""

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    outbox = models.JSONField(default=dict)
    last_run = models.JSONField(default=dict)
    updated_at = models.DateTimeField(default=timezone.now)


class AlarmRunLease(models.Model):
    """Who is evaluating and delivering alarms now: one run at a time across every host."""

    name = models.CharField(max_length=64, primary_key=True)
    holder = models.CharField(max_length=200, blank=True)  # "host/pid/run id"
    acquired_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)


class RegisteredHarvester(models.Model):
    """A harvester key the monitor expects a record from (the harvester registry).

    A model rather than a setting: a remote harvester has no host token, so without it nothing
    says its key should report; staff add one in the admin or with `register_harvester`
    without restarting gunicorn or the timers, and every reader (hosts page, queue pages,
    alarms, `list_harvesters --remote` for the remote builder) takes the same rows.
    """

    # The key rule (core.record_keys), so the admin refuses what ingest would.
    key = models.CharField(max_length=128, primary_key=True, validators=[RegexValidator(
        rf"\A{KEY_PATTERN}\Z", "letters, digits, '.', '_' and '-' only, "
        "starting with a letter or digit")])
    # Its record is built by the monitor from the PanDA server (remote_harvester_report).
    remote = models.BooleanField(default=False)
    registered_at = models.DateTimeField(default=timezone.now)
    note = models.CharField(max_length=200, blank=True)
    # What `remote_harvester_report --registered` builds a remote key's record from: the
    # harvester instance, and its queue configuration as a file or through the NERSC IRI API
    # (the token file's path only: the token itself is never stored here). Blank otherwise.
    harvester_id = models.CharField(max_length=50, blank=True)
    queue_config = models.CharField(max_length=500, blank=True)
    iri_url = models.CharField(max_length=500, blank=True)
    iri_resource = models.CharField(max_length=200, blank=True)
    iri_path = models.CharField(max_length=500, blank=True)
    iri_token_file = models.CharField(max_length=500, blank=True)

    def __str__(self) -> str:
        return f"{self.key}{' (remote)' if self.remote else ''}"
