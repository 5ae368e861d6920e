"""The job exporter's raw series of one batch job over its life, read back through a
Prometheus-compatible query API (`prometheus_api`: the bounded range queries; `series`: the
job's series, typed). No Django; no recording rule needed.
"""
