"""Analysis: a batch job's figures (`figures.UsageSummary`) and warnings (`rules`, over
`thresholds`), pure functions over its `JobRecord` and series; `timeseries` reads counters
reset-aware for the figures and the plots alike, `readings` names series that cannot be true;
`summary_json` is the usage-report document (`GET /api/v1/jobs/<jobid>/usage`). No Django.
"""
