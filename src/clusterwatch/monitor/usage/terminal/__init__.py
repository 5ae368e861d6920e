"""`clusterwatch usage`: the usage reports in a researcher's terminal on a login node.

A floor of the usage feature without Django, like `accounting/`, `metrics/` and `analysis/`
it reads: `cli` (the parser, registered as the top-level part `usage`), `command` (what a
run does), `settings` (the environment over /etc/clusterwatch/usage.toml), `sources` (the
monitor's API, or accounting and Prometheus here), `job_text` and `tables` (the text), and
`style` (colour and bars), `munge_credential` (who asks, proven by MUNGE).
"""
