"""The loopback harness that the demos, the tests and the benchmarks share.

Real local servers on 127.0.0.1 (Prometheus, node_exporter, Alertmanager, Pushgateway,
PostgreSQL, MariaDB, Slurm, the monitor under gunicorn behind the shipped nginx site), fakes
(Slack and other webhooks, Prometheus' query API, condor_status), a harvester host's files
and database rows (harvester_files, harvester_scenario), and cgroup hierarchies for the job
exporter's benchmark. Nothing here contacts anything beyond this machine.

Supported for exactly those uses: `clusterwatch watch demo` and `clusterwatch monitor demo`
(clusterwatch.demo), the test suite, and benchmarks/. It ships in the wheel, with its data,
so the demos run from an installed clusterwatch. No production module imports it (a test
enforces that); modules here may import production code, e.g. the monitor's database URL
parser, since nothing imports them back.
"""
