"""`/alarms/`'s forms under hostile input: control characters (a NUL, a terminal escape) in
a comment, a silence id or an incident, and an id longer than any field, are refused with
the page's one-line error (400) and nothing stored, on SQLite as on PostgreSQL (which
cannot store a NUL at all: it was a 500 there)."""

from __future__ import annotations

import datetime as dt
import time
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from clusterwatch.monitor.core.models import Alarm, AlarmSilence
from tests.monitor.alarms.support import make_record, put

pytestmark = pytest.mark.django_db
TARGET = "host_disk_space:pandaharvester01:/data"


@pytest.fixture(autouse=True)
def no_channels(settings: Any, tmp_path: Any) -> None:
    settings.ALARMS_CONFIG = tmp_path / "alarms.toml"


@pytest.fixture
def alarm() -> Alarm:
    put("pandaharvester01", make_record(collected_at=time.time() - 60))
    made: Alarm = Alarm.objects.create(
        target=TARGET, kind="host_disk_space", key="pandaharvester01", incident="a1b2c3d4e5f6",
        status="97.5 %", detail="pandaharvester01 /data: 97.5 % used",
        opened_at=dt.datetime.now(tz=dt.timezone.utc) - dt.timedelta(minutes=5))
    return made


@pytest.fixture
def staff() -> Client:
    client = Client()
    client.force_login(User.objects.create_user("sam", password=None, is_staff=True))
    return client


@pytest.mark.parametrize("comment", ["disk\x00swap", "disk \x1b[2J swap", "disk\x7fswap"])
def test_a_silence_comment_with_control_characters_is_refused(
    alarm: Alarm, staff: Client, comment: str
) -> None:
    answer = staff.post("/alarms/", {"action": "silence", "matchers": "key:pandaharvester01",
                                     "duration": "2h", "until": "", "comment": comment})
    assert answer.status_code == 400
    assert "printable" in answer.content.decode() or "NUL" in answer.content.decode()
    assert not AlarmSilence.objects.exists()


@pytest.mark.parametrize("comment", ["on\x00it", "on \x1b[31m it"])
def test_an_acknowledgement_comment_with_control_characters_is_refused(
    alarm: Alarm, staff: Client, comment: str
) -> None:
    answer = staff.post("/alarms/", {"action": "acknowledge", "incident": alarm.incident,
                                     "comment": comment})
    assert answer.status_code == 400
    assert "printable" in answer.content.decode() or "NUL" in answer.content.decode()
    assert Alarm.objects.get(pk=alarm.pk).acknowledged_at is None


@pytest.mark.parametrize("action,field", [("expire", "silence"), ("acknowledge", "incident"),
                                          ("unacknowledge", "incident")])
@pytest.mark.parametrize("value", ["a1b2c3\x00d4e5f6", "a" * 2001], ids=["nul", "2001 chars"])
def test_a_nul_or_a_wall_of_text_as_an_id_is_a_400_not_a_server_error(
    alarm: Alarm, staff: Client, action: str, field: str, value: str
) -> None:
    answer = staff.post("/alarms/", {"action": action, field: value, "comment": "x"})
    assert answer.status_code == 400
    assert ("NUL" in answer.content.decode()) or ("longer than" in answer.content.decode())
    assert Alarm.objects.get(pk=alarm.pk).acknowledged_at is None
