"""Silences live in the watch's state: saved atomically with it, read back entry by entry."""

from __future__ import annotations

import json
from pathlib import Path

from clusterwatch.notify.silences import new_silence, parse_matcher
from clusterwatch.watch import state

from .support import T0

KINDS = ("node", "gpu")


def _silence(pattern: str = "gpu:10.1.2.*:9100") -> object:
    return new_silence((parse_matcher(pattern, KINDS),), T0, T0 + 3600, "kernel update",
                       "alice", T0)


def test_silences_survive_a_save_and_a_load(tmp_path: Path) -> None:
    one, two = _silence(), _silence("node:wn1*")
    state.save(tmp_path, state.WatchState(silences=[one, two]))  # type: ignore[list-item]
    loaded = state.load(tmp_path)
    assert loaded.silences == [one, two]
    assert loaded.damage is None


def test_a_file_of_the_previous_version_without_silences_loads_clean(tmp_path: Path) -> None:
    state.save(tmp_path, state.WatchState())
    path = tmp_path / state.STATE_FILE
    data = json.loads(path.read_bytes())
    del data["silences"]
    path.write_text(json.dumps(data))
    loaded = state.load(tmp_path, repair=False)  # would raise if it counted as damage
    assert loaded.silences == []


def test_a_damaged_silence_is_dropped_with_a_note_and_the_rest_kept(tmp_path: Path) -> None:
    good = _silence()
    state.save(tmp_path, state.WatchState(silences=[good]))  # type: ignore[list-item]
    path = tmp_path / state.STATE_FILE
    data = json.loads(path.read_bytes())
    data["silences"].append({"id": "nothex", "matchers": 5})
    path.write_text(json.dumps(data))
    loaded = state.load(tmp_path)
    assert loaded.silences == [good]
    assert loaded.damage is not None and "silence" in loaded.damage
    assert state.load(tmp_path).silences == [good]  # the repaired file keeps it


def test_a_silences_section_that_is_not_a_list_is_dropped(tmp_path: Path) -> None:
    state.save(tmp_path, state.WatchState())
    path = tmp_path / state.STATE_FILE
    data = json.loads(path.read_bytes())
    data["silences"] = {"x": 1}
    path.write_text(json.dumps(data))
    loaded = state.load(tmp_path)
    assert loaded.silences == [] and loaded.damage is not None


def test_a_file_that_is_not_json_any_more_keeps_its_silences(tmp_path: Path) -> None:
    good = _silence()
    state.save(tmp_path, state.WatchState(silences=[good]))  # type: ignore[list-item]
    path = tmp_path / state.STATE_FILE
    raw = path.read_bytes()
    path.write_bytes(raw.replace(b'"outbox":{', b'"outbox":{\x00garbage', 1))
    loaded = state.load(tmp_path)
    assert loaded.damage is not None
    assert loaded.silences == [good]
