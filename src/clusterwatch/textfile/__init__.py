"""Writers for node_exporter's textfile collector, run on the workers by systemd timers.

Each writer replaces its `.prom` file atomically on success and leaves it alone on failure,
so a broken source shows up as an ageing `node_textfile_mtime_seconds`, never as bad data.
"""
