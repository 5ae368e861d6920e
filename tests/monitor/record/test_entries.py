"""record.entries: a JSON object's entries, each read once, when first asked for."""

from __future__ import annotations

from typing import Any

import pytest

from clusterwatch.monitor.record.entries import Entries


def _counting() -> tuple[list[Any], Any]:
    seen: list[Any] = []

    def read(value: Any) -> str:
        seen.append(value)
        return f"read {value}"

    return seen, read


def test_it_reads_an_entry_once_and_only_when_asked() -> None:
    seen, read = _counting()
    entries = Entries({"a": 1, "b": 2, "c": 3}, read)
    assert seen == []
    assert entries["b"] == "read 2" and entries["b"] == "read 2"
    assert seen == [2]
    assert list(entries.items()) == [("a", "read 1"), ("b", "read 2"), ("c", "read 3")]
    assert seen == [2, 1, 3]


def test_it_leaves_out_what_keep_refuses() -> None:
    seen, read = _counting()
    entries = Entries({"error": "x", "a": {}, "b": {"n": 1}}, read,
                      lambda name, value: name != "error" and bool(value))
    assert "b" in entries and "a" not in entries and "error" not in entries
    with pytest.raises(KeyError):
        entries["a"]
    assert entries.get("error") is None
    assert list(entries) == ["b"] and len(entries) == 1
    assert list(entries.values()) == ["read {'n': 1}"]
    assert seen == [{"n": 1}]
    with pytest.raises(KeyError):
        entries["missing"]


def test_it_equals_the_mapping_it_reads_to() -> None:
    assert Entries({"a": 1}, str) == {"a": "1"}
    assert Entries({}, str) == {}
