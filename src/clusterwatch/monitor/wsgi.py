"""WSGI entry point for gunicorn: `gunicorn clusterwatch.monitor.wsgi:application`."""

from __future__ import annotations

import gc
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "clusterwatch.monitor.settings")
application = get_wsgi_application()

# Everything loaded so far (Django, the app, the compiled record schema) lives as long as the
# worker: move it out of the collector's reach, so that the full collections that a 200 KB
# record's many small objects trigger stay short (measured: they were the p99 of ingest).
gc.freeze()
