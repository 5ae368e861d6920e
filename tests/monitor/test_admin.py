"""The staff-only admin: tokens without their digests, records read-only."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from clusterwatch.monitor.core.models import HostToken
from clusterwatch.monitor.core.operators import set_operator
from clusterwatch.monitor.ingest import tokens
from tests.monitor.records import example, recent, store

pytestmark = pytest.mark.django_db


def test_it_keeps_operators_who_are_not_staff_out_of_the_admin(
    client: Client, django_user_model: Any,
) -> None:
    user = django_user_model.objects.create_user("operator", password="x" * 20)
    set_operator(user, True)
    client.force_login(user)
    response = client.get("/admin/")
    assert response.status_code == 302 and response["Location"].startswith("/admin/login/")
    assert client.get("/admin/monitor/hosttoken/").status_code == 302
    assert b'href="/admin/"' not in client.get("/hosts/").content


def test_it_lists_tokens_by_prefix_and_keys_never_by_digest(admin_client: Client) -> None:
    row, secret = tokens.create(["pandaharvester01", "osgsub01"], note="BNL pair")
    listing = admin_client.get("/admin/monitor/hosttoken/").content.decode()
    assert row.prefix in listing and "osgsub01, pandaharvester01" in listing
    change = admin_client.get(f"/admin/monitor/hosttoken/{row.pk}/change/")
    assert change.status_code == 200
    page = change.content.decode()
    for hidden in (row.digest, secret, secret[len(row.prefix) + 1:]):
        assert hidden not in listing and hidden not in page
    assert 'name="digest"' not in page and 'name="prefix"' not in page
    assert 'name="note"' in page
    assert admin_client.get("/admin/monitor/hosttoken/add/").status_code == 403


def test_it_lets_staff_edit_a_note_but_not_the_digest(admin_client: Client) -> None:
    row, _ = tokens.create(["pandaharvester01"])
    digest = row.digest
    url = f"/admin/monitor/hosttoken/{row.pk}/change/"
    form = dict(re.findall(r'<input type="(?:hidden|text)" name="([^"]+)" value="([^"]*)"',
                           admin_client.get(url).content.decode()))
    form.update(note="moved to rack 4", digest="0" * 64, prefix="cwh_evil")
    assert admin_client.post(url, form).status_code == 302
    row.refresh_from_db()
    assert row.note == "moved to rack 4"
    assert row.digest == digest and row.prefix.startswith("cwh_") and row.prefix != "cwh_evil"


def test_it_revokes_selected_tokens(admin_client: Client) -> None:
    row, _ = tokens.create(["pandaharvester01"])
    response = admin_client.post("/admin/monitor/hosttoken/",
                                 {"action": "revoke", "_selected_action": [str(row.pk)]})
    assert response.status_code == 302
    row.refresh_from_db()
    assert row.revoked_at is not None
    assert HostToken.objects.filter(revoked_at__isnull=True).count() == 0


def test_it_shows_records_read_only(admin_client: Client) -> None:
    report = store(recent(example(), timezone.now() - dt.timedelta(minutes=1)))
    assert admin_client.get("/admin/monitor/hostreport/").status_code == 200
    view = admin_client.get(f"/admin/monitor/hostreport/{report.pk}/change/")
    assert view.status_code == 200
    assert b"pandaharvester01" in view.content and b'name="_save"' not in view.content
    edit = admin_client.post(f"/admin/monitor/hostreport/{report.pk}/change/",
                             {"key": "changed"})
    assert edit.status_code == 403
    assert admin_client.post(f"/admin/monitor/hostreport/{report.pk}/delete/",
                             {"post": "yes"}).status_code == 403
    for model in ("latestreport", "latestqueue", "jobpush"):
        assert admin_client.get(f"/admin/monitor/{model}/").status_code == 200, model
    search = admin_client.get("/admin/monitor/jobpush/", {"q": "not-a-number"})
    assert search.status_code == 200
    found = admin_client.get("/admin/monitor/jobpush/", {"q": "6723451"})
    assert b"8812345" in found.content


def test_it_shows_a_remote_keys_builder_settings_but_leaves_them_to_register_harvester(
        admin_client: Client) -> None:
    # register_harvester checks them as the builder would; a typo typed here would leave the
    # timer failing with 78 every five minutes, so the admin only shows them.
    from clusterwatch.monitor.core.models import RegisteredHarvester

    RegisteredHarvester.objects.create(key="perlmutter-harvester", remote=True,
                                       harvester_id="Perlmutter_test_1",
                                       queue_config="/etc/clusterwatch/perlmutter.json")
    url = "/admin/monitor/registeredharvester/perlmutter-harvester/change/"
    page = admin_client.get(url).content.decode()
    assert "Perlmutter_test_1" in page and "/etc/clusterwatch/perlmutter.json" in page
    assert 'name="harvester_id"' not in page and 'name="queue_config"' not in page
    form = {"key": "perlmutter-harvester", "remote": "on", "note": "NERSC",
            "harvester_id": "a\tb", "queue_config": "relative.json"}
    assert admin_client.post(url, form).status_code == 302
    row = RegisteredHarvester.objects.get(key="perlmutter-harvester")
    assert row.note == "NERSC" and row.harvester_id == "Perlmutter_test_1"
    assert row.queue_config == "/etc/clusterwatch/perlmutter.json"
