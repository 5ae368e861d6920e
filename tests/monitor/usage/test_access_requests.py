"""What a request other than a plain GET can do to the usage reports: other methods, forged
cross-site requests, and what a token's use records. Nothing changes state but a GET by
who may see the job (keeping its summary), a token's own use (its last_used_at), and the
job page's sharing form: a POST with its CSRF token from the owner's session."""

from __future__ import annotations

import logging

import pytest
from django.contrib.auth.models import User
from django.test import Client

from clusterwatch.monitor.usage import api_tokens
from clusterwatch.monitor.usage.models import KeptSummary, ShareLink, UsageApiToken, UsageMail
from tests.monitor.usage.access_support import (
    JOBID,
    OWNER,
    add_hidden_job,
    header,
    path_of,
    pattern_names,
)
from tests.monitor.usage.site import UsageSite

pytestmark = pytest.mark.django_db
REFUSED_METHODS = ("post", "put", "patch", "delete", "options")
FORMS = ("usage-job-share",)  # POSTed to, and nothing else


@pytest.mark.parametrize("name", [name for name in pattern_names() if name not in FORMS])
def test_it_answers_only_get_and_head_on_every_path(usage_site: UsageSite, name: str) -> None:
    add_hidden_job(usage_site)
    owner = User.objects.create_user(OWNER)
    _row, token = api_tokens.create(owner)
    session, guarded = Client(), Client(enforce_csrf_checks=True)
    for client in (session, guarded):
        client.force_login(owner)
    path = path_of(name)
    for method in REFUSED_METHODS:
        answer = getattr(session, method)(path)
        assert answer.status_code == 405 and "GET" in answer["Allow"], (method, answer.status_code)
        # A forged cross-site request has no CSRF token: refused before any view runs.
        assert getattr(guarded, method)(path).status_code in (403, 405), method
        assert getattr(header(f"Bearer {token}"), method)(path).status_code in (403, 405)
    assert not KeptSummary.objects.exists() and not UsageMail.objects.exists()
    got, head = session.get(path), session.head(path)
    assert head.status_code == got.status_code and head.content == b""
    assert UsageMail.objects.count() == 0  # GET /mail/ shows the email, never sends it


@pytest.mark.parametrize("name", FORMS)
def test_a_form_takes_only_a_post_with_its_csrf_token(usage_site: UsageSite,
                                                      name: str) -> None:
    add_hidden_job(usage_site)
    owner = User.objects.create_user(OWNER)
    _row, token = api_tokens.create(owner)
    guarded = Client(enforce_csrf_checks=True)
    guarded.force_login(owner)
    path = path_of(name)
    for method in ("get", "head", "options"):
        answer = getattr(guarded, method)(path)
        assert answer.status_code == 405 and answer["Allow"] == "POST", method
    for method in ("put", "patch", "delete"):  # the CSRF check refuses them first
        assert getattr(guarded, method)(path).status_code == 403, method
    assert guarded.post(path, {"days": "7"}).status_code == 403  # no CSRF token
    assert header(f"Bearer {token}").post(path, {"days": "7"}).status_code in (302, 403)
    assert not KeptSummary.objects.exists() and not ShareLink.objects.exists()


def test_it_records_a_tokens_use_only_when_it_authenticated_the_request(
        usage_site: UsageSite, caplog: pytest.LogCaptureFixture) -> None:
    add_hidden_job(usage_site)
    owner = User.objects.create_user(OWNER)
    row, token = api_tokens.create(owner)
    api = f"/api/v1/jobs/{JOBID}/usage"
    caplog.set_level(logging.DEBUG)

    def last_used() -> object:
        return UsageApiToken.objects.get(pk=row.pk).last_used_at

    assert header(f"Bearer {token}").get(f"/usage/jobs/{JOBID}/").status_code == 302
    wrong_secret = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
    assert header(f"Bearer {wrong_secret}").get(api).status_code == 403
    with_session = header(f"Bearer {token}")
    with_session.force_login(User.objects.create_user("bob"))
    assert with_session.get(api).status_code == 404  # the session asks, not the token
    assert last_used() is None
    assert header(f"bearer   {token}  ").get(api).status_code == 200
    used = last_used()
    assert used is not None
    owner.is_active = False
    owner.save()
    assert header(f"Bearer {token}").get(api).status_code == 403
    owner.is_active = True
    owner.save()
    UsageApiToken.objects.filter(pk=row.pk).update(revoked_at=used)
    assert header(f"Bearer {token}").get(api).status_code == 403
    assert last_used() == used
    assert token not in caplog.text and token.split("_")[-1] not in caplog.text


@pytest.mark.parametrize("value", [
    "Bearer", "Bearer ", "Token {t}", "Basic {t}", "Bearer {t} {t}", "Bearer {t}x",
    "Bearer {t},Bearer {t}", "{t}", "Bearer\t{t}", "Bearer cwh_{s}",
])
def test_it_refuses_a_malformed_authorization_header(usage_site: UsageSite, value: str) -> None:
    add_hidden_job(usage_site)
    _row, token = api_tokens.create(User.objects.create_user(OWNER))
    answer = header(value.format(t=token, s=token[4:])).get(f"/api/v1/jobs/{JOBID}/usage")
    assert answer.status_code == 403 and b"alice" not in answer.content


def test_it_lets_the_admin_revoke_a_token_only_with_the_forms_csrf_token(
        usage_site: UsageSite) -> None:
    add_hidden_job(usage_site)
    row, token = api_tokens.create(User.objects.create_user(OWNER))
    root = User.objects.create_user("root", is_staff=True, is_superuser=True)
    admin = Client(enforce_csrf_checks=True)
    admin.force_login(root)
    listing = "/admin/usage/usageapitoken/"
    forged = admin.post(listing, {"action": "revoke", "_selected_action": [row.pk]})
    assert forged.status_code == 403
    assert UsageApiToken.objects.get(pk=row.pk).revoked_at is None
    admin.get(listing)
    csrf = admin.cookies["csrftoken"].value
    admin.post(listing, {"action": "revoke", "_selected_action": [row.pk],
                         "csrfmiddlewaretoken": csrf})
    assert UsageApiToken.objects.get(pk=row.pk).revoked_at is not None
    assert header(f"Bearer {token}").get(f"/api/v1/jobs/{JOBID}/usage").status_code == 403
