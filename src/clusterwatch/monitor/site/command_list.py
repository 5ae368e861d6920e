"""Every command `clusterwatch monitor` offers, one line each, for its `--help`.

Written out rather than gathered from Django: `--help` answers before any setting is read or
Django is loaded, so it works on a machine whose monitor settings are wrong. The test
tests/monitor/test_command_list.py holds it to the command modules under
monitor/site/management/commands and monitor/usage/management/commands, so it cannot go stale.
`clusterwatch monitor help COMMAND` gives a command's arguments and options.
"""

from __future__ import annotations

# (command, what it does), the monitor's own by subject; each line fits in LINE_WIDTH.
MONITOR_COMMANDS: tuple[tuple[str, str], ...] = (
    ("create_host_token", "a reporter's token for KEY [KEY ...], printed once"),
    ("list_host_tokens", "the host tokens (prefix, dates, keys; never a token)"),
    ("revoke_host_token", "revoke a host token by PREFIX (or the whole token on stdin)"),
    ("prune_reports", "delete records past retention; each key's latest stays"),
    ("evaluate_alarms", "evaluate the alarms and deliver them (its timer runs it)"),
    ("alarms_status", "open alarms (silenced? acknowledged?), queues, dead letters, last run"),
    ("redeliver_alarms", "queue a fixed channel's dead-lettered messages again"),
    ("alarm_silence", "add MATCHER... (--for D | --until T) --comment TEXT; list; expire ID"),
    ("alarm_ack", "acknowledge an open ALARM --comment TEXT (--undo takes it back)"),
    ("register_harvester", "add KEY to the harvester registry (--remote: how to build it)"),
    ("list_harvesters", "the harvester registry (--remote: the remote keys alone)"),
    ("remove_harvester", "take KEY off the harvester registry (its records stay)"),
    ("remote_harvester_report", "a remote harvester's record from the PanDA server (--registered)"),
    ("job_usage", "a job's usage report as JSON"),
    ("create_usage_token", "an API token for scripts (usage and image-demand APIs) as USER"),
    ("usage_share", "a link to JOBID's report for its owner --user (--days N, 1-30)"),
    ("usage_mail", "queue and send the end-of-job usage emails (its timer runs it)"),
    ("usage_watch", "email owners of running jobs that idle or near their memory limit"),
    ("usage_monthly", "each account's month from the kept summaries (--month YYYY-MM)"),
    ("usage_mailprog", "Slurm's MailProg: the usage email of SLURM_JOB_ID"),
    ("create_slurmdb_view", "the usage reports' view of Slurm's database, its read-only user"),
)
# Django's own that an operator needs; `clusterwatch monitor help` lists every one.
DJANGO_COMMANDS: tuple[tuple[str, str], ...] = (
    ("migrate", "create or update the monitor's database tables"),
    ("createsuperuser", "create a staff account for the admin"),
    ("changepassword", "set a user's password"),
    ("runserver", "a development server (production runs gunicorn)"),
    ("help", "every command; `help COMMAND`: its arguments and options"),
)
NAME_WIDTH = 25
LINE_WIDTH = 100


def listing() -> str:
    """The commands as `--help` shows them, one line each, the summaries aligned."""
    def lines(commands: tuple[tuple[str, str], ...]) -> list[str]:
        return [f"  {name:{NAME_WIDTH}}{summary}" for name, summary in commands]

    return "\n".join(["The monitor's commands:", *lines(MONITOR_COMMANDS), "",
                      "Django's, among others:", *lines(DJANGO_COMMANDS)])
