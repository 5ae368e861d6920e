"""The local demonstrations: `clusterwatch watch demo` and `clusterwatch monitor demo`.

Each demo runs the project's real components against the loopback services of
clusterwatch.loopback (Prometheus, node_exporter, MariaDB, gunicorn, a fake Slack) and the
harvester files shipped as that package's data, so it works from an installed wheel as well
as from a checkout. Only the two demo verbs load this package, and only when they run: no
production module imports it.
"""
