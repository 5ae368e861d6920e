"""The operators' pages: hosts overview, PanDA queue page, job page, alarms.

Each page's data is built by pure functions from typed records (`record.host_record`):
`hosts_page`, `queue_page` (with `queue_logs`, `queue_workers`, `failed_calls` and `why`)
and `job_page`, into plain data classes, so what a page says can be tested without a
database or a browser. Markup made in Python is in `queue_rows` and `cells`, never on the
data classes. `views` (and `alarms`) only read the few rows a page needs (`hosts_query`,
`queue_query`) and hand that data to a template.
"""
