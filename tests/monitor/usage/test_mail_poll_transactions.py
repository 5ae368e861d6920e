"""The poller and the delivery write without reading first inside a transaction.

On the embedded SQLite (WAL) a transaction that read and then writes fails at once with
"database is locked", without waiting out the busy timeout, when another process committed
in between: two pollers at once (or MailProg and the poller at a job's end) then made one of
them exit 1. So every transaction the poll opens writes first (an INSERT of get_or_create),
and the rest are single statements in autocommit. The check works on any database: it reads
the statements Django sends and whether each was inside a transaction.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any, Callable

import pytest
from django.db import connection
from django.utils import timezone as django_timezone

from clusterwatch.monitor.usage.accounting_source import accounting
from clusterwatch.monitor.usage.config import get_config
from clusterwatch.monitor.usage.mail.delivery import deliver_due
from clusterwatch.monitor.usage.mail.poll import poll
from tests.monitor.usage.mail_support import MailSite, mail_settings, sender

_CONTROL = ("SAVEPOINT", "RELEASE SAVEPOINT", "ROLLBACK TO SAVEPOINT", "BEGIN", "COMMIT")


def reads_before_writes(statements: list[tuple[str, bool]]) -> list[str]:
    """The writes that ran in a transaction after a read of that same transaction."""
    found, read = [], False
    for sql, in_transaction in statements:
        verb = sql.lstrip().split(None, 1)[0].upper() if sql.strip() else ""
        if not in_transaction:
            read = False
            continue
        if sql.lstrip().upper().startswith(_CONTROL):
            continue
        if verb == "SELECT":
            read = True
        elif verb in ("INSERT", "UPDATE", "DELETE") and read:
            found.append(sql)
    return found


def test_the_check_sees_a_read_then_a_write() -> None:
    assert reads_before_writes([("SELECT 1", True), ("UPDATE t SET a = 1", True)]) == [
        "UPDATE t SET a = 1"]
    assert reads_before_writes([("SELECT 1", False), ("UPDATE t SET a = 1", True),
                                ("SELECT 1", True)]) == []


@pytest.mark.django_db(transaction=True)
def test_the_poll_never_writes_after_a_read_in_one_transaction(mail_site: MailSite) -> None:
    start = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(minutes=30)
    mail_site.site.job("10", start=start, hours=0.25)
    mail_site.site.job("11", start=start, hours=0.25, user="bob")
    statements: list[tuple[str, bool]] = []

    def record(execute: Callable[..., Any], sql: str, params: Any, many: bool,
               context: Any) -> Any:
        statements.append((sql, connection.in_atomic_block))
        return execute(sql, params, many, context)

    source, now = accounting(get_config()), django_timezone.now()
    with connection.execute_wrapper(record):
        first = poll(source, mail_settings(), now)  # makes the cursor
        poll(source, mail_settings(), now + timedelta(minutes=1))  # moves it
        delivered = deliver_due(sender(), now + timedelta(minutes=1))
    assert first.queued == 2 and len(delivered) == 2
    assert any("usage_usagemailcursor" in sql for sql, _ in statements)
    assert reads_before_writes(statements) == []
