"""API tokens (clusterwatch.monitor.core.api_tokens): the kernel's model in the usage app's
table, authenticating as their user, and the usage admin's proxy over the same rows."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from clusterwatch.monitor.core import api_tokens
from clusterwatch.monitor.core.models import ApiToken
from clusterwatch.monitor.ingest import tokens as host_tokens
from clusterwatch.monitor.usage.models import UsageApiToken

pytestmark = pytest.mark.django_db


def test_the_model_keeps_the_table_the_usage_app_made() -> None:
    assert ApiToken._meta.db_table == "usage_usageapitoken"
    assert UsageApiToken._meta.proxy and UsageApiToken._meta.concrete_model is ApiToken
    assert (UsageApiToken._meta.app_label, UsageApiToken._meta.model_name) == (
        "usage", "usageapitoken")  # the admin's address and permissions


def test_a_token_authenticates_as_its_user_and_is_marked_used() -> None:
    alice = User.objects.create_user("alice")
    row, token = api_tokens.create(alice, note="allocator")
    assert isinstance(row, ApiToken) and row.digest != token and token.startswith(row.prefix)
    assert api_tokens.from_header(f"Bearer {token}") == token
    assert api_tokens.authenticate(token) == alice
    assert ApiToken.objects.get(pk=row.pk).last_used_at is not None
    assert UsageApiToken.objects.get(pk=row.pk).note == "allocator"


def test_a_revoked_token_a_forged_one_and_an_inactive_user_authenticate_no_one() -> None:
    alice = User.objects.create_user("alice")
    row, token = api_tokens.create(alice)
    forged = token[:-1] + ("A" if token[-1] != "A" else "B")
    assert api_tokens.authenticate(forged) is None
    User.objects.filter(pk=alice.pk).update(is_active=False)
    assert api_tokens.authenticate(token) is None
    User.objects.filter(pk=alice.pk).update(is_active=True)
    ApiToken.objects.filter(pk=row.pk).update(revoked_at=timezone.now())
    assert api_tokens.authenticate(token) is None


def test_a_host_token_is_no_api_token() -> None:
    _row, host = host_tokens.create(["pandaharvester01"])
    assert api_tokens.from_header(f"Bearer {host}") is None
    assert api_tokens.authenticate(host) is None
