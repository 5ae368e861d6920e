"""Usage reports: what each batch job used of what it asked for (a Django app, label `usage`).

The floors, each importing only those below it (a test checks that no two packages import
each other):

- `accounting/`: the scheduler's view of a job behind a protocol (`interface`), so nothing
  above it names Slurm; its two Slurm implementations, `sacct*` and the restricted view of
  Slurm's database (`slurmdb*`). No Django.
- `metrics/`: the exporter's raw series of one job, read back from a Prometheus-compatible
  query API. No Django.
- `analysis/`: figures and warnings, pure functions over a job and its series (`figures`,
  `rules`, `thresholds`, `timeseries`, `readings`), and the usage-report document
  (`summary_json`). No Django.
- `rendering/`: the plots, the pie, the PDF and the cache of drawn images. No Django.
- this package's root: the app (`models`, `admin`, `apps`, `migrations`, `api_tokens`), its
  settings (`config`), the configured accounting source (`accounting_source`), and
  `usage_report`, which builds a job's usage report from the floors above.
- `mail/`: the end-of-job mail (poller, outbox, message, delivery over SMTP).
- `web/`: the pages and the JSON API (`*_page.py` builds a page's data, `*_views.py` answers
  requests), with who may see which job (`access`).

Adapters take their environment (program path, base URL, clock, HTTP seam) as parameters.
"""
