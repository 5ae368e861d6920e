"""The queue page's table rows as markup, from the data of `queue_logs`, `failed_calls` and
`queue_workers`, which know nothing of HTML. The templates use these as filters
(`{% load queue_rows %}`, then `{{ fetch|fetch_last_rows }}`; the library is named in the
settings' TEMPLATES).

Made here rather than cell by cell in the template: a queue named by every harvester has 50
panels of a dozen tables, and per-cell lookups, filters and loop steps were most of the page's
time. Every record value goes through `cells.esc`; a fragment is marked safe once whole.
"""

from __future__ import annotations

from django import template
from django.utils.safestring import SafeString

from clusterwatch.monitor.pages.cells import (
    DASH,
    count_rows,
    esc,
    job_href,
    or_dash,
    safe,
    th_row,
    when,
)
from clusterwatch.monitor.pages.failed_calls import FailedCalls
from clusterwatch.monitor.pages.queue_logs import Adjustment, Fetching, Submission
from clusterwatch.monitor.pages.queue_regulation import regulation_rows
from clusterwatch.monitor.pages.queue_workers import (
    LaunchLimits,
    NotFinished,
    Reason,
    WorkerCounts,
)


def fetch_last_rows(fetch: Fetching) -> SafeString:
    """The last fetch's table rows (empty without one)."""
    last = fetch.last
    if last is None:
        return safe("")
    outcome = esc(last.outcome)
    if last.failed:
        outcome = f'<span class="bad-text">failed</span>: {outcome}'
    elif last.no_jobs:
        outcome = f'<span class="warn-text">{outcome}</span>'
    else:
        outcome = f"<span>{outcome}</span>"
    error_class = (f'<tr><th>Error class</th><td><span class="error-class">'
                   f"{esc(last.error_class)}</span></td></tr>" if last.error_class else "")
    label = (f' <span class="muted">(prodSourceLabel={esc(last.label)})</span>'
             if last.label else "")
    failing = ""
    if fetch.failing_since is not None:  # a 1.9 record whose latest attempts failed
        since = ", ".join(f'<span class="error-class">{esc(name)}</span> {esc(n)}'
                          for name, n in fetch.failing_errors)
        failing = th_row("Failing since", f'<span class="bad-text">'
                         f"{when(fetch.failing_since)}</span>" + (f" ({since})" if since else ""))
    rows = [th_row("Last fetch", when(last.at)), th_row("Outcome", outcome), error_class]
    if failing:  # older records' rows stay as they were, byte for byte
        rows.append(failing)
    rows.extend((
        th_row("Asked / got", f"{esc(or_dash(last.asked))} / {esc(or_dash(last.got))}{label}"),
        th_row("Last time jobs arrived", when(fetch.last_got_jobs))))
    return safe("\n  ".join(rows))


def fetch_interval_rows(fetch: Fetching) -> SafeString:
    """The interval's counts: attempts, failures by error class, jobs asked and got."""
    failed = f'<span class="bad-text">{fetch.failed}</span>' if fetch.failed else "0"
    by_class = "".join(f'<tr><th>&nbsp;&nbsp;with <span class="error-class">{esc(name)}'
                       f'</span></th><td class="num">{esc(n)}</td></tr>'
                       for name, n in fetch.errors)
    return safe("\n  ".join((
        th_row("Fetch attempts", esc(fetch.attempts), num=True),
        th_row("Failed", failed, num=True),
        by_class,
        th_row("Jobs asked", esc(or_dash(fetch.jobs_asked)), num=True),
        th_row("Jobs got", esc(or_dash(fetch.jobs_got)), num=True))))


def submit_rows(submit: Submission) -> SafeString:
    """Submitted, failures, worker counts and job chunks: the submission table's rows."""
    failures = esc(or_dash(submit.submit_failures))
    if submit.submit_failures:
        failures = f'<span class="bad-text">{failures}</span>'
    chunks = esc(or_dash(submit.job_chunks))
    if submit.job_chunks_at:
        chunks += f" at {when(submit.job_chunks_at)}"
    return safe("\n  ".join((
        th_row("Workers submitted (interval)", esc(or_dash(submit.workers_submitted)), num=True),
        th_row("Submission failures (interval)", failures, num=True),
        count_rows(submit.workers_status, name_cell="th"),
        th_row("Worker counts read", when(submit.workers_status_at)),
        th_row("Job chunks", chunks))))


def submit_pushes(submit: Submission) -> SafeString:
    """The pushes' rows, each PandaID above 0 linked to its job's page."""
    return safe("".join(
        f"<tr><td>{when(push.at)}</td><td>{esc(or_dash(push.workerid))}</td>\n    <td>"
        + (f'<a href="{esc(job_href(push.pandaid))}">{push.pandaid}</a>'
           if push.pandaid is not None and push.pandaid > 0 else esc(push.pandaid or DASH))
        + "</td></tr>" for push in submit.pushes))


def calls_failed(calls: FailedCalls) -> SafeString:
    """"4 failed in the interval", or why the daemon's log could not be read."""
    if calls.error:
        return safe(f'<span class="bad-text">log not readable: {esc(calls.error)}</span>')
    if calls.failed:
        return safe(f'<span class="bad-text">{calls.failed} failed</span> in the interval')
    return safe(f"{esc(or_dash(calls.failed))} failed in the interval")


def calls_rows(calls: FailedCalls) -> SafeString:
    return safe(count_rows(calls.by_call_and_class))


def adjust_rows(adjust: Adjustment) -> SafeString:
    """When logged, the limit, what it was set against and the message."""
    against = ", ".join(f"{esc(name)}={esc(value)}" if name else esc(value)
                        for name, value in adjust.against)
    limit = f"{esc(adjust.limit_name or 'limit')} = <strong>{esc(or_dash(adjust.limit))}</strong>"
    return safe("\n  ".join((
        th_row("Logged", when(adjust.at)),
        th_row("Limit", limit),
        th_row("Set against", against) if adjust.against else "",
        th_row("Message", esc(adjust.message)) if adjust.message else "")))


def limits_rows(limits: LaunchLimits) -> SafeString:
    """The limits, the last job fetch and submission, the site."""
    return safe("\n  ".join((
        count_rows(limits.limits, name_cell="th"),
        th_row("Last job fetch", when(limits.job_fetch_time)),
        th_row("Last submission", when(limits.submit_time)),
        th_row("Site", esc(limits.site_name)) if limits.site_name else "")))


def limits_by_type(limits: LaunchLimits) -> SafeString:
    """The limits per jobType/resourceType, a row each."""
    return safe("\n".join(
        f"<tr><td>{esc(kind)}</td>"
        + "".join(f'<td class="num">{esc(or_dash(value))}</td>' for value in values)
        + "</tr>" for kind, values in limits.by_type))


def workers_rows(workers: WorkerCounts) -> SafeString:
    return safe(count_rows(workers.by_status))


def reason_examples(reason: Reason) -> SafeString:
    """The examples as list items (only http(s) logs are links)."""
    return safe("".join(
        f"<li>{esc(ex.text)}"
        + (f', <a href="{esc(ex.link)}" rel="noreferrer">log</a>' if ex.link
           else f", {esc(ex.log_url)}" if ex.log_url else "")
        + "</li>" for ex in reason.examples))


def not_finished_rows(not_finished: NotFinished) -> SafeString:
    """The reasons shown, each with its examples."""
    return safe("".join(
        f'<tr><td>{esc(reason.text)}</td><td class="num">{esc(reason.count)}</td>'
        f"<td>{esc(reason.source)}</td>\n"
        f'    <td><ul class="plain">{reason_examples(reason)}</ul></td></tr>'
        for reason in not_finished.reasons))


register = template.Library()
for _rows in (fetch_last_rows, fetch_interval_rows, submit_rows, submit_pushes, calls_failed,
              calls_rows, adjust_rows, limits_rows, limits_by_type, workers_rows,
              not_finished_rows, regulation_rows):
    register.filter(_rows.__name__, _rows)
