"""WSGI entry point for gunicorn: `gunicorn clusterwatch.monitor.site.wsgi:application`."""

from __future__ import annotations

import gc
import importlib
import logging
import os
from pathlib import Path

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "clusterwatch.monitor.site.settings")
application = get_wsgi_application()

log = logging.getLogger(__name__)
# The monitor's own templates: the kernel's layout, the operators' pages, the login page.
MONITOR = Path(__file__).resolve().parent.parent
TEMPLATE_DIRS = [MONITOR / "core" / "templates", MONITOR / "pages" / "templates",
                 MONITOR / "site" / "templates"]


def warm() -> None:
    """Do now what each worker's first request would: 64-300 ms measured, a burst's p99.

    Only what needs no database (a connection opened here could be shared by the workers if
    gunicorn ever forked after loading the app): every URL pattern and the view modules they
    import, the reverse map, the compiled record schema, this app's templates, and the
    drawing modules the usage views import when they draw (matplotlib and reportlab, 0.5 s).
    A failure only leaves the work to the first request, as before.
    """
    from django.template.loader import get_template
    from django.urls import get_resolver

    from clusterwatch.monitor.ingest import validation

    try:
        resolver = get_resolver()
        resolver.url_patterns  # noqa: B018 - the property imports every view module
        resolver.reverse_dict  # noqa: B018 - built on the first reverse()/redirect
        validation.checkers()
        for folder in TEMPLATE_DIRS:
            for path in sorted(folder.rglob("*.html")):
                get_template(path.relative_to(folder).as_posix())
        # Last: a drawing library that fails to import costs only the drawings.
        importlib.import_module("clusterwatch.monitor.usage.rendering.rendered")
    except Exception:  # warming is an optimisation: never a reason for a worker not to start
        log.exception("warming the worker failed; its first request will do it")


warm()

# Everything loaded so far (Django, the app, the compiled record schema) lives as long as the
# worker: move it out of the collector's reach, so that the full collections that a 200 KB
# record's many small objects trigger stay short (measured: they were the p99 of ingest).
gc.freeze()
