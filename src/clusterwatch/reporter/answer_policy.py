"""What the monitor's answer to one posted record means for that record and for the pass.

The transport (https_post) says what came back: an HTTP status, or None when no answer came
(connection, TLS, timeout). This module decides what follows, and nothing else: the pass
(delivery) acts on the verdict, the buffer keeps or sets aside the file.

Python 3.6 compatible, standard library only (see the package docstring).
"""

import enum
from typing import Optional


class Verdict(enum.Enum):
    """What becomes of a posted record; the value is the word the logs and tests use."""

    DELIVERED = "delivered"  # taken: remove it from the buffer, go on
    REJECTED = "rejected"  # refused for good: set it aside, go on with the next record
    RETRY = "retry"  # not the record's fault: keep it and the rest, stop the pass


# Statuses that say nothing against the record: retried on the next run.
RETRY_STATUSES = frozenset([408, 429])
# The monitor refuses the sender or the address, not the record (wrong token, wrong path,
# a proxy wanting credentials): setting every record aside would throw the backlog away
# over a configuration fix, so these stop the pass and keep the records, like a 5xx.
SENDER_STATUSES = frozenset([401, 403, 404, 405, 407])


def classify(status: Optional[int]) -> Verdict:
    """The verdict on a post that got `status` (None: no answer came).

    No answer, 5xx, 408, 429, the sender statuses and any redirect (not followed: it would
    carry the token elsewhere) are RETRY; any other 4xx is REJECTED; 2xx is DELIVERED.
    """
    if status is None:
        return Verdict.RETRY
    if 200 <= status < 300:
        return Verdict.DELIVERED
    if 400 <= status < 500 and status not in RETRY_STATUSES and status not in SENDER_STATUSES:
        return Verdict.REJECTED
    return Verdict.RETRY


def set_aside_reason(status: Optional[int]) -> str:
    """The reason a REJECTED record is counted under in the next record's `delivery`."""
    return "set aside: HTTP {}".format(status)
