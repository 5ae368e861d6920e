"""`/alarms/`: open alarms, channels with dead letters, recoveries; for logged-in operators."""

from __future__ import annotations

import io
import time
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client

from clusterwatch.loopback.http_recorder import SlackResponses, fake_slack
from tests.monitor.alarms.support import make_record, put, ssl_failing, volume

pytestmark = pytest.mark.django_db


def evaluate() -> None:
    call_command("evaluate_alarms", stdout=io.StringIO(), stderr=io.StringIO())


def test_it_asks_for_a_login(client: Client) -> None:
    response = client.get("/alarms/")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_it_shows_open_alarms_dead_letters_and_recoveries(
    admin_client: Client, tmp_path: Path, settings: Any
) -> None:
    with fake_slack([SlackResponses.no_service()]) as slack:
        secret = tmp_path / "hook"
        secret.write_text(f"{slack.url}/services/T0/B0/cwPAGEsecret\n")
        secret.chmod(0o600)
        settings.ALARMS_CONFIG = tmp_path / "alarms.toml"
        settings.ALARMS_CONFIG.write_text('[[channels]]\ntype = "slack"\nwebhook_file = "hook"\n')
        now = time.time()
        put("pandaharvester01", ssl_failing(collected_at=now - 400))
        volumes = {"/data": volume(97.5), "/<b>": volume(10, device="8:9")}
        put("osgsub01", make_record("osgsub01", now - 400, volumes=volumes))
        evaluate()
        put("osgsub01", make_record("osgsub01", now - 30, volumes={"/data": volume(40.0)}))
        evaluate()
    page = admin_client.get("/alarms/").content.decode()
    assert "Open <span class=\"muted\">(1)</span>" in page
    assert "panda_unreachable:pandaharvester01" in page
    assert "every fetch failed with SSLError (6 of 6)" in page
    assert "&lt;class &#x27;requests.exceptions.SSLError&#x27;&gt;" in page  # escaped
    assert "dead letters (rejected for good)" in page
    assert "redeliver_alarms --channel slack" in page
    assert "http_404_no_service" in page
    assert "Recently recovered" in page
    assert "osgsub01 /data: 40.0 % used, 60.0 GiB left of 100.0 GiB, below 90 % again" in page
    assert "cwPAGEsecret" not in page


def test_it_says_when_nothing_is_configured_or_open(admin_client: Client, settings: Any,
                                                     tmp_path: Path) -> None:
    settings.ALARMS_CONFIG = tmp_path / "absent.toml"
    page = admin_client.get("/alarms/").content.decode()
    assert "No run yet." in page
    assert "No alarm is open." in page
    assert "No channel is configured" in page
