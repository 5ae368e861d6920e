"""The alarm conditions, over plain records (no database)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from clusterwatch.monitor.alarms.disk_rule import observe_disks
from clusterwatch.monitor.alarms.observation import (
    DETAIL_CHARS,
    AlarmState,
    Observation,
    RuleSettings,
)
from clusterwatch.monitor.alarms.panda_rule import observe_fetching
from clusterwatch.monitor.alarms.rules import KeyFacts, observe_key
from clusterwatch.monitor.record.host_record import parse_record
from tests.monitor.alarms.support import (
    GIB,
    SSL_LINE,
    T0,
    fetch_queue,
    make_record,
    ssl_failing,
    volume,
)

KEY = "pandaharvester01"
SETTINGS = RuleSettings()
SCHEMA = Path(__file__).parents[3] / "src/clusterwatch/reporter/record-v1.schema.json"


def disks(
    volumes: object, open_targets: tuple[str, ...] = (), settings: RuleSettings = SETTINGS
) -> dict[str, Observation]:
    return observe_disks(KEY, parse_record(make_record(volumes=volumes)), T0, settings,
                         open_targets)


def test_it_builds_records_the_reporters_schema_accepts() -> None:
    schema = json.loads(SCHEMA.read_text())
    for record in (make_record(), ssl_failing(),
                   make_record(volumes={"/": volume(95), "/var": {"same_as": "/"},
                                        "/data": {"error": "cannot stat /data: ENOENT"}})):
        jsonschema.validate(record, schema)


def test_it_raises_disk_space_at_90_percent_and_not_at_89_9() -> None:
    below = disks({"/data": volume(89.9)})["host_disk_space:pandaharvester01:/data"]
    at = disks({"/data": volume(90.0)})["host_disk_space:pandaharvester01:/data"]
    assert below.state is AlarmState.CLEAR
    assert at.state is AlarmState.FIRING
    assert at.status == "90.0 %"
    assert at.detail == ("pandaharvester01 /data: 90.0 % used, 10.0 GiB left of 100.0 GiB "
                         "(alarm at 90 %)")
    assert at.evidence_at == T0


def test_it_says_what_cleared_in_the_recovery_text() -> None:
    seen = disks({"/data": volume(71.0, total_gib=2048)})["host_disk_space:pandaharvester01:/data"]
    assert seen.detail == ("pandaharvester01 /data: 71.0 % used, 593.9 GiB left of 2.0 TiB, "
                           "below 90 % again")


def test_it_takes_the_threshold_from_the_settings() -> None:
    seen = disks({"/": volume(80.0)}, settings=RuleSettings(disk_used_percent=80))
    assert seen["host_disk_space:pandaharvester01:/"].state is AlarmState.FIRING
    assert "(alarm at 80 %)" in seen["host_disk_space:pandaharvester01:/"].detail


def test_it_counts_aliases_of_one_filesystem_once() -> None:
    seen = disks({
        "/var": volume(95.0, device="8:1"),
        "/": volume(95.0, device="8:1"),  # the same device under two mount points
        "/tmp": {"same_as": "/"},  # the reporter's own alias marking
        "/data": volume(40.0, device="8:2"),
    })
    disk_targets = sorted(name for name in seen if name.startswith("host_disk_space:"))
    assert disk_targets == ["host_disk_space:pandaharvester01:/",
                            "host_disk_space:pandaharvester01:/data"]
    assert seen["host_disk_space:pandaharvester01:/"].detail.startswith(
        "pandaharvester01 / (also /tmp, /var): 95.0 % used")


def test_it_ignores_an_unreadable_mount_that_has_no_alarm() -> None:
    seen = disks({"/": volume(40.0), "/data": {"error": "cannot stat /data: No such file"}})
    assert seen["volume_reading_missing:pandaharvester01"].state is AlarmState.CLEAR
    assert seen["host_disk_space:pandaharvester01:/data"].state is AlarmState.UNKNOWN


def test_it_reports_a_missing_reading_of_a_filesystem_in_alarm_and_holds_the_alarm() -> None:
    open_alarm = "host_disk_space:pandaharvester01:/data"
    seen = disks({"/": volume(40.0), "/data": {"error": "cannot stat /data: I/O error"}},
                 (open_alarm,))
    assert seen[open_alarm].state is AlarmState.UNKNOWN
    missing = seen["volume_reading_missing:pandaharvester01"]
    assert missing.state is AlarmState.FIRING
    assert missing.detail == (
        "pandaharvester01: disk volume reading missing in the record collected "
        "2026-10-02 18:27:05Z — /data (disk space alarm open) not read: /data: cannot stat "
        "/data: I/O error")


def test_it_raises_volume_reading_missing_when_the_section_failed() -> None:
    open_alarm = "host_disk_space:pandaharvester01:/"
    seen = disks({"error": "statvfs: permission denied"}, (open_alarm,))
    assert seen[open_alarm].state is AlarmState.UNKNOWN
    missing = seen["volume_reading_missing:pandaharvester01"]
    assert missing.state is AlarmState.FIRING
    assert missing.detail.endswith("— health.volumes: statvfs: permission denied")


def test_it_raises_volume_reading_missing_when_no_volume_could_be_read() -> None:
    seen = disks({"/": {"error": "cannot stat /: EIO"}})
    assert seen["volume_reading_missing:pandaharvester01"].state is AlarmState.FIRING
    assert "no volume could be read: /: cannot stat /: EIO" in (
        seen["volume_reading_missing:pandaharvester01"].detail)


def test_it_raises_volume_reading_missing_when_the_section_is_absent() -> None:
    record = make_record()
    del record["health"]
    seen = observe_disks(KEY, parse_record(record), T0, SETTINGS)
    assert seen["volume_reading_missing:pandaharvester01"].state is AlarmState.FIRING
    assert seen["volume_reading_missing:pandaharvester01"].detail.endswith(
        "health.volumes is missing")


def test_it_recovers_a_mount_the_reporter_no_longer_reads() -> None:
    gone = "host_disk_space:pandaharvester01:/scratch"
    now_alias = "host_disk_space:pandaharvester01:/var"
    seen = disks({"/": volume(40.0), "/var": {"same_as": "/"}}, (gone, now_alias))
    assert seen[gone].state is AlarmState.CLEAR
    assert seen[gone].detail == ("pandaharvester01 /scratch: no longer among the volumes the "
                                 "reporter reads")
    assert seen[now_alias].state is AlarmState.CLEAR
    assert "now counted as / (the same filesystem)" in seen[now_alias].detail


def test_it_raises_panda_unreachable_when_every_fetch_fails_with_one_class() -> None:
    seen = observe_fetching(KEY, parse_record(ssl_failing()), T0)
    assert seen.state is AlarmState.FIRING
    assert seen.status == "SSLError"
    assert seen.detail.startswith(
        "pandaharvester01: every fetch failed with SSLError (6 of 6) — last error: "
        "2026-10-02 18:24:05,412 panda.log.communicator: ERROR get_jobs <siteName=BNL_PanDA_1> "
        "failed to POST with <class 'requests.exceptions.SSLError'>")
    assert "CERTIFICATE_VERIFY_FAILED" in seen.detail
    assert len(seen.detail) <= DETAIL_CHARS


def test_it_does_not_call_two_error_classes_the_signature() -> None:
    record = make_record(queues={"A": fetch_queue(3, {"SSLError": 3}),
                                 "B": fetch_queue(2, {"ReadTimeout": 2})})
    seen = observe_fetching(KEY, parse_record(record), T0)
    assert seen.state is AlarmState.UNKNOWN
    assert "ReadTimeout, SSLError" in seen.detail


def test_it_says_nothing_about_panda_without_fetch_attempts() -> None:
    record = make_record(queues={"A": fetch_queue(0)})
    assert observe_fetching(KEY, parse_record(record), T0).state is AlarmState.UNKNOWN
    unread = make_record()
    unread["fetching"] = {"read": {"bytes": 0, "rotated": False, "truncated": False},
                          "error": "permission denied"}
    seen = observe_fetching(KEY, parse_record(unread), T0)
    assert seen.state is AlarmState.UNKNOWN and "permission denied" in seen.detail


def test_it_clears_panda_unreachable_when_some_fetch_succeeds() -> None:
    record = make_record(queues={"A": fetch_queue(6, {"SSLError": 1}, at=T0 - 30),
                                 "B": fetch_queue(2, at=T0 - 10)})
    seen = observe_fetching(KEY, parse_record(record), T0)
    assert seen.state is AlarmState.CLEAR
    assert seen.detail == ("pandaharvester01: fetches succeed again (7 of 8 OK, last "
                           "2026-10-02 18:26:55Z on B)")


def test_it_uses_the_fetchs_own_error_when_the_communicator_line_is_another_class() -> None:
    record = ssl_failing()
    record["failed_calls"]["communicator"]["last"]["line"] = "2026-10-02 18:20:00 ReadTimeout"
    seen = observe_fetching(KEY, parse_record(record), T0)
    assert seen.detail.endswith("last error: 2026-10-02T18:26:05Z BNL_PanDA_1: failed: SSLError")


def test_it_shortens_a_long_error_line() -> None:
    record = ssl_failing()
    record["failed_calls"]["communicator"]["last"]["line"] = SSL_LINE + " x" * 2000
    seen = observe_fetching(KEY, parse_record(record), T0)
    assert len(seen.detail) <= DETAIL_CHARS
    assert seen.detail.endswith("…")
    assert "\n" not in seen.detail


def fresh(age: float, **kwargs: object) -> KeyFacts:
    record = make_record(collected_at=T0 - age, volumes={"/": volume(95.0)})
    return KeyFacts(KEY, parse_record(record), T0 - age, **kwargs)  # type: ignore[arg-type]


def test_it_calls_a_key_stale_after_more_than_three_intervals() -> None:
    at_limit = observe_key(fresh(900.0), T0, SETTINGS)
    assert at_limit["reporter_stale:pandaharvester01"].state is AlarmState.CLEAR
    assert at_limit["host_disk_space:pandaharvester01:/"].state is AlarmState.FIRING
    beyond = observe_key(fresh(901.0), T0, SETTINGS)
    stale = beyond["reporter_stale:pandaharvester01"]
    assert stale.state is AlarmState.FIRING
    assert stale.detail == ("pandaharvester01: no record for 15 min (last collected "
                            "2026-10-02 18:12:04Z; stale after 15 min) — its other alarms stay "
                            "as they are until it reports")
    assert list(beyond) == ["reporter_stale:pandaharvester01"]  # nothing else is judged


def test_it_takes_the_interval_from_the_settings() -> None:
    slow = RuleSettings(report_interval_s=600)
    stale = observe_key(fresh(1500.0), T0, slow)["reporter_stale:pandaharvester01"]
    assert stale.state is AlarmState.CLEAR


def test_it_raises_stale_for_a_token_that_never_reported_after_the_grace() -> None:
    waiting = observe_key(KeyFacts(KEY, expected_since=T0 - 900), T0, SETTINGS)
    assert waiting["reporter_stale:pandaharvester01"].state is AlarmState.UNKNOWN
    late = observe_key(KeyFacts(KEY, expected_since=T0 - 2400), T0, SETTINGS)
    seen = late["reporter_stale:pandaharvester01"]
    assert seen.state is AlarmState.FIRING and seen.status == "never reported"
    assert seen.detail == ("pandaharvester01: never reported since its token was created "
                           "2026-10-02 17:47:05Z, 40 min ago (allowed 15 min)")
    custom = RuleSettings(never_reported_grace_s=3600)
    assert observe_key(KeyFacts(KEY, expected_since=T0 - 2400), T0,
                       custom)["reporter_stale:pandaharvester01"].state is AlarmState.UNKNOWN


def test_it_clears_every_alarm_of_a_retired_key() -> None:
    facts = KeyFacts(KEY, retired_at=T0 - 60)
    seen = observe_key(facts, T0, SETTINGS, ["reporter_stale:pandaharvester01",
                                             "host_disk_space:pandaharvester01:/",
                                             "reporter_stale:osgsub01"])
    assert sorted(seen) == ["host_disk_space:pandaharvester01:/",
                            "reporter_stale:pandaharvester01"]
    assert all(o.state is AlarmState.CLEAR for o in seen.values())
    assert seen["reporter_stale:pandaharvester01"].detail == (
        "pandaharvester01: no longer expected to report (its token was revoked "
        "2026-10-02 18:26:05Z)")


def test_it_states_the_size_left_in_human_units() -> None:
    seen = disks({"/var": {"total_bytes": 50 * GIB, "avail_bytes": 700 * 1024**2,
                           "used_percent": 98.6, "device": "8:3"}})
    assert "98.6 % used, 700.0 MiB left of 50.0 GiB" in (
        seen["host_disk_space:pandaharvester01:/var"].detail)
