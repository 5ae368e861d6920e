"""The restricted view of Slurm's accounting database: its SQL and the names it accepts.

The view holds what the usage reports need of each job and nothing more: ids, user and
account, partition, state, times, the requested and allocated TRES strings (CPUs, memory,
nodes, GPUs), the time limit, node list, name and exit code. Never the job script, the
environment, the submit line, the working directory, comments or admin fields (those live in
other columns and tables of the same database: `<cluster>_job_table.submit_line`,
`<cluster>_job_script_table`, `<cluster>_job_env_table`, `admin_comment`, ...).

Its SQL SECURITY is DEFINER: the read-only user needs SELECT on the view alone, never on
Slurm's tables. It is a plain join (no subquery, no aggregate), so MariaDB merges it into
each query and uses the job table's indexes (id_job, id_user, time_end).
"""

from __future__ import annotations

import re

VIEW = "jobs"  # the view's name inside its schema
DEFAULT_SCHEMA = "clusterwatch_usage"
DEFAULT_DATABASE = "slurm_acct_db"

# Column of the view -> expression over Slurm's tables (j: <cluster>_job_table, a: the
# association of the job, g: the gres/gpu TRES). Slurm 22.05's names, unchanged since 17.11.
COLUMNS = (
    ("id_job", "j.id_job"),
    ("array_job_id", "j.id_array_job"),  # 0 when not an array task
    ("array_task_id", "j.id_array_task"),  # 4294967294 (NO_VAL) when not an array task
    ("het_job_id", "j.het_job_id"),  # 0 when not a heterogeneous job
    ("het_job_offset", "j.het_job_offset"),  # NO_VAL when not a heterogeneous job
    ("uid", "j.id_user"),  # the user when the job has no association (name from NSS)
    ("user", "a.`user`"),
    ("account", "j.account"),
    ("partition", "j.`partition`"),
    ("state", "j.state"),  # enum job_states of slurm.h, with JOB_STATE_FLAGS bits
    ("kill_requid", "j.kill_requid"),  # who cancelled it (sacct's "CANCELLED by <uid>")
    ("exit_code", "j.exit_code"),  # the batch script's wait status
    ("time_submit", "j.time_submit"),
    ("time_eligible", "j.time_eligible"),
    ("time_start", "j.time_start"),  # epoch seconds; 0: not yet
    ("time_end", "j.time_end"),
    ("time_suspended", "j.time_suspended"),  # seconds spent suspended, out of Elapsed
    ("timelimit", "j.timelimit"),  # minutes; 4294967295 INFINITE, 4294967294 NO_VAL
    ("nodes_alloc", "j.nodes_alloc"),
    ("nodelist", "j.nodelist"),
    ("mem_req", "j.mem_req"),  # MiB, bit 63 set: per CPU (only read without tres_req)
    ("tres_req", "j.tres_req"),  # "1=2,2=8192,4=1": TRES id = count (2: MiB)
    ("tres_alloc", "j.tres_alloc"),
    ("gpu_tres_id", "g.id"),  # the id of gres/gpu in TRES strings; NULL: not tracked
    ("job_name", "j.job_name"),
)
COLUMN_NAMES = tuple(name for name, _ in COLUMNS)

# Slurm's cluster names and the schema names we create: no quoting surprises.
_IDENTIFIER = re.compile(r"[A-Za-z0-9_]{1,64}")
# A MariaDB account: user up to 80 characters, host a name, an address or a % pattern.
_USER = re.compile(r"[A-Za-z0-9_.-]{1,80}")
_HOST = re.compile(r"[A-Za-z0-9_.%:-]{1,255}")


def identifier(value: str, what: str) -> str:
    """`value` when it is a plain SQL identifier; ValueError naming `what` otherwise."""
    if not _IDENTIFIER.fullmatch(value):
        raise ValueError(f"{what} must be 1-64 letters, digits or '_', not {value[:70]!r}")
    return value


def account_name(user: str, host: str) -> tuple[str, str]:
    """(user, host) of a MariaDB account when both are plain; ValueError otherwise."""
    if not _USER.fullmatch(user):
        raise ValueError(f"--view-user must be 1-80 letters, digits, '_', '.' or '-', "
                         f"not {user[:90]!r}")
    if not _HOST.fullmatch(host):
        raise ValueError(f"--view-user-host must be a host name, an address or a pattern "
                         f"with %, not {host[:90]!r}")
    return user, host


def create_view_sql(database: str, cluster: str, schema: str) -> str:
    """CREATE OR REPLACE VIEW `schema`.`jobs` over `database`'s tables of `cluster`."""
    for value, what in ((database, "--database"), (cluster, "--cluster"),
                        (schema, "--schema")):
        identifier(value, what)
    select = ",\n  ".join(f"{expression} AS `{name}`" for name, expression in COLUMNS)
    return (
        f"CREATE OR REPLACE ALGORITHM=MERGE SQL SECURITY DEFINER VIEW `{schema}`.`{VIEW}` AS\n"
        f"SELECT\n  {select}\n"
        f"FROM `{database}`.`{cluster}_job_table` AS j\n"
        f"LEFT JOIN `{database}`.`{cluster}_assoc_table` AS a ON a.id_assoc = j.id_assoc\n"
        f"LEFT JOIN `{database}`.`tres_table` AS g\n"
        f"  ON g.type = 'gres' AND g.name = 'gpu' AND g.deleted = 0\n"
        f"WHERE j.deleted = 0"
    )


def slurm_tables(cluster: str) -> tuple[str, str, str]:
    """The tables the view reads: the job and association tables, and TRES names."""
    return (f"{cluster}_job_table", f"{cluster}_assoc_table", "tres_table")
