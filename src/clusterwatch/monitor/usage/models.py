"""What the usage reports keep: each ended job's summary, the end-of-job emails, the links
that share one job's report (`share_links`); and the admin's face of the API tokens (the
model is the kernel's, `core.models.ApiToken`)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from clusterwatch.monitor.core.models import ApiToken


class KeptSummary(models.Model):
    """An ended job's usage document, kept so the API, pages and email still answer after
    Prometheus' retention has dropped the series. Written once, when the job's figures are
    final (its end plus two scrape intervals), never updated."""

    jobid = models.CharField(max_length=32, unique=True)
    user = models.CharField(max_length=64, db_index=True)
    account = models.CharField(max_length=64, db_index=True)
    state = models.CharField(max_length=32)
    start = models.DateTimeField(null=True)
    end = models.DateTimeField(null=True, db_index=True)
    cpu_efficiency = models.FloatField(null=True)
    memory_efficiency = models.FloatField(null=True)
    # Space-separated warning codes: the staff page filters on them without parsing JSON.
    warning_codes = models.CharField(max_length=400, blank=True)
    document = models.JSONField()
    # The metrics with a plot when it was kept (plot_metrics.measured_metrics): the job page
    # then asks Prometheus only whether the series are still there, not for all 18 of them.
    # Null for a summary kept before it was added: its page reads the series as before.
    plot_metrics = models.JSONField(null=True)
    kept_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["user", "end"], name="kept_user_end")]

    def __str__(self) -> str:
        return f"job {self.jobid} ({self.user})"


class UsageApiToken(ApiToken):
    """The API tokens as the admin has always shown them, at /admin/usage/usageapitoken/ with
    the usage app's permissions: a proxy, so the rows are the kernel's."""

    class Meta:
        proxy = True

    def __str__(self) -> str:
        return f"usage token {self.prefix}…"  # the admin's wording, unchanged


class UsageMail(models.Model):
    """The end-of-job email of one job: the outbox row, written before any send is tried, so
    a failure to send never loses it. One row per job (whatever queued it: Slurm's MailProg,
    the poller, or a command); runs claim a row with one conditional UPDATE before sending,
    so two runs at once never send it twice."""

    PENDING, SENT, FAILED, SKIPPED = "pending", "sent", "failed", "skipped"
    STATES = [(PENDING, "pending"), (SENT, "sent"), (FAILED, "failed"), (SKIPPED, "skipped")]

    jobid = models.CharField(max_length=32, unique=True)
    user = models.CharField(max_length=64)
    recipient = models.CharField(max_length=254)
    # mailprog, poller or command: the poller's "warnings only" setting spares the others.
    trigger = models.CharField(max_length=16)
    state = models.CharField(max_length=16, choices=STATES, default=PENDING)
    attempts = models.PositiveIntegerField(default=0)  # failed tries, not waits for the job
    next_attempt_at = models.DateTimeField(default=timezone.now)
    claimed_until = models.DateTimeField(null=True, blank=True)
    claim = models.CharField(max_length=32, blank=True)
    last_error = models.CharField(max_length=300, blank=True)  # one line, never a secret
    created_at = models.DateTimeField(default=timezone.now)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["state", "next_attempt_at"], name="mail_due")]

    def __str__(self) -> str:
        return f"email of job {self.jobid} ({self.state})"


class UsageMailCursor(models.Model):
    """Where the end-of-job poller stopped: the time of its last complete run."""

    name = models.CharField(max_length=32, unique=True)
    last_run = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.name} at {self.last_run:%Y-%m-%d %H:%M:%S}"


class UsageAlert(models.Model):
    """A rule a running job broke (usage_watch): the outbox row of its email to the job's
    owner, written before any send is tried, one per (job, rule) whatever later runs find,
    so the owner hears of each rule once. Claimed with one conditional UPDATE, as UsageMail.
    `last_seen_at` is the last run that found the rule broken: the staff page lists the rows
    the latest run saw (its time in UsageMailCursor `usage_watch`)."""

    PENDING, SENT, FAILED = "pending", "sent", "failed"
    STATES = [(PENDING, "pending"), (SENT, "sent"), (FAILED, "failed")]

    jobid = models.CharField(max_length=32)
    rule = models.CharField(max_length=32)  # analysis/running_rules.CODES
    user = models.CharField(max_length=64)
    account = models.CharField(max_length=64, blank=True)
    partition = models.CharField(max_length=64, blank=True)
    name = models.CharField(max_length=200, blank=True)  # the job's, as its owner wrote it
    recipient = models.CharField(max_length=254, blank=True)  # "": no address known
    # What the job holds of the cluster, as accounting said when the rule was first broken.
    cpus = models.PositiveIntegerField(default=0)
    gpus = models.PositiveIntegerField(default=0)
    memory_bytes = models.BigIntegerField(null=True)
    job_start = models.DateTimeField(null=True)
    # The alert as the rule wrote it when it was first broken, and as the latest run did.
    message = models.CharField(max_length=500)
    advice = models.CharField(max_length=500)
    figures = models.JSONField(default=dict)
    state = models.CharField(max_length=16, choices=STATES, default=PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(default=timezone.now)
    claimed_until = models.DateTimeField(null=True, blank=True)
    claim = models.CharField(max_length=32, blank=True)
    last_error = models.CharField(max_length=300, blank=True)  # one line, never a secret
    created_at = models.DateTimeField(default=timezone.now)  # first found broken
    last_seen_at = models.DateTimeField(default=timezone.now, db_index=True)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["jobid", "rule"],
                                               name="alert_once_per_job_rule")]
        indexes = [models.Index(fields=["state", "next_attempt_at"], name="alert_due")]

    def __str__(self) -> str:
        return f"{self.rule} of job {self.jobid} ({self.state})"


class MonthlyMail(models.Model):
    """One account's monthly report to one of its coordinators (usage_monthly --mail): the
    outbox row, written before any send is tried, one per (month, account, coordinator)
    whatever runs, crashes and reruns happen; claimed with one conditional UPDATE before it
    is sent, as UsageMail is (mail/monthly_outbox.py)."""

    PENDING, SENT, FAILED = "pending", "sent", "failed"
    STATES = [(PENDING, "pending"), (SENT, "sent"), (FAILED, "failed")]

    month = models.CharField(max_length=7)  # YYYY-MM
    account = models.CharField(max_length=64)
    user = models.CharField(max_length=64)  # the coordinator
    recipient = models.CharField(max_length=254)
    state = models.CharField(max_length=16, choices=STATES, default=PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(default=timezone.now)
    claimed_until = models.DateTimeField(null=True, blank=True)
    claim = models.CharField(max_length=32, blank=True)
    last_error = models.CharField(max_length=300, blank=True)  # one line, never a secret
    created_at = models.DateTimeField(default=timezone.now)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["month", "account", "user"],
                                               name="monthly_once")]
        indexes = [models.Index(fields=["month", "state", "next_attempt_at"],
                                name="monthly_due")]

    def __str__(self) -> str:
        return f"{self.month} report of {self.account} to {self.user} ({self.state})"


class ShareLink(models.Model):
    """A link that shows one job's report (page, PDF, plots) to whoever holds it, without a
    login, until it expires or is revoked (`share_links`). Made by the job's owner; the link
    carries a random secret of its own, of which only a lookup prefix and a SHA-256 digest
    are kept, as the API tokens' are: the table alone opens nothing."""

    jobid = models.CharField(max_length=32, db_index=True)  # the document's, as made
    made_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                                related_name="share_links")
    prefix = models.CharField(max_length=16, unique=True)
    digest = models.CharField(max_length=64)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL,
                                   null=True, blank=True, related_name="+")

    def __str__(self) -> str:
        return f"share link {self.prefix}… of job {self.jobid}"
