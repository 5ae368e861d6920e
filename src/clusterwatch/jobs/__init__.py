"""The per-node job exporter: per-job metrics from cgroups and /proc, for Prometheus.

Jobs are found from cgroup directories (one module per scheduler layout, behind
`layout.JobSource`), their processes from every `cgroup.procs` below the job directory,
and the readings become metric families at scrape time (`exporter.JobsCollector`). Only the
standard library and prometheus_client are needed; nvidia-ml-py is used when present.
"""
