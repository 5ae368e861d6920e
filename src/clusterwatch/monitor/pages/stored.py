"""A stored record as the pages need it: a `HostReport` row's fields, or test data."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Optional


@dataclass(frozen=True)
class StoredRecord:
    key: str
    report_id: int
    record: Mapping[str, Any]
    collected_at: dt.datetime
    received_at: Optional[dt.datetime] = None
