"""Who receives a job's email: the account's address (LDAP fills it), else user@DOMAIN, else
the address Slurm passed to MailProg; nobody when none is an address."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from django.contrib.auth.models import User
from django.utils import timezone as django_timezone

from clusterwatch.monitor.usage.accounting_source import accounting
from clusterwatch.monitor.usage.config import get_config
from clusterwatch.monitor.usage.mail.poll import poll
from clusterwatch.monitor.usage.mail.recipient import greeting_name, recipient_for
from tests.monitor.usage.mail_support import mail_settings
from tests.monitor.usage.site import UsageSite

pytestmark = pytest.mark.django_db


def test_the_accounts_address_comes_first_then_the_domain_then_slurms() -> None:
    User.objects.create_user("alice", email="alice.smith@uni.example", first_name="Alice")
    with_domain, without = mail_settings(domain="example.org"), mail_settings(domain="")
    assert recipient_for("alice", with_domain, "a@slurm.example") == "alice.smith@uni.example"
    assert recipient_for("bob", with_domain, "b@slurm.example") == "bob@example.org"
    assert recipient_for("bob", without, "b@slurm.example") == "b@slurm.example"
    assert recipient_for("bob", without, "bob") is None  # Slurm's default: the bare user name
    assert greeting_name("alice") == "Alice" and greeting_name("bob") == "bob"


def test_a_bad_or_inactive_accounts_address_is_passed_over() -> None:
    User.objects.create_user("carol", email="not an address")
    User.objects.create_user("dave", email="dave@uni.example", is_active=False)
    mail = mail_settings(domain="example.org")
    assert recipient_for("carol", mail) == "carol@example.org"
    assert recipient_for("dave", mail) == "dave@example.org"
    assert recipient_for("eve", mail_settings(domain=""), "e@x.org,\nBcc: f@x.org") is None


def test_the_poller_counts_users_without_an_address_and_queues_nothing_for_them(
        usage_site: UsageSite) -> None:
    start = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(minutes=30)
    usage_site.job("10", start=start, hours=0.25, user="carol")
    found = poll(accounting(get_config()), mail_settings(domain=""), django_timezone.now())
    assert (found.ended, found.queued, found.no_address) == (1, 0, ["carol"])
