"""Identical records posted at the same moment to several gunicorn workers (a reporter retry
racing its first attempt, two reporter installations sending one buffer): one is stored, the
others answer 200 duplicate with its id. On SQLite, and on PostgreSQL in that pass."""

from __future__ import annotations

import datetime as dt
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from clusterwatch.loopback.monitor_server import MonitorServer
from tests.monitor.served_support import (
    SHARED_WORKERS,
    Answer,
    now,
    post,
    record_body,
    token_for,
)

pytestmark = pytest.mark.integration

WORKERS = SHARED_WORKERS  # gunicorn's, as the shipped unit runs
SENDERS = 8  # posts of one record at once, more than the workers
ROUNDS = 4  # records, each raced by every sender


@pytest.fixture
def server(served_monitor: MonitorServer) -> MonitorServer:
    return served_monitor  # the session's (tests/monitor/ingest/conftest.py), WORKERS workers


def _race(server: MonitorServer, key: str, token: str, body: bytes) -> list[Answer]:
    start = threading.Barrier(SENDERS)

    def send() -> Answer:
        start.wait(timeout=30)
        return post(server, key, token, body)

    with ThreadPoolExecutor(SENDERS) as pool:
        return list(pool.map(lambda _: send(), range(SENDERS)))


def _stored(server: MonitorServer, key: str) -> int:
    code = ("from clusterwatch.monitor.core.models import HostReport\n"
            f"print(HostReport.objects.filter(key={key!r}).count())")
    return int(server.manage("shell", "-c", code).stdout.strip().splitlines()[-1])


def test_identical_posts_at_once_are_stored_once(server: MonitorServer) -> None:
    key = "race01"
    token = token_for(server, key)
    first = now() - dt.timedelta(hours=1)
    for round_ in range(ROUNDS):
        answers = _race(server, key, token, record_body(key, first + dt.timedelta(minutes=round_)))
        statuses = sorted(answer.status for answer in answers)
        assert statuses == [200] * (SENDERS - 1) + [201], [a.body for a in answers]
        created = next(answer.json() for answer in answers if answer.status == 201)
        for answer in answers:
            if answer.status == 200:
                assert answer.json() == {**created, "duplicate": True}
    assert _stored(server, key) == ROUNDS


def test_different_records_at_once_are_all_stored(server: MonitorServer) -> None:
    key = "race02"
    token = token_for(server, key)
    moment = now() - dt.timedelta(hours=1)
    bodies = [record_body(key, moment, collect_seconds=1.0 + n / 10) for n in range(SENDERS)]
    start = threading.Barrier(SENDERS)

    def send(body: bytes) -> Answer:
        start.wait(timeout=30)
        return post(server, key, token, body)

    with ThreadPoolExecutor(SENDERS) as pool:
        answers = list(pool.map(send, bodies))
    assert [answer.status for answer in answers] == [201] * SENDERS
    assert sum(answer.json()["latest"] for answer in answers) == 1
    assert _stored(server, key) == SENDERS
