"""alarms.operations: silences and acknowledgements as staff make them, on either database."""

from __future__ import annotations

import datetime as dt
from typing import Optional

import pytest

from clusterwatch.monitor.alarms import holds as engine
from clusterwatch.monitor.alarms import operations, store
from clusterwatch.monitor.alarms.operations import (
    acknowledge,
    add_silence,
    expire_silence,
    find_alarm,
    list_silences,
    unacknowledge,
)
from clusterwatch.monitor.alarms.status import summary
from clusterwatch.monitor.core.models import Alarm, AlarmSilence
from clusterwatch.notify.silences import KEEP_ENDED_S, SilenceError
from tests.monitor.alarms.support import T0, make_record, put, ssl_failing

pytestmark = pytest.mark.django_db
NOW = T0 + 600


def utc(t: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(t, tz=dt.timezone.utc)


def alarm(target: str, incident: str, closed_at: Optional[float] = None) -> Alarm:
    key = target.split(":")[1]
    made: Alarm = Alarm.objects.create(
        target=target, kind=target.split(":")[0], key=key, incident=incident, status="x",
        detail=f"{target} is bad", opened_at=utc(T0),
        closed_at=None if closed_at is None else utc(closed_at))
    return made


def silence(*matchers: str, hours: float = 2.0, at: float = NOW) -> AlarmSilence:
    return add_silence(list(matchers), duration_s=hours * 3600, until=None,
                       comment="disk swap", author="alice", now=at)


def test_it_stores_a_silence_with_its_author_and_span() -> None:
    row = silence("key:pandaharvester0*", "filesystem:/data")
    stored = AlarmSilence.objects.get(id=row.id)
    assert len(stored.id) == 12 and int(stored.id, 16) >= 0
    assert stored.matchers == ["key:pandaharvester0*", "filesystem:/data"]
    assert stored.starts_at == utc(NOW) and stored.ends_at == utc(NOW + 7200)
    assert (stored.author, stored.comment, stored.expired_at) == ("alice", "disk swap", None)


def test_it_ends_a_silence_at_a_given_time() -> None:
    row = add_silence(["host:wn1*"], duration_s=None, until=NOW + 3600, comment=" a  b ",
                      author="bob", now=NOW)
    assert row.ends_at == utc(NOW + 3600) and row.comment == "a b"


@pytest.mark.parametrize(("matchers", "duration", "until", "comment", "message"), [
    (["node:wn1*"], 3600.0, None, "x", "unknown kind 'node'"),
    (["key"], 3600.0, None, "x", "is not KIND:PATTERN"),
    (["key:"], 3600.0, None, "x", "empty pattern"),
    ([], 3600.0, None, "x", "at least one matcher"),
    (["key:a"], None, None, "x", "either a duration or an end time"),
    (["key:a"], 60.0, NOW + 60, "x", "either a duration or an end time"),
    (["key:a"], 0.0, None, "x", "positive"),
    (["key:a"], -5.0, None, "x", "positive"),
    (["key:a"], 400 * 86400.0, None, "x", "366 days"),
    (["key:a"], None, NOW - 1, "x", "not in the future"),
    (["key:a"], 60.0, None, "   ", "needs a comment"),
    (["key:a"], 60.0, None, "y" * 501, "longer than 500"),
])
def test_it_refuses_bad_silences_and_stores_nothing(
    matchers: list[str], duration: Optional[float], until: Optional[float], comment: str,
    message: str,
) -> None:
    with pytest.raises(SilenceError, match=message) as caught:
        add_silence(matchers, duration_s=duration, until=until, comment=comment,
                    author="alice", now=NOW)
    assert "\n" not in str(caught.value)
    assert not AlarmSilence.objects.exists()


def test_it_lists_running_silences_first_then_recently_ended() -> None:
    long = silence("key:a", hours=5)
    short = silence("key:b", hours=1)
    expired = silence("key:c", hours=5)
    expire_silence(expired.id, NOW + 60, by="carol")
    old = silence("key:d", hours=1, at=NOW - KEEP_ENDED_S - 7200)  # ended over a week ago
    ended = silence("key:e", hours=1, at=NOW - 7200)
    listed = [row.id for row in list_silences(NOW + 120)]
    assert listed == [short.id, long.id, expired.id, ended.id]
    assert old.id not in listed
    assert [row.id for row in list_silences(NOW + 120, include_ended=False)] == [
        short.id, long.id]


def test_it_expires_a_silence_once() -> None:
    row = silence("key:a")
    done = expire_silence(row.id, NOW + 60, by="carol")
    assert done.expired_at == utc(NOW + 60)
    assert AlarmSilence.objects.get(id=row.id).expired_at == utc(NOW + 60)
    with pytest.raises(SilenceError, match="already ended"):
        expire_silence(row.id, NOW + 120, by="carol")
    with pytest.raises(LookupError, match="no silence 'ffffffffffff'"):
        expire_silence("ffffffffffff", NOW, by="carol")


def test_its_facts_are_key_host_queues_and_filesystem() -> None:
    put("pandaharvester01", ssl_failing(collected_at=T0))
    panda = alarm("panda_unreachable:pandaharvester01", "i1")
    disk = alarm("host_disk_space:pandaharvester01:/data", "i2")
    unknown = alarm("reporter_stale:nobody", "i3")
    assert alarm_facts(panda.target) == {
        "key": ["pandaharvester01"], "host": ["pandaharvester01.sdcc.bnl.gov",
                                              "pandaharvester01"],
        "queue": ["BNL_PanDA_1", "UM_GREX_PanDA_1"], "filesystem": []}
    assert alarm_facts(disk.target)["queue"] == []
    assert alarm_facts(disk.target)["filesystem"] == ["/data"]
    assert alarm_facts(unknown.target) == {"key": ["nobody"], "host": [], "queue": [],
                                    "filesystem": []}


def alarm_facts(target: str) -> dict[str, list[str]]:
    """What the run matches silences against for `target`, from what is stored."""
    by_key = {facts.key: facts for facts in store.key_facts()}
    return engine.alarm_facts(target, by_key.get(target.split(":")[1]))


def test_it_says_which_silence_holds_which_alarm() -> None:
    put("pandaharvester01", make_record(collected_at=T0))
    disk = alarm("host_disk_space:pandaharvester01:/data", "i1")
    stale = alarm("reporter_stale:pandaharvester01", "i2")
    other = alarm("reporter_stale:pandaharvester02", "i3")
    by_disk = silence("host:pandaharvester01", "filesystem:/d*")
    by_queue = silence("queue:BNL_*", hours=3)
    found = holds(NOW + 60)
    assert set(found) == {disk.target, stale.target}
    assert found[disk.target]["by"] == f"silence {by_disk.id}"
    assert found[disk.target]["author"] == "alice"
    assert found[stale.target]["by"] == f"silence {by_queue.id}"
    assert other.target not in found
    expire_silence(by_disk.id, NOW + 120, by="alice")
    assert set(holds(NOW + 180)) == {stale.target}
    assert holds(NOW + 4 * 3600) == {}  # both ended


def holds(now: float) -> dict[str, dict[str, object]]:
    """Open alarm target -> what holds it, as alarms_status and the alarms page show it."""
    return {item["target"]: item["held_by"] for item in summary(now)["open_alarms"]
            if item["held_by"] is not None}


def test_it_acknowledges_an_open_alarm_by_incident_target_or_key() -> None:
    first = alarm("reporter_stale:pandaharvester01", "inc1")
    acked = acknowledge("inc1", author="dora", comment="  on it,\n rebooting ", now=NOW)
    assert acked.pk == first.pk
    stored = Alarm.objects.get(pk=first.pk)
    assert (stored.acknowledged_by, stored.acknowledged_at, stored.ack_comment) == (
        "dora", utc(NOW), "on it, rebooting")
    with pytest.raises(ValueError, match="already acknowledged by dora"):
        acknowledge("reporter_stale:pandaharvester01", author="eve", comment="", now=NOW)
    assert Alarm.objects.get(pk=first.pk).acknowledged_by == "dora"
    unacknowledge("pandaharvester01", by="dora", now=NOW + 60)
    stored = Alarm.objects.get(pk=first.pk)
    assert (stored.acknowledged_by, stored.acknowledged_at, stored.ack_comment) == ("", None, "")
    with pytest.raises(ValueError, match="not acknowledged"):
        unacknowledge("inc1", by="dora", now=NOW + 60)
    assert acknowledge("reporter_stale:pandaharvester01", author="eve", comment="",
                       now=NOW + 90).acknowledged_by == "eve"


def test_it_acknowledges_only_open_alarms() -> None:
    alarm("reporter_stale:pandaharvester01", "old", closed_at=T0 + 60)
    with pytest.raises(ValueError, match="is closed"):
        acknowledge("old", author="dora", comment="", now=NOW)
    with pytest.raises(LookupError, match="no open alarm or incident"):
        acknowledge("reporter_stale:pandaharvester01", author="dora", comment="", now=NOW)
    with pytest.raises(LookupError):
        acknowledge("nothing-here", author="dora", comment="", now=NOW)
    with pytest.raises(ValueError, match="longer than"):
        acknowledge("old", author="dora", comment="z" * 501, now=NOW)
    assert not Alarm.objects.exclude(acknowledged_by="").exists()


def test_a_key_with_several_open_alarms_is_ambiguous() -> None:
    alarm("reporter_stale:pandaharvester01", "a1")
    alarm("host_disk_space:pandaharvester01:/data", "a2")
    with pytest.raises(ValueError, match="several open alarms"):
        find_alarm("pandaharvester01")
    assert find_alarm("host_disk_space:pandaharvester01:/data").incident == "a2"



def test_its_matcher_kinds_are_the_engines() -> None:
    assert operations.MATCHER_KINDS == engine.KINDS == ("key", "host", "queue", "filesystem")


def test_of_two_acknowledging_at_once_one_wins_and_the_other_is_told(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made = alarm("reporter_stale:pandaharvester01", "race1")
    real = operations.find_alarm

    def found_then_eve_acknowledges(name: str) -> Alarm:
        row = real(name)  # dora read it unacknowledged; eve's acknowledgement lands now
        Alarm.objects.filter(pk=row.pk).update(acknowledged_by="eve", acknowledged_at=utc(NOW),
                                               ack_comment="mine")
        return row

    monkeypatch.setattr(operations, "find_alarm", found_then_eve_acknowledges)
    with pytest.raises(ValueError, match="already acknowledged by eve"):
        acknowledge("race1", author="dora", comment="on it", now=NOW)
    stored = Alarm.objects.get(pk=made.pk)
    assert (stored.acknowledged_by, stored.ack_comment) == ("eve", "mine")


def test_an_alarm_that_closes_while_acknowledged_is_not_acknowledged(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made = alarm("reporter_stale:pandaharvester01", "race2")
    real = operations.find_alarm

    def found_then_recovered(name: str) -> Alarm:
        row = real(name)
        Alarm.objects.filter(pk=row.pk).update(closed_at=utc(NOW))  # the run recovers it
        return row

    monkeypatch.setattr(operations, "find_alarm", found_then_recovered)
    with pytest.raises(ValueError, match="is closed"):
        acknowledge("race2", author="dora", comment="", now=NOW)
    assert Alarm.objects.get(pk=made.pk).acknowledged_at is None
