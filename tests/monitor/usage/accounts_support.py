"""Kept summaries for the account-report and peer-rank tests: a few hundred made by a seeded
generator, each row holding only what the reports read (its document the keys they use), and
the rows read back by raw SQL for the tests' independent computations."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Optional

from django.db import connection

from clusterwatch.monitor.usage.models import KeptSummary

ACCOUNTS = ("atlas", "cms", "lhcb", "theory")
USERS = ("alice", "bob", "carol", "dave", "erin", "frank")
PARTITIONS = ("cpu", "gpu")


def kept(jobid: str, *, account: str = "atlas", user: str = "alice", partition: str = "cpu",
         end: datetime, elapsed_s: int, cpus: int = 1, gpus: int = 0,
         cpu_efficiency: Optional[float] = 0.5,
         memory_efficiency: Optional[float] = 0.5) -> KeptSummary:
    start = end - timedelta(seconds=elapsed_s) if elapsed_s else None
    document = {"jobid": jobid, "partition": partition, "elapsed_s": elapsed_s,
                "cpus_allocated": cpus, "gpus_allocated": gpus}
    return KeptSummary.objects.create(
        jobid=jobid, user=user, account=account, state="COMPLETED", start=start, end=end,
        cpu_efficiency=cpu_efficiency, memory_efficiency=memory_efficiency,
        document=document)


def seeded_jobs(count: int, seed: int, begin: datetime, days: int) -> None:
    """`count` jobs ending over `days` days from `begin`, some without efficiency figures,
    some running across a month's end, some that never ran."""
    generator = random.Random(seed)
    rows = []
    for number in range(count):
        end = begin + timedelta(seconds=generator.randrange(days * 86400))
        elapsed = generator.choice([0, 60, 3600, generator.randrange(1, 5 * 86400)])
        cpu = None if generator.random() < 0.1 else round(generator.random() * 1.1, 3)
        memory = None if generator.random() < 0.1 else round(generator.random(), 3)
        partition = generator.choice(PARTITIONS)
        document = {"jobid": str(number), "partition": partition, "elapsed_s": elapsed,
                    "cpus_allocated": generator.choice([1, 2, 4, 16, 64]),
                    "gpus_allocated": generator.choice([0, 0, 1, 4]) if partition == "gpu"
                    else 0}
        rows.append(KeptSummary(
            jobid=str(number), user=generator.choice(USERS),
            account=generator.choice(ACCOUNTS), state="COMPLETED",
            start=end - timedelta(seconds=elapsed) if elapsed else None, end=end,
            cpu_efficiency=cpu, memory_efficiency=memory, document=document))
    KeptSummary.objects.bulk_create(rows)


@dataclass(frozen=True)
class RawRow:
    jobid: str
    user: str
    account: str
    end: datetime
    cpu_efficiency: Optional[float]
    memory_efficiency: Optional[float]
    document: dict[str, Any]


def raw_rows() -> list[RawRow]:
    """Every kept summary, read by SQL past the ORM (the document decoded here)."""
    assert KeptSummary._meta.db_table == "usage_keptsummary"
    with connection.cursor() as cursor:  # quoted names: both databases reserve user and end
        cursor.execute('SELECT jobid, "user", account, "end", cpu_efficiency, '
                       'memory_efficiency, document FROM usage_keptsummary')
        fetched = cursor.fetchall()
    rows = []
    for jobid, user, account, end, cpu, memory, document in fetched:
        if isinstance(end, str):  # SQLite: text
            end = datetime.fromisoformat(end)
        if end.tzinfo is None:
            end = end.replace(tzinfo=timezone.utc)
        if isinstance(document, (str, bytes)):
            document = json.loads(document)
        rows.append(RawRow(jobid, user, account, end, cpu, memory, document))
    return rows
