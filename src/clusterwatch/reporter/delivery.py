"""The delivery pass: every buffered record posted to the monitor, oldest first.

The parts: the buffer (buffer.py) holds the records on disk, the transport (https_post.py)
posts one under one deadline, the answer policy (answer_policy.py) says what its answer
means. A DELIVERED record is removed; a REJECTED one is set aside and the pass goes on; on
RETRY the pass stops, leaving the rest for the next run. Delivery is at least once: a run
killed between an accepted post and the file's removal posts the same record again, and the
monitor stores a record identical to one it has once.

Python 3.6 compatible, standard library only (see the package docstring).
"""

import json
import logging
import time
from typing import Any, Dict, Optional, Tuple

from clusterwatch.reporter.answer_policy import Verdict, classify, set_aside_reason
from clusterwatch.reporter.buffer import Buffer, Clock, build_section, encode
from clusterwatch.reporter.envfile import check_monitor_url, check_token
from clusterwatch.reporter.https_post import Poster, https_poster
from clusterwatch.reporter.storable import RISKY_JSON, make_storable

log = logging.getLogger(__name__)

REASON_UNREADABLE = "set aside: unreadable record"


def deliver(buffer: Buffer, url: str, token: str, ca_bundle: Optional[str] = None,
            timeout: float = 30.0, now: Clock = time.time,
            poster: Optional[Poster] = None) -> Dict[str, Any]:
    """Post every buffered record, oldest first; the caller has buffered the current one.

    Returns `delivered_all` (every record went and was accepted), `delivered`, `set_aside`
    (this pass), `backlog` (records still waiting), `last_error` (None on a clean pass) and
    `section` (what `build_section` now gives the next record). Raises ConfigError, before
    posting anything, for a URL or token that must not be used. Each post's whole exchange
    ends within `timeout` seconds (see https_post). `poster` replaces the HTTPS post (one seam
    for tests); it returns (status or None when no answer came, description).
    """
    check_monitor_url(url)
    check_token(token)
    delivered = set_aside = 0
    error = None  # type: Optional[str]
    post = poster
    if post is None:
        try:
            post = https_poster(url, token, ca_bundle, timeout)
        except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError
            error = _scrub(f"tls: cannot load CA bundle {ca_bundle}: {exc}", token)
    if post is not None:
        delivered, set_aside, error = _post_backlog(buffer, post, token)
    buffer.note_pass(error, now())
    backlog = len(buffer.names())
    if error is None:
        log.info("delivered %d record(s)", delivered)
    return {
        "delivered_all": error is None and backlog == 0,
        "delivered": delivered,
        "set_aside": set_aside,
        "backlog": backlog,
        "last_error": error,
        "section": build_section(buffer),
    }


def _post_backlog(buffer: Buffer, post: Poster, token: str) -> Tuple[int, int, Optional[str]]:
    """One pass over the buffer: (delivered, set aside, the last failure or None)."""
    delivered = set_aside = 0
    error = None  # type: Optional[str]
    for name in buffer.names():
        try:
            data = buffer.read(name)
            record = json.loads(data.decode("utf-8"))
        except (OSError, ValueError) as exc:
            # A file that is not a record would otherwise block or be rejected forever.
            error = f"{REASON_UNREADABLE}: {type(exc).__name__}"
            log.warning("record %s: %s; set aside", name, error)
            buffer.set_aside(name, REASON_UNREADABLE, type(exc).__name__)
            set_aside += 1
            continue
        if RISKY_JSON.search(data) and isinstance(record, dict):
            # Buffered by a reporter that did not yet make its records storable.
            data = encode(make_storable(record))
        status, description = post(data)
        description = _scrub(description, token)
        verdict = classify(status)
        if verdict is Verdict.DELIVERED:
            buffer.remove(name)
            delivered += 1
            continue
        error = description
        if verdict is Verdict.REJECTED:
            log.warning("the monitor rejected record %s (%s); set aside", name, description)
            buffer.set_aside(name, set_aside_reason(status), description,
                             record if isinstance(record, dict) else None)
            set_aside += 1
            continue
        log.warning("delivery stopped at record %s: %s", name, description)
        break
    return delivered, set_aside, error


def _scrub(text: str, token: str) -> str:
    return text.replace(token, "<token>") if token else text
