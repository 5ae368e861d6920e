"""watch/condor.py: `condor_status -af Machine LastHeardFrom` read into machines and their
LastHeardFrom, and the collector's clock the answer shows."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterwatch.loopback.fake_condor import recorded_argv, write_fake_condor_status
from clusterwatch.watch.condor import (
    NodeObservation,
    collector_now,
    parse_machines,
    parse_observation,
    query_machines,
)

T0 = 1_790_949_600  # 2026-10-02 14:00:00Z


def test_it_takes_the_newest_last_heard_over_a_machines_slot_ads() -> None:
    seen = parse_observation(f"a.example.org {T0 - 200}\na.example.org {T0 - 20}\n"
                             f"a.example.org {T0 - 100}\nb.example.org {T0 - 700}\n")
    assert seen.machines == {"a.example.org", "b.example.org"}
    assert dict(seen.heard) == {"a.example.org": T0 - 20, "b.example.org": T0 - 700}
    assert sorted(seen.heard_times) == [T0 - 700, T0 - 200, T0 - 100, T0 - 20]


@pytest.mark.parametrize("plain_line", [
    "a.example.org",  # a condor_status that prints the machine alone
    "a.example.org undefined",  # a collector that publishes no LastHeardFrom
    "a.example.org 1234567890123",  # more digits than any epoch time
])
def test_a_machine_with_one_ad_without_a_usable_last_heard_has_none(plain_line: str) -> None:
    """One of its ads may be fresh: the plain rule (present while any ad is there) holds."""
    seen = parse_observation(f"a.example.org {T0 - 900}\n{plain_line}\nb.example.org {T0}\n")
    assert seen.machines == {"a.example.org", "b.example.org"}
    assert dict(seen.heard) == {"b.example.org": T0}


@pytest.mark.parametrize("word", ["soon", "-5", "17e8", "\u0661\u0662\u0663"])
def test_a_line_whose_last_word_is_no_time_is_a_machine_name(word: str) -> None:
    """As `-af Machine` read it (discover refuses a name with a space)."""
    seen = parse_observation(f"a.example.org {word}\nb.example.org {T0}\n")
    assert seen.machines == {f"a.example.org {word}", "b.example.org"}
    assert dict(seen.heard) == {"b.example.org": T0}


def test_it_reads_the_plain_answer_as_before() -> None:
    text = "a.example.org\nundefined\na.example.org\n\n  b.example.org  \n"
    seen = parse_observation(text)
    assert seen == NodeObservation(machines=frozenset({"a.example.org", "b.example.org"}))
    assert parse_machines(text) == {"a.example.org", "b.example.org"}


def test_it_skips_ads_without_a_machine() -> None:
    seen = parse_observation(f"undefined {T0}\nundefined undefined\na.example.org {T0}\n")
    assert seen.machines == {"a.example.org"}


def test_the_collector_clock_is_the_newest_last_heard_not_after_the_poll() -> None:
    seen = parse_observation(f"a {T0 - 30}\nb {T0 - 300}\nc {T0 + 10_000}\n")
    assert collector_now(seen, T0) == T0 - 30  # c's future time is left out
    assert collector_now(parse_observation("a\nb undefined\n"), T0) == T0
    assert collector_now(parse_observation(f"a {T0 + 5}\n"), T0) == T0


def test_it_asks_condor_status_for_the_machine_and_last_heard(tmp_path: Path) -> None:
    answer = tmp_path / "answer.txt"
    answer.write_text(f"worker1.example.org {T0 - 40}\nworker1.example.org {T0 - 10}\n"
                      "worker2.example.org undefined\n")
    script = write_fake_condor_status(tmp_path / "bin", answer)
    seen = query_machines(str(script), 5.0)
    assert recorded_argv(tmp_path / "bin") == [["-af", "Machine", "LastHeardFrom"]]
    assert seen.error is None
    assert seen.machines == {"worker1.example.org", "worker2.example.org"}
    assert dict(seen.heard) == {"worker1.example.org": T0 - 10}
