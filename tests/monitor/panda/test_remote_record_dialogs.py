"""remote_dialogs: the harvester's messages over 24 hours, per module and per kind (numbers
set aside, queue names kept whole), levels, the window and the cap on kinds."""

from __future__ import annotations

import datetime as dt
from typing import Any

from clusterwatch.monitor.panda.remote.dialogs import KINDS_KEPT, dialogs_section
from clusterwatch.monitor.panda.server_rows import SourceFailed
from tests.monitor.panda.remote_rows import EPIC, GPU, HARVESTER, NOW, ago, dialog, naive

QUEUES = (EPIC, GPU, "BNL_OSG_EPIC_PROD_1", "CERN-PROD-1", "CERN-PROD-2")


def section(*rows: Any, queues: Any = QUEUES) -> dict[str, Any]:
    return dialogs_section(HARVESTER, list(rows), queues, NOW)


def kinds(*messages: str) -> list[str]:
    found = section(*(dialog(number, message) for number, message in enumerate(messages, 1)))
    return sorted(kind["kind"] for kind in found["kinds"])


def test_it_sets_the_numbers_aside_to_group_messages_into_kinds() -> None:
    assert kinds("failed to submit a workerID=8812001 (exit 1) after 2.5 s",
                 "failed to submit a workerID=8812002 (exit 143) after 10.25 s",
                 "object at 0x7f3a9c; object at 0x1b") == [
        "failed to submit a workerID=# (exit #) after # s", "object at #; object at #"]


def test_it_keeps_names_that_hold_digits_whole() -> None:
    assert kinds("node nid001234 down at 2026-10-02 18:24:05",
                 "node nid001235 down at 2026-10-02 18:25:05") == [
        "node nid001234 down at #-#-# #:#:#", "node nid001235 down at #-#-# #:#:#"]


def test_it_keeps_the_queue_names_verbatim_even_their_numbers() -> None:
    assert kinds("queue CERN-PROD-1 has 5 workers", "queue CERN-PROD-2 has 7 workers",
                 "queue BNL_OSG_EPIC_PROD_1 has 9 workers") == [
        "queue BNL_OSG_EPIC_PROD_1 has # workers", "queue CERN-PROD-1 has # workers",
        "queue CERN-PROD-2 has # workers"]


def test_it_says_which_of_the_harvesters_queues_a_kind_names_whole_names_only() -> None:
    found = section(
        dialog(1, f"no pilots for {GPU}"),  # EPIC is inside GPU's name: not named
        dialog(2, f"{EPIC} and {GPU} are short of CPU."),
        dialog(3, f"queue {EPIC}x, {EPIC}-old, or /{EPIC}.json"),
        dialog(4, "lost heartbeat", identifier=f"check_workers <site={EPIC}>"),
    )
    named = {kind["kind"]: kind["queues"] for kind in found["kinds"]}
    assert named[f"no pilots for {GPU}"] == [GPU]
    assert named[f"{EPIC} and {GPU} are short of CPU."] == [EPIC, GPU]
    assert named[f"queue {EPIC}x, {EPIC}-old, or /{EPIC}.json"] == []
    assert named[f"check_workers <site={EPIC}> lost heartbeat"] == [EPIC]


def test_it_shows_warning_and_error_only_and_counts_the_other_levels() -> None:
    found = section(dialog(1, "a", level="ERROR"), dialog(2, "b", level="WARNING"),
                    dialog(3, "c", level="warning "), dialog(4, "d", level="INFO"),
                    dialog(5, "e", level="CRITICAL"), dialog(6, "f", level=None))
    assert found["messages"] == 3
    assert found["other_levels"] == {"INFO": 1, "CRITICAL": 1, "(none)": 1}
    assert found["modules"]["submitter"]["by_level"] == {"ERROR": 1, "WARNING": 2}


def test_it_covers_24_hours_and_counts_messages_dated_ahead() -> None:
    day = dt.timedelta(hours=24)
    found = section(dialog(1, "edge", at=naive(NOW - day)),
                    dialog(2, "inside", at=naive(NOW - day + dt.timedelta(seconds=1))),
                    dialog(3, "ahead", at=naive(NOW + dt.timedelta(minutes=2))))
    assert sorted(kind["kind"] for kind in found["kinds"]) == ["ahead", "inside"]
    assert found["dated_ahead"] == 1 and found["since"] == "2026-10-01T18:30:00Z"
    assert found["modules"]["submitter"]["latest"]["message"] == "ahead"


def test_it_takes_the_latest_of_two_rows_with_one_dialog_id() -> None:
    found = section(dialog(7, "old", at=ago(hours=2)), dialog(7, "new", at=ago(hours=1)))
    assert [kind["kind"] for kind in found["kinds"]] == ["new"]


def test_it_keeps_each_modules_latest_message_with_its_time_and_level() -> None:
    found = section(dialog(1, "first", level="ERROR", at=ago(hours=3)),
                    dialog(2, "second", level="WARNING", at=ago(hours=1),
                           identifier="run <token=9>"),
                    dialog(3, "other", module=None, at=ago(hours=2)))
    assert found["modules"]["submitter"] == {
        "count": 2, "by_level": {"ERROR": 1, "WARNING": 1},
        "latest": {"at": "2026-10-02T17:30:00Z", "level": "WARNING",
                   "identifier": "run <token=9>", "message": "second"}}
    assert found["modules"]["(null)"]["count"] == 1


def test_it_orders_kinds_by_count_then_most_recent_and_keeps_first_and_latest() -> None:
    found = section(dialog(1, "rare", at=ago(minutes=1)),
                    dialog(2, "often 1", at=ago(hours=5)), dialog(3, "often 2", at=ago(hours=4)),
                    dialog(4, "older", at=ago(hours=9)))
    assert [kind["kind"] for kind in found["kinds"]] == ["often #", "rare", "older"]
    often = found["kinds"][0]
    assert (often["count"], often["first"]) == (2, "2026-10-02T13:30:00Z")
    assert often["latest"]["message"] == "often 2"


def test_it_keeps_a_kind_per_module_and_level() -> None:
    found = section(dialog(1, "timeout 5", module="submitter"),
                    dialog(2, "timeout 6", module="monitor"),
                    dialog(3, "timeout 7", module="monitor", level="WARNING"))
    assert sorted((kind["module"], kind["level"]) for kind in found["kinds"]) == [
        ("monitor", "ERROR"), ("monitor", "WARNING"), ("submitter", "ERROR")]


def test_it_keeps_the_most_frequent_kinds_and_counts_the_rest() -> None:
    rows = [dialog(number, f"kind {chr(0x4e00 + number)}", at=ago(minutes=number))
            for number in range(1, KINDS_KEPT + 6)]
    rows.append(dialog(999, f"kind {chr(0x4e00 + 1)}", at=ago(minutes=500)))
    found = section(*rows)
    assert len(found["kinds"]) == KINDS_KEPT and found["kinds"][0]["count"] == 2
    assert (found["kinds_left_out"], found["messages_left_out"]) == (5, 5)
    assert found["messages"] == KINDS_KEPT + 6


def test_it_reads_a_null_message_as_empty_and_only_its_own_rows() -> None:
    other = dialog(2, "theirs")
    other["harvester_id"] = "BNL_osg_harvester_1"
    found = section(dialog(1, None), other)
    assert found["messages"] == 1 and found["kinds"][0]["kind"] == ""
    assert found["kinds"][0]["latest"]["message"] == ""


def test_it_works_without_any_queue_names_and_says_when_the_table_was_not_read() -> None:
    assert section(dialog(1, "Q_1 lost 3"), queues=())["kinds"][0]["queues"] == []
    failed = dialogs_section(HARVESTER, SourceFailed("timeout"), QUEUES, NOW)
    assert failed == {"error": "harvester_dialogs: timeout"}
