"""A gunicorn worker's requests, in one process, through Django's WSGI handler (so the request
signals run as in production, which the test client turns off): what happens to the SQLite
connection kept between them. Prints one JSON object of observations.

    python -m tests.monitor.ingest.kept_connection_worker

The monitor's own settings (DJANGO_SETTINGS_MODULE and CLUSTERWATCH_DATA_DIR from the test,
a migrated SQLite database there). Besides ingest's URL, two of the test's own: one whose
view begins a transaction and raises, one whose view begins one and answers 200.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import sqlite3
import threading
from typing import Any
from wsgiref.util import setup_testing_defaults

import django

KEY = "keptconn01"
FAILING, UNFINISHED = "/test/failing-transaction/", "/test/unfinished-transaction/"


def main() -> None:
    django.setup()
    from django.conf import settings
    from django.core.wsgi import get_wsgi_application
    from django.db import connection, connections
    from django.db.backends.signals import connection_created
    from django.http import HttpRequest, HttpResponse
    from django.urls import get_resolver, path

    from clusterwatch.monitor.ingest import tokens
    from tests.monitor.records import example

    def begin_and_write(request: HttpRequest) -> None:
        with connection.cursor() as cursor:
            cursor.execute("BEGIN IMMEDIATE")  # what a raw BEGIN without its end leaves
            cursor.execute("UPDATE monitor_hostreport SET size_bytes = size_bytes + 1")

    def failing(request: HttpRequest) -> HttpResponse:
        begin_and_write(request)
        raise RuntimeError("the view failed inside its transaction")

    def unfinished(request: HttpRequest) -> HttpResponse:
        begin_and_write(request)
        return HttpResponse("ok")

    get_resolver().url_patterns.extend([path(FAILING[1:], failing),
                                        path(UNFINISHED[1:], unfinished)])
    application = get_wsgi_application()
    _, token = tokens.create([KEY], note="kept connection test")
    connections.close_all()  # the requests start without a connection, as a fresh worker
    opened: list[str] = []
    connection_created.connect(lambda sender, connection, **kw: opened.append(
        threading.current_thread().name), weak=False)
    posts = iter(range(1000))
    first = dt.datetime.now(dt.timezone.utc).replace(microsecond=0) - dt.timedelta(hours=2)

    def request(method: str, path: str, body: bytes = b"") -> int:
        environ: dict[str, Any] = {"REQUEST_METHOD": method, "PATH_INFO": path,
                                   "HTTP_HOST": "localhost", "wsgi.input": io.BytesIO(body),
                                   "CONTENT_LENGTH": str(len(body)),
                                   "CONTENT_TYPE": "application/json",
                                   "HTTP_AUTHORIZATION": f"Bearer {token}"}
        setup_testing_defaults(environ)
        statuses: list[str] = []
        answer = application(environ, lambda status, headers, *exc: statuses.append(status))
        b"".join(answer)
        answer.close()  # request_finished, as a WSGI server calls it
        return int(statuses[0].split()[0])

    posted_sizes: list[int] = []

    def post() -> int:
        body = json.dumps(example(KEY, first + dt.timedelta(minutes=next(posts)))).encode()
        posted_sizes.append(len(body))
        return request("POST", f"/api/host-reports/{KEY}/", body)

    def stored_sizes() -> list[int]:
        """The records' sizes as another process sees them (its own connection)."""
        with sqlite3.connect(settings.DATABASES["default"]["NAME"]) as other:
            return [row[0] for row in other.execute("SELECT size_bytes FROM monitor_hostreport")]

    def writable_now() -> bool:
        """Whether another connection gets the write lock at once (no transaction holds it)."""
        other = sqlite3.connect(settings.DATABASES["default"]["NAME"], timeout=0,
                                isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")
            other.execute("ROLLBACK")
            return True
        except sqlite3.OperationalError:
            return False
        finally:
            other.close()

    seen: dict[str, Any] = {"statuses": [post() for _ in range(3)]}
    seen["kept"] = {"opened": len(opened), "open_after": connection.connection is not None}
    seen["posted_sizes"] = sorted(posted_sizes)
    for name, url in (("failing", FAILING), ("unfinished", UNFINISHED)):
        status = request("GET", url)
        seen[name] = {"status": status, "open_after": connection.connection is not None,
                      "writable": writable_now(), "sizes": sorted(stored_sizes())}
    seen["after"] = {"status": post(), "opened": len(opened)}

    # Each thread (a threaded server's) has its own connection, kept for its next request.
    opened.clear()
    start = threading.Barrier(2)

    def serve() -> None:
        start.wait(timeout=30)
        post()
        post()
        connections.close_all()

    threads = [threading.Thread(target=serve, name=f"worker-thread-{n}") for n in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seen["threads"] = sorted(opened)
    print(json.dumps(seen))


if __name__ == "__main__":
    main()
