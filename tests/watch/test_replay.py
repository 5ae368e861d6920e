"""`clusterwatch watch replay`: the spec's JSON Lines format through the CLI."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from clusterwatch.cli import main
from clusterwatch.watch.replay import ReplayError, replay

T0 = 1_700_000_000.0


def lines(*items: dict) -> str:
    return "".join(json.dumps(item) + "\n" for item in items)


def run_replay(text: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    monkeypatch.setattr(sys, "stdin", io.StringIO(text))
    status = main(["watch", "replay", "-"])
    out, err = capsys.readouterr()
    return status, [json.loads(line) for line in out.splitlines()], err


def test_it_prints_the_spec_example_decisions(monkeypatch, capsys) -> None:
    items = [{"t": T0 + m * 60, "target": "node:worker.example.org", "observation": "missing"}
             for m in range(16)]
    items += [{"t": T0 + m * 60, "target": "node:worker.example.org", "observation": "present"}
              for m in range(16, 27)]
    status, out, err = run_replay(lines(*items), monkeypatch, capsys)
    assert status == 0 and err == ""
    assert out == [
        {"t": 1700000900.0, "target": "node:worker.example.org", "action": "alert",
         "status": "missing"},
        {"t": 1700001560.0, "target": "node:worker.example.org", "action": "recover",
         "status": "present"},
    ]


def test_it_classifies_gpu_mtimes_and_words(monkeypatch, capsys) -> None:
    gpu = "gpu:192.0.2.10:9100"
    items = [
        {"t": T0, "target": gpu, "observation": T0 - 960},  # stale on the first poll
        {"t": T0 + 60, "target": gpu, "observation": "invalid"},
        {"t": T0 + 120, "target": gpu, "observation": "unknown"},
    ]
    items += [{"t": T0 + m * 60, "target": gpu, "observation": T0 + m * 60 - 20}
              for m in range(3, 14)]
    status, out, _ = run_replay(lines(*items), monkeypatch, capsys)
    assert status == 0
    assert [(d["t"], d["action"], d["status"]) for d in out] == [
        (T0, "alert", "stale"), (T0 + 13 * 60, "recover", "fresh")]


def test_it_treats_future_and_non_positive_mtimes_as_unknown() -> None:
    gpu = "gpu:g:1"
    items = [{"t": T0 + m * 60, "target": gpu, "observation": "missing"} for m in range(10)]
    items.append({"t": T0 + 600, "target": gpu, "observation": T0 + 10_000})  # future
    items += [{"t": T0 + m * 60, "target": gpu, "observation": "missing"} for m in range(11, 26)]
    items.append({"t": T0 + 26 * 60, "target": gpu, "observation": 0})
    decisions = list(replay(lines(*items).splitlines()))
    # Without the unknowns the alert would come at minute 15; the future mtime at minute 10
    # restarts the window at 11, and the zero mtime at 26 (when it would complete) is unknown.
    assert decisions == []
    items[10]["observation"] = "missing"
    assert [d.t for d in replay(lines(*items).splitlines())] == [T0 + 900]


def test_it_keeps_targets_independent(monkeypatch, capsys) -> None:
    items = []
    for m in range(16):
        items.append({"t": T0 + m * 60, "target": "node:a", "observation": "missing"})
        items.append({"t": T0 + m * 60, "target": "node:b", "observation": "unknown"})
    status, out, _ = run_replay(lines(*items), monkeypatch, capsys)
    assert status == 0 and [d["target"] for d in out] == ["node:a"]


def test_it_reads_a_file_argument(tmp_path: Path, capsys) -> None:
    path = tmp_path / "obs.jsonl"
    path.write_text(lines(*[{"t": T0 + m * 60, "target": "node:x", "observation": "missing"}
                            for m in range(16)]))
    assert main(["watch", "replay", str(path)]) == 0
    assert json.loads(capsys.readouterr().out)["action"] == "alert"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("not json", "line 1: not JSON"),
        ('{"t": 1, "target": "node:x"}', "line 1: expected an object"),
        ('{"t": "soon", "target": "node:x", "observation": "missing"}', "t must be"),
        ('{"t": 1, "target": "host:x", "observation": "missing"}', "must start with node:"),
        ('{"t": 1, "target": "node:", "observation": "missing"}', "must start with node:"),
        ('{"t": 1, "target": "node:x", "observation": "stale"}', "a node observation"),
        ('{"t": 1, "target": "gpu:x", "observation": "present"}', "a GPU observation"),
        ('{"t": 1, "target": "gpu:x", "observation": true}', "a GPU observation"),
    ],
)
def test_it_rejects_bad_lines_with_their_number(
    line: str, message: str, monkeypatch, capsys
) -> None:
    status, out, err = run_replay(line + "\n", monkeypatch, capsys)
    assert status == 1 and out == []
    assert message in err


def test_it_prints_decisions_made_before_a_bad_line(monkeypatch, capsys) -> None:
    good = [{"t": T0 + m * 60, "target": "node:x", "observation": "missing"} for m in range(16)]
    status, out, err = run_replay(lines(*good) + "garbage\n", monkeypatch, capsys)
    assert status == 1 and len(out) == 1 and "line 17" in err


def test_it_reports_an_unreadable_file_as_a_usage_error(tmp_path: Path, capsys) -> None:
    assert main(["watch", "replay", str(tmp_path / "absent.jsonl")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_it_raises_replay_error_for_library_callers() -> None:
    with pytest.raises(ReplayError, match="line 2"):
        list(replay(["", "{}"]))


def test_it_takes_an_mtime_too_large_for_a_float_as_unknown() -> None:
    huge = "1" + "0" * 400
    text = "".join(
        f'{{"t": {T0 + m * 60}, "target": "gpu:g:1", "observation": "missing"}}\n'
        for m in range(10))
    text += f'{{"t": {T0 + 600}, "target": "gpu:g:1", "observation": {huge}}}\n'
    assert list(replay(text.splitlines())) == []  # the unknown at minute 10 restarts


def test_it_rejects_a_time_too_large_for_a_float(monkeypatch, capsys) -> None:
    line = '{"t": 1' + "0" * 400 + ', "target": "node:x", "observation": "missing"}'
    status, out, err = run_replay(line + "\n", monkeypatch, capsys)
    assert status == 1 and out == [] and "line 1: t must be" in err


def test_it_reports_a_file_that_is_not_utf8(tmp_path: Path, capsys) -> None:
    path = tmp_path / "obs.jsonl"
    path.write_bytes(b'{"t": 1, "target": "node:\xff", "observation": "missing"}\n')
    assert main(["watch", "replay", str(path)]) == 1
    assert "not UTF-8 text" in capsys.readouterr().err
