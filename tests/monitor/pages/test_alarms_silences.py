"""`/alarms/`'s forms: staff silence alarms, expire silences and acknowledge alarms; other
operators see the marks but no forms, and their POSTs are refused. Django's test client
(the browser: tests/integration/test_alarm_silences_browser.py)."""

from __future__ import annotations

import datetime as dt
import re
import time
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from clusterwatch.monitor.core.models import Alarm, AlarmSilence
from clusterwatch.monitor.core.operators import set_operator
from tests.monitor.alarms.support import make_record, put

pytestmark = pytest.mark.django_db
TARGET = "host_disk_space:pandaharvester01:/data"


@pytest.fixture(autouse=True)
def no_channels(settings: Any, tmp_path: Any) -> None:
    settings.ALARMS_CONFIG = tmp_path / "alarms.toml"  # absent unless a test writes it


@pytest.fixture
def alarm() -> Alarm:
    put("pandaharvester01", make_record(collected_at=time.time() - 60))
    made: Alarm = Alarm.objects.create(
        target=TARGET, kind="host_disk_space", key="pandaharvester01", incident="a1b2c3d4e5f6",
        status="97.5 %", detail="pandaharvester01 /data: 97.5 % used",
        opened_at=dt.datetime.now(tz=dt.timezone.utc) - dt.timedelta(minutes=5))
    return made


def session(name: str, *, staff: bool = False, group: bool = False,
            csrf: bool = False) -> Client:
    user = User.objects.create_user(name, password=None, is_staff=staff)
    if group:
        set_operator(user, True)
    client = Client(enforce_csrf_checks=csrf)
    client.force_login(user)
    return client


def row(page: str, element_id: str) -> str:
    found = re.search(rf'<tr id="{re.escape(element_id)}">(.*?)</tr>', page, re.S)
    assert found, f"no row {element_id}"
    return found.group(1)


def post(client: Client, **fields: str) -> Any:
    return client.post("/alarms/", fields)


def test_staff_silence_an_alarm_and_see_it_marked(alarm: Alarm) -> None:
    sam = session("sam", staff=True)
    answer = post(sam, action="silence", matchers="host:pandaharvester01* filesystem:/data",
                  duration="2h", until="", comment="disk swap, ticket 88")
    assert answer.status_code == 303
    (silence,) = AlarmSilence.objects.all()
    assert answer["Location"] == f"/alarms/#silence-{silence.id}"
    assert silence.author == "sam" and silence.comment == "disk swap, ticket 88"
    assert silence.matchers == ["host:pandaharvester01*", "filesystem:/data"]
    page = sam.get("/alarms/").content.decode()
    marked = row(page, f"alarm-{alarm.incident}")
    assert "silenced</span> by sam until" in marked and f"silence {silence.id}" in marked
    assert "(in 1 h 59 min)" in marked or "(in 2 h)" in marked
    listed = row(page, f"silence-{silence.id}")
    assert "active" in listed and "disk swap, ticket 88" in listed and "Expire" in listed

    answer = post(sam, action="expire", silence=silence.id)
    assert (answer.status_code, answer["Location"]) == (303, "/alarms/#silences")
    assert AlarmSilence.objects.get(id=silence.id).expired_at is not None
    page = sam.get("/alarms/").content.decode()
    assert "silenced" not in row(page, f"alarm-{alarm.incident}")
    listed = row(page, f"silence-{silence.id}")
    assert "expired" in listed and "Expire" not in listed


def test_a_silence_ends_at_a_given_time(alarm: Alarm) -> None:
    sam = session("sam", staff=True)
    until = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3 * 3600))
    assert post(sam, action="silence", matchers="key:pandaharvester01", duration="",
                until=until, comment="reboot").status_code == 303
    (silence,) = AlarmSilence.objects.all()
    assert silence.ends_at.strftime("%Y-%m-%dT%H:%M:%SZ") == until


def test_a_silence_of_another_host_does_not_mark_the_row(alarm: Alarm) -> None:
    sam = session("sam", staff=True)
    post(sam, action="silence", matchers="key:osgsub*", duration="1h", comment="other")
    post(sam, action="silence", matchers="key:pandaharvester01 filesystem:/scratch",
         duration="1h", comment="other disk")
    assert AlarmSilence.objects.count() == 2
    page = sam.get("/alarms/").content.decode()
    assert "silenced" not in row(page, f"alarm-{alarm.incident}")


@pytest.mark.parametrize(("fields", "message"), [
    ({"matchers": "node:wn1*", "duration": "2h"}, "unknown kind &#x27;node&#x27;"),
    ({"matchers": "key:a", "duration": "0m"}, "is not positive"),
    ({"matchers": "key:a", "duration": "soon"}, "is not like 90m"),
    ({"matchers": "key:a", "duration": ""}, "give a duration"),
    ({"matchers": "key:a", "duration": "1h", "until": "2030-01-01T00:00:00Z"},
     "not both"),
    ({"matchers": "key:a", "until": "2030-01-01 08:00"}, "has no zone"),
    ({"matchers": "key:a", "until": "2001-01-01T00:00:00Z"}, "not in the future"),
    ({"matchers": "", "duration": "1h"}, "at least one matcher"),
    ({"matchers": "key:a", "duration": "1h", "comment": " "}, "needs a comment"),
    ({"matchers": "key:" + "x" * 3000, "duration": "1h"}, "longer than 2000"),
])
def test_bad_input_is_one_line_on_the_page_400_and_nothing_stored(
    alarm: Alarm, fields: dict[str, str], message: str
) -> None:
    sam = session("sam", staff=True)
    form = {"action": "silence", "comment": "why", "until": "", **fields}
    answer = post(sam, **form)
    assert answer.status_code == 400
    page = answer.content.decode()
    error = re.search(r'<p class="summary bad" id="alarm-error" role="alert">(.*?)</p>', page,
                      re.S)
    assert error and message in error.group(1) and "\n" not in error.group(1)
    assert not AlarmSilence.objects.exists()
    if len(fields["matchers"]) < 100:  # what was typed is kept in the form
        assert f'value="{fields["matchers"]}"' in page


def test_staff_acknowledge_an_open_alarm_and_see_who_and_since_when(alarm: Alarm) -> None:
    sam = session("sam", staff=True)
    page = sam.get("/alarms/").content.decode()
    assert "Acknowledge</button>" in row(page, f"alarm-{alarm.incident}")
    answer = post(sam, action="acknowledge", incident=alarm.incident,
                  comment="on it <b>now</b>")
    assert (answer.status_code, answer["Location"]) == (303, f"/alarms/#alarm-{alarm.incident}")
    stored = Alarm.objects.get(pk=alarm.pk)
    assert stored.acknowledged_by == "sam" and stored.ack_comment == "on it <b>now</b>"
    marked = row(sam.get("/alarms/").content.decode(), f"alarm-{alarm.incident}")
    assert "acknowledged</span> by sam" in marked and "just now" in marked
    assert "on it &lt;b&gt;now&lt;/b&gt;" in marked  # escaped
    assert "Acknowledge</button>" not in marked and "Withdraw</button>" in marked

    answer = post(sam, action="acknowledge", incident=alarm.incident, comment="me too")
    assert answer.status_code == 400 and b"already acknowledged by sam" in answer.content
    assert post(sam, action="unacknowledge", incident=alarm.incident).status_code == 303
    assert Alarm.objects.get(pk=alarm.pk).acknowledged_at is None


def test_unknown_and_closed_things_are_named_on_the_page(alarm: Alarm) -> None:
    sam = session("sam", staff=True)
    answer = post(sam, action="expire", silence="ffffffffffff")
    assert answer.status_code == 404 and b"no silence &#x27;ffffffffffff&#x27;" in answer.content
    answer = post(sam, action="acknowledge", incident="0000", comment="")
    assert answer.status_code == 404 and b"no open alarm or incident" in answer.content
    Alarm.objects.filter(pk=alarm.pk).update(closed_at=dt.datetime.now(tz=dt.timezone.utc))
    answer = post(sam, action="acknowledge", incident=alarm.incident, comment="")
    assert answer.status_code == 400 and b"is closed" in answer.content
    assert post(sam, action="launch").status_code == 400
    assert not Alarm.objects.exclude(acknowledged_by="").exists()


def test_an_operator_who_is_not_staff_sees_the_marks_but_no_forms(alarm: Alarm) -> None:
    sam = session("sam", staff=True)
    post(sam, action="silence", matchers="key:pandaharvester01", duration="1h", comment="x")
    post(sam, action="acknowledge", incident=alarm.incident, comment="mine")
    olga = session("olga", group=True)
    answer = olga.get("/alarms/")
    assert answer.status_code == 200
    page = answer.content.decode()
    assert "<form" not in page.split("<h1>Alarms</h1>", 1)[1]  # the header's forms only
    marked = row(page, f"alarm-{alarm.incident}")
    assert "silenced</span> by sam" in marked and "acknowledged</span> by sam" in marked
    silence = AlarmSilence.objects.get()
    for fields in ({"action": "silence", "matchers": "key:*", "duration": "1h", "comment": "x"},
                   {"action": "expire", "silence": silence.id},
                   {"action": "unacknowledge", "incident": alarm.incident},
                   {"action": "acknowledge", "incident": alarm.incident, "comment": ""}):
        refused = olga.post("/alarms/", fields)
        assert refused.status_code == 403 and "no-store" in refused["Cache-Control"]
    assert AlarmSilence.objects.count() == 1
    assert AlarmSilence.objects.get().expired_at is None
    assert Alarm.objects.get(pk=alarm.pk).acknowledged_by == "sam"


def test_a_researcher_and_a_stranger_cannot_post(alarm: Alarm) -> None:
    rita = session("rita")
    fields = {"action": "silence", "matchers": "key:*", "duration": "1h", "comment": "x"}
    assert rita.post("/alarms/", fields).status_code == 404
    answer = Client().post("/alarms/", fields)
    assert answer.status_code == 302 and "/accounts/login/" in answer["Location"]
    assert not AlarmSilence.objects.exists()


def test_the_forms_need_the_csrf_token(alarm: Alarm) -> None:
    sam = session("sam", staff=True, csrf=True)
    fields = {"action": "silence", "matchers": "key:*", "duration": "1h", "comment": "x"}
    assert sam.post("/alarms/", fields).status_code == 403
    assert not AlarmSilence.objects.exists()
    page = sam.get("/alarms/").content.decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    assert token
    answer = sam.post("/alarms/", {**fields, "csrfmiddlewaretoken": token.group(1)})
    assert answer.status_code == 303 and AlarmSilence.objects.count() == 1


def test_the_page_answers_put_with_405(alarm: Alarm) -> None:
    assert session("sam", staff=True).put("/alarms/").status_code == 405


def test_an_open_maintenance_window_marks_the_row(alarm: Alarm, settings: Any) -> None:
    settings.ALARMS_CONFIG.write_text(
        '[[maintenance]]\ncomment = "disk swap week"\nmatchers = ["filesystem:/data"]\n'
        'start = "2020-01-01T00:00:00Z"\nend = "2099-01-01T00:00:00Z"\n')
    page = session("sam", staff=True).get("/alarms/").content.decode()
    marked = row(page, f"alarm-{alarm.incident}")
    assert "in maintenance</span> until 2099-01-01 00:00Z" in marked
    assert "maintenance window &#x27;disk swap week&#x27;" in marked


def test_a_broken_alarms_config_leaves_the_windows_unknown(alarm: Alarm, settings: Any) -> None:
    settings.ALARMS_CONFIG.write_text("[[maintenance]]\ncomment = 3\n")
    answer = session("sam", staff=True).get("/alarms/")
    assert answer.status_code == 200
    page = answer.content.decode()
    assert "The maintenance windows are unknown" in page and "needs a comment" in page
    assert "Acknowledge</button>" in row(page, f"alarm-{alarm.incident}")


def test_what_staff_type_is_shown_escaped(alarm: Alarm) -> None:
    sam = session("sam", staff=True)
    assert post(sam, action="silence", matchers="key:<script>x</script>", duration="1h",
                comment='"><script>alert(1)</script>').status_code == 303
    page = sam.get("/alarms/").content.decode()
    assert "<script" not in page
    assert "key:&lt;script&gt;x&lt;/script&gt;" in page
    assert "&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in page
    answer = post(sam, action="silence", matchers='"><b>bold', duration="1h", comment="x")
    assert answer.status_code == 400 and b"<b>" not in answer.content
    assert b'value="&quot;&gt;&lt;b&gt;bold"' in answer.content
