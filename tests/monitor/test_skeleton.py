from __future__ import annotations

import pytest
from django.conf import settings

from clusterwatch.monitor.core.models import HostReport


@pytest.mark.django_db
def test_it_starts_with_an_empty_database_in_a_private_data_dir() -> None:
    assert HostReport.objects.count() == 0
    assert "clusterwatch-tests-" in str(settings.DATA_DIR)
