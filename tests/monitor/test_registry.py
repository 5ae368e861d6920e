"""The harvester registry: its commands through the console script, and every reader (the
hosts page, the queue page, evaluate_alarms' stale-reporter alarm)."""

from __future__ import annotations

import datetime as dt
import io
import subprocess
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from clusterwatch.monitor.core import registry
from clusterwatch.monitor.core.models import Alarm, HostToken, HostTokenKey, RegisteredHarvester
from clusterwatch.monitor.panda.remote.builder import build_record
from clusterwatch.monitor.panda.remote.run import store
from tests.monitor.panda.remote_rows import (
    EPIC,
    HARVESTER,
    KEY,
    NOW,
    perlmutter_config,
    perlmutter_rows,
)
from tests.support.monitor_console import CLUSTERWATCH, console_environ, copy_migrated
from tests.support.page_text import text_of


@pytest.mark.integration
def test_it_registers_lists_and_removes_keys_through_the_console_script(
        migrated_sqlite: Path, tmp_path: Path) -> None:
    data = copy_migrated(migrated_sqlite, tmp_path / "data")

    def monitor(*arguments: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([CLUSTERWATCH, "monitor", *arguments], env=console_environ(data),
                              capture_output=True, text=True, timeout=120, check=False)
        assert "Traceback" not in done.stderr
        return done

    added = monitor("register_harvester", KEY, "--remote", "--note", "NERSC login nodes")
    assert (added.returncode, added.stdout) == (0, f"registered {KEY} (remote)\n")
    assert monitor("register_harvester", "pandaharvester01").returncode == 0
    remote = monitor("list_harvesters", "--remote")
    assert (remote.returncode, remote.stdout) == (0, f"{KEY}\n")
    every = monitor("list_harvesters").stdout.splitlines()
    assert [line.split("\t")[:2] for line in every] == [["pandaharvester01", "reporting"],
                                                        [KEY, "remote"]]
    again = monitor("register_harvester", KEY)  # no longer remote; its time stays
    assert (again.returncode, again.stdout) == (0, f"updated {KEY} (reporting)\n")
    assert monitor("list_harvesters", "--remote").stdout == ""

    for hostile in ("../etc", "a b", "x" * 129, "", "a\nb"):
        bad = monitor("register_harvester", hostile)
        assert bad.returncode == 2, (hostile, bad.stderr)
        assert len(bad.stderr.strip().splitlines()) == 1 and "not a valid key" in bad.stderr
    option = monitor("register_harvester", "-x")  # read as an option: a usage error
    assert option.returncode == 2 and "the following arguments are required: KEY" in option.stderr
    missing = monitor("remove_harvester", "nobody")
    assert missing.returncode == 1 and "nobody is not registered" in missing.stderr
    gone = monitor("remove_harvester", KEY)
    assert (gone.returncode, gone.stdout) == (0, f"removed {KEY}\n")
    assert [line.split("\t")[0] for line in monitor("list_harvesters").stdout.splitlines()] == [
        "pandaharvester01"]


@pytest.mark.django_db
def test_it_keeps_the_registration_time_and_refuses_a_bad_key() -> None:
    assert registry.register(KEY, remote=True) is True
    first = RegisteredHarvester.objects.get(key=KEY).registered_at
    assert registry.register(KEY, remote=False, note="moved") is False
    entry, = registry.registered()
    assert (entry.remote, entry.note, entry.registered_at) == (False, "moved", first)
    with pytest.raises(ValueError, match="not a valid key"):
        registry.register("a/b", remote=True)
    assert registry.remove(KEY) and not registry.remove(KEY)


def evaluate() -> str:
    out = io.StringIO()
    call_command("evaluate_alarms", stdout=out, stderr=io.StringIO())
    return out.getvalue()


def registered_ago(key: str, **delta: float) -> None:
    RegisteredHarvester.objects.create(key=key, remote=True,
                                       registered_at=timezone.now() - dt.timedelta(**delta))


@pytest.mark.django_db
def test_a_registered_key_that_never_reported_raises_the_stale_alarm_after_the_grace(
        settings: Any, tmp_path: Path) -> None:
    settings.ALARMS_CONFIG = tmp_path / "absent.toml"
    registered_ago(KEY, minutes=5)
    assert "0 raised" in evaluate()  # within the grace: waiting, no alarm
    RegisteredHarvester.objects.filter(key=KEY).update(
        registered_at=timezone.now() - dt.timedelta(hours=2))
    out = evaluate()
    assert f"ALERT reporter_stale {KEY}: never reported since it was registered " in out
    alarm = Alarm.objects.get(key=KEY)
    assert alarm.kind == "reporter_stale" and alarm.closed_at is None


@pytest.mark.django_db
def test_a_registered_remote_harvester_that_stopped_raises_the_stale_alarm(
        settings: Any, tmp_path: Path) -> None:
    settings.ALARMS_CONFIG = tmp_path / "absent.toml"
    registered_ago(KEY, days=90)
    # Its last record was built at NOW, weeks before this clock's now: it stopped.
    assert store(KEY, build_record(HARVESTER, KEY, perlmutter_rows(), perlmutter_config(), NOW),
                 1000)
    out = evaluate()
    assert f"ALERT reporter_stale {KEY}: no record for " in out


@pytest.mark.django_db
def test_a_registered_key_stays_expected_when_its_tokens_are_revoked(
        settings: Any, tmp_path: Path) -> None:
    settings.ALARMS_CONFIG = tmp_path / "absent.toml"
    token = HostToken.objects.create(prefix="abcd", digest="0" * 64,
                                     created_at=timezone.now() - dt.timedelta(hours=3),
                                     revoked_at=timezone.now())
    HostTokenKey.objects.create(token=token, key="osgsub01")
    registered_ago("osgsub01", hours=2)
    out = evaluate()
    assert "ALERT reporter_stale osgsub01: never reported since it was registered " in out


@pytest.mark.django_db
def test_the_hosts_page_shows_a_registered_key_that_never_reported(operator: Client) -> None:
    registered_ago(KEY, hours=1)
    registered_ago("pandaharvester01", hours=1)
    RegisteredHarvester.objects.filter(key="pandaharvester01").update(remote=False)
    page = text_of(operator.get("/hosts/"))
    assert f"{KEY} NEVER REPORTED none remote" in page
    assert "pandaharvester01 NEVER REPORTED none reporting" in page
    assert store(KEY, build_record(HARVESTER, KEY, perlmutter_rows(), perlmutter_config(), NOW),
                 1000)
    after = text_of(operator.get("/hosts/"))
    assert f"{KEY} NEVER REPORTED" not in after and "pandaharvester01 NEVER REPORTED" in after


@pytest.mark.django_db
def test_the_queue_page_names_a_serving_key_the_registry_lacks(operator: Client) -> None:
    assert store(KEY, build_record(HARVESTER, KEY, perlmutter_rows(), perlmutter_config(), NOW),
                 1000)
    assert f"Not in the harvester registry: {KEY}" in text_of(operator.get(f"/queues/{EPIC}/"))
    registry.register(KEY, remote=True)
    assert "Not in the harvester registry" not in text_of(operator.get(f"/queues/{EPIC}/"))
