"""Every model change has its migration: a field added without one works in the tests' fresh
database only by luck of the order, and fails on an operator's `migrate`."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command


@pytest.mark.django_db
def test_the_models_and_the_migrations_agree() -> None:
    out = StringIO()
    try:
        call_command("makemigrations", "--check", "--dry-run", stdout=out, stderr=out)
    except SystemExit as exc:  # --check exits 1 when a migration is missing
        pytest.fail(f"makemigrations found changes (exit {exc.code}):\n{out.getvalue()}")
    assert "No changes detected" in out.getvalue()
