"""One "gunicorn worker" of the multi-process ingest test: stores records of a key.

    python -m tests.monitor.ingest.worker KEY MINUTE [MINUTE ...]

Django is set up before anything imports the models (DJANGO_SETTINGS_MODULE from the test).
"""

from __future__ import annotations

import sys

import django


def main(key: str, minutes: list[int]) -> None:
    django.setup()
    from clusterwatch.monitor.ingest.store import store_record
    from tests.monitor.ingest.support import at
    from tests.monitor.records import example

    for minute in minutes:
        store_record(key, example(key, at(minute)), 1)


if __name__ == "__main__":
    main(sys.argv[1], [int(arg) for arg in sys.argv[2:]])
