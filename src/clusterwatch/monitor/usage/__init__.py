"""Usage reports: what each batch job used of what it asked for.

This layer is pure library code with no Django import: `accounting` (the scheduler's view of
a job, behind a protocol so nothing above it names Slurm) and its Slurm adapter `sacct`;
`series` (the exporter's raw series for one job, read back from a Prometheus-compatible
query API); `thresholds`, `analysis` and `rules` (figures and warnings, pure functions);
`summary_json` (the document of `GET /api/v1/jobs/<jobid>/usage`). Adapters take their
environment (program path, base URL, clock, HTTP seam) as parameters.
"""
