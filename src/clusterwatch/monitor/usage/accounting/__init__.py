"""Accounting: the scheduler's view of a batch job. `interface` holds the `Accounting` protocol
and the typed `JobRecord`; `sacct`, `sacct_records`, `sacct_parse` and `sacct_fields` read
Slurm's `sacct`; `slurmdb`, `slurmdb_rows`, `slurmdb_connect` and `slurmdb_settings` read the
restricted view of Slurm's accounting database, `slurmdb_sql_view` and `slurmdb_admin` make
that view. No Django; nothing here reads the usage settings (the choice of source is
`usage.accounting_source`).
"""
