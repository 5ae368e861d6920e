"""gunicorn's settings for the monitor: what clusterwatch-monitor.service runs
(`gunicorn --config=python:clusterwatch.monitor.site.gunicorn_conf ...`) and what the test
harness (clusterwatch.loopback.monitor_server) starts, so tests meet the shipped server.

Sync workers, about two per core: each request is short (a record of at most 1 MiB, a
page) and the database is the only shared state, so more hosts can take more workers.

A sync worker serves one connection at a time and reads it blocking, so any client that
sends slowly (or opens a connection and sends nothing) holds a worker: a handful of them
hold all of them. The threaded worker is no way out (measured with gunicorn 27: it parks
idle connections, but a connection with part of its headers or body holds a thread just
the same). The buffering proxy in front (deploy/nginx/clusterwatch-monitor.conf) is what
bounds slow clients: it reads every request whole, under its own timeouts, before gunicorn
sees it, so gunicorn only ever reads complete requests from 127.0.0.1. Hence the loopback
bind: nothing but the proxy may reach the workers.
"""

bind = ["127.0.0.1:8000"]
workers = 4
worker_class = "sync"
# A worker silent this long (a request stuck in the database) is killed and replaced.
timeout = 60
graceful_timeout = 30
# Replace each worker now and then, so that no slow leak outlives a day of requests.
max_requests = 10000
max_requests_jitter = 1000
# X-Forwarded-Proto/-For are believed from the proxy on this host only.
forwarded_allow_ips = "127.0.0.1"
accesslog = "-"
errorlog = "-"
# The access log without share links' secrets (they are in their URLs).
logger_class = "clusterwatch.monitor.site.access_log.RedactingLogger"
