"""The key rule shared by ingest, the harvester registry and the admin."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from clusterwatch.monitor.core.models import RegisteredHarvester
from clusterwatch.monitor.core.record_keys import valid_key


@pytest.mark.parametrize(("key", "valid"), [
    ("pandaharvester01", True), ("a", True), ("osg.sub-01_x", True), ("a" * 128, True),
    ("a" * 129, False), ("-lead", False), (".hidden", False), ("a b", False),
    ("a/b", False), ("é", False), ("a\n", False),
])
def test_the_admin_validator_and_the_rule_agree(key: str, valid: bool) -> None:
    assert valid_key(key) is valid
    try:
        RegisteredHarvester._meta.get_field("key").run_validators(key)
    except ValidationError:
        assert not valid
    else:
        assert valid


def test_an_empty_key_is_no_key() -> None:
    assert not valid_key("")
