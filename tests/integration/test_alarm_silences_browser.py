"""The alarms page's forms in a real browser: headless Chromium (Debian's) driven over its
DevTools pipe (tests/monitor/usage/chromium_pipe.py) against the live server. A staff member
creates a silence (and sees a bad one refused), sees the alarm marked silenced, expires the
silence, acknowledges the alarm and sees who and since when; an operator who is not staff
sees the same marks and no form. Screenshots are kept in `test-artifacts/` at the
repository root (monitor-alarms-staff.png, monitor-alarms-operator.png).

Logging in uses the browser tests' shortcut (`/test-login/<user>/`, tests/integration/
browser_support.py); every form is posted by Chromium as a person posts it, CSRF token
included. SQLite here, PostgreSQL in the PostgreSQL pass (the live server's database).
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import override_settings

from clusterwatch.monitor.core.models import Alarm, AlarmSilence
from clusterwatch.monitor.core.operators import set_operator
from tests.monitor.alarms.support import make_record, put
from tests.monitor.usage.chromium_pipe import Chromium

from .browser_support import ARTIFACTS, LOGIN_URLCONF, visible_text

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]
INCIDENT = "0a1b2c3d4e5f"
TARGET = "host_disk_space:pandaharvester01:/data"


@pytest.fixture
def chromium(need_binary: Callable[[str], str], tmp_path: Path) -> Iterator[Chromium]:
    browser = Chromium(need_binary("chromium"), tmp_path)
    try:
        yield browser
    finally:
        browser.close()


@pytest.fixture
def alarm(django_user_model: Any, settings: Any, tmp_path: Path) -> Alarm:
    settings.ALARMS_CONFIG = tmp_path / "absent.toml"
    django_user_model.objects.create_user("sam", password=None, is_staff=True)
    set_operator(django_user_model.objects.create_user("olga", password=None), True)
    now = dt.datetime.now(tz=dt.timezone.utc)
    put("pandaharvester01", make_record(collected_at=now.timestamp() - 60))
    made: Alarm = Alarm.objects.create(
        target=TARGET, kind="host_disk_space", key="pandaharvester01", incident=INCIDENT,
        status="97.5 %", detail="pandaharvester01 /data: 97.5 % used, 2.5 GiB left",
        opened_at=now - dt.timedelta(minutes=7))
    return made


def log_in(browser: Chromium, base_url: str, user: str) -> None:
    browser.open(f"{base_url}/test-login/{user}/?next=/alarms/")


def fill_and_submit(browser: Chromium, form: str, values: dict[str, str]) -> None:
    """Types `values` (field name -> text) into the form `form` (a CSS selector) and presses
    its button; waits for the page the answer leads to."""
    script = (f"(() => {{ const form = document.querySelector({json.dumps(form)});"
              f" const values = {json.dumps(values)};"
              " for (const [name, value] of Object.entries(values))"
              " form.elements[name].value = value;"
              " form.querySelector('button[type=submit]').click(); return true; })()")
    assert browser.evaluate(script) is True
    browser.wait_for("Page.loadEventFired")


def text_of(browser: Chromium, selector: str) -> str:
    found = browser.evaluate(
        f"(document.querySelector({json.dumps(selector)}) || {{}}).outerHTML || ''")
    return visible_text(str(found))


def forms_below_heading(browser: Chromium) -> int:
    """Forms in the page's content (the header holds the search and logout forms)."""
    return int(browser.evaluate("document.querySelectorAll('main form').length"))


@override_settings(ROOT_URLCONF=LOGIN_URLCONF)
def test_staff_silence_expire_and_acknowledge_in_a_browser(
    live_server: Any, chromium: Chromium, alarm: Alarm
) -> None:
    log_in(chromium, live_server.url, "sam")
    row = text_of(chromium, f"#alarm-{INCIDENT}")
    assert TARGET in row and "Acknowledge" in row and "silenced" not in row

    # A bad matcher: the page again, its one-line error, the typed text kept, nothing stored.
    fill_and_submit(chromium, "form.silence-form", {
        "matchers": "node:wn1*", "duration": "2h", "comment": "disk swap"})
    error = text_of(chromium, "#alarm-error")
    assert error.startswith("matcher 'node:wn1*': unknown kind 'node' (one of filesystem, host")
    assert chromium.evaluate("document.getElementById('silence-comment').value") == "disk swap"
    assert not AlarmSilence.objects.exists()

    fill_and_submit(chromium, "form.silence-form", {
        "matchers": "host:pandaharvester01* filesystem:/data", "duration": "2h",
        "comment": "disk swap, ticket 88"})
    (silence,) = AlarmSilence.objects.all()
    assert chromium.evaluate("location.hash") == f"#silence-{silence.id}"
    assert text_of(chromium, "#alarm-error") == ""
    row = text_of(chromium, f"#alarm-{INCIDENT}")
    assert re.search(r"silenced by sam until \d{4}-\d\d-\d\d \d\d:\d\dZ \(in (1 h 59 min|2 h)\) "
                     rf"\(silence {silence.id}: disk swap, ticket 88\)", row), row
    listed = text_of(chromium, f"#silence-{silence.id}")
    assert ("host:pandaharvester01* filesystem:/data active" in listed
            and "sam disk swap, ticket 88 Expire" in listed), listed

    fill_and_submit(chromium, f"#silence-{silence.id} form", {})
    assert AlarmSilence.objects.get(id=silence.id).expired_at is not None
    assert "silenced" not in text_of(chromium, f"#alarm-{INCIDENT}")
    listed = text_of(chromium, f"#silence-{silence.id}")
    assert " expired " in listed and "Expire" not in listed

    fill_and_submit(chromium, f"#alarm-{INCIDENT} form.ack-form",
                    {"comment": "on it: swapping the disk"})
    stored = Alarm.objects.get(pk=alarm.pk)
    assert (stored.acknowledged_by, stored.ack_comment) == ("sam", "on it: swapping the disk")
    row = text_of(chromium, f"#alarm-{INCIDENT}")
    assert re.search(r"acknowledged by sam, \d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ, just now: "
                     r"“?on it: swapping the disk”? Withdraw", row), row
    assert "Acknowledge" not in row

    fill_and_submit(chromium, "form.silence-form", {
        "matchers": "key:pandaharvester01", "duration": "90m", "comment": "until the swap"})
    assert "<script" not in chromium.dom()  # the page needs no JavaScript
    ARTIFACTS.mkdir(exist_ok=True)
    width, height = chromium.screenshot(ARTIFACTS / "monitor-alarms-staff.png")
    assert (width, height) >= (1280, 400)


@override_settings(ROOT_URLCONF=LOGIN_URLCONF)
def test_an_operator_who_is_not_staff_sees_the_marks_and_no_form(
    live_server: Any, chromium: Chromium, alarm: Alarm
) -> None:
    from clusterwatch.monitor.alarms import operations

    now = dt.datetime.now(tz=dt.timezone.utc).timestamp()
    made = operations.add_silence(["key:pandaharvester01"], duration_s=3600, until=None,
                                  comment="reboot", author="sam", now=now)
    operations.acknowledge(INCIDENT, author="sam", comment="mine", now=now)
    log_in(chromium, live_server.url, "olga")
    row = text_of(chromium, f"#alarm-{INCIDENT}")
    assert "silenced by sam until" in row and f"silence {made.id}: reboot" in row
    assert "acknowledged by sam" in row and "mine" in row
    assert "Acknowledge" not in row and "Withdraw" not in row
    assert "Expire" not in text_of(chromium, f"#silence-{made.id}")
    assert chromium.evaluate("document.querySelector('form.silence-form') === null") is True
    assert forms_below_heading(chromium) == 0
    ARTIFACTS.mkdir(exist_ok=True)
    chromium.screenshot(ARTIFACTS / "monitor-alarms-operator.png")
