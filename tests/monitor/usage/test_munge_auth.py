"""MUNGE authentication of the usage API against a real munged on loopback (the session's
`munged`, tests/monitor/usage/conftest.py): credentials encoded as two local users, alice
(`cwjobtest`) and bob (`cwjobother`), decoded by the real unmunge, their uids mapped to the
monitor's accounts by this host's name service.

Expiry is real: a credential with a TTL of 1 s is made when the module starts, and its test
(the module's last) waits for the second in which munged must call it expired, which has
passed by then. Every other test of munged's verdicts is real too, but for a hanging
unmunge (a stand-in that never answers) and a missing one."""

from __future__ import annotations

import json
import logging
import math
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.http import HttpResponse
from django.test import Client

from clusterwatch.loopback.munge import LoopbackMunge
from clusterwatch.loopback.slurm import ensure_user
from clusterwatch.monitor.core.munge_auth import NOT_CONFIGURED
from clusterwatch.monitor.usage.terminal.munge_credential import make_credential
from tests.components import unavailable
from tests.monitor.usage.site import GiB, UsageSite

pytestmark = pytest.mark.django_db

ALICE, BOB = "cwjobtest", "cwjobother"  # the harness's job users: real local accounts
ALICES_JOB, BOBS_JOB, UNKNOWN_JOB = "4242", "4243", "4299"


@dataclass(frozen=True)
class Person:
    name: str
    uid: int
    gid: int


@dataclass(frozen=True)
class Expiring:
    credential: str
    expired_from: float  # the time.time() from which munged must call it expired


@pytest.fixture(scope="module")
def people(munged: LoopbackMunge) -> dict[str, Person]:
    if os.geteuid() != 0:
        unavailable("encoding MUNGE credentials as other users (munge --uid) needs root")
    found = {}
    for name in (ALICE, BOB):
        account = ensure_user(name)
        found[name] = Person(name, account.pw_uid, account.pw_gid)
    return found


@pytest.fixture(scope="module", autouse=True)
def expiring(munged: LoopbackMunge, people: dict[str, Person]) -> Expiring:
    """Alice's credential with a TTL of 1 s, made before the module's first test: munged
    calls it expired once its decoding time is 2 whole seconds past its encoding time."""
    alice = people[ALICE]
    credential = munged.credential(uid=alice.uid, gid=alice.gid, ttl=1)
    return Expiring(credential, math.floor(time.time()) + 2.0)


@pytest.fixture
def monitor(usage_site: UsageSite, munged: LoopbackMunge,
            monkeypatch: pytest.MonkeyPatch) -> UsageSite:
    """The usage reports with MUNGE on (the loopback munged's socket, the real unmunge),
    alice's and bob's accounts, a job of each."""
    monkeypatch.setenv("CLUSTERWATCH_MUNGE_SOCKET", str(munged.socket))
    for name in (ALICE, BOB):
        User.objects.create_user(name)
    for jobid, user in ((ALICES_JOB, ALICE), (BOBS_JOB, BOB)):
        start, end = usage_site.job(jobid, user=user, account="cwlab", name=f"job-of-{user}")
        usage_site.measured(jobid, start, end, busy_cpus=1.0, memory_bytes=1 * GiB)
    return usage_site


class Munging:
    """Asks the API with a new credential of one person each time, as `clusterwatch usage`
    does (a credential is good for one request)."""

    def __init__(self, munged: LoopbackMunge, person: Person) -> None:
        self.munged, self.person = munged, person

    def credential(self) -> str:
        return self.munged.credential(uid=self.person.uid, gid=self.person.gid)

    def get(self, path: str, credential: str = "") -> HttpResponse:
        header = f"MUNGE {credential or self.credential()}"
        answer: HttpResponse = Client(HTTP_AUTHORIZATION=header).get(path)
        return answer


def ask(path: str, header: str) -> HttpResponse:
    answer: HttpResponse = Client(HTTP_AUTHORIZATION=header).get(path)
    return answer


def refusal(answer: HttpResponse, status: int) -> str:
    """The one line of a JSON refusal with `status`."""
    assert answer.status_code == status, answer.content[:300]
    assert answer["Content-Type"] == "application/json"
    message: str = json.loads(answer.content)["error"]
    assert message and "\n" not in message
    return message


@pytest.fixture
def alice(munged: LoopbackMunge, people: dict[str, Person]) -> Munging:
    return Munging(munged, people[ALICE])


@pytest.fixture
def bob(munged: LoopbackMunge, people: dict[str, Person]) -> Munging:
    return Munging(munged, people[BOB])


def test_alices_credential_gets_her_jobs_and_for_bobs_job_the_answer_of_an_unknown_one(
        monitor: UsageSite, alice: Munging, bob: Munging) -> None:
    own = alice.get(f"/api/v1/jobs/{ALICES_JOB}/usage")
    assert own.status_code == 200, own.content[:300]
    assert own.json()["user"] == ALICE and own.json()["jobid"] == ALICES_JOB
    listed = alice.get(f"/api/v1/users/{ALICE}")
    assert [job["jobid"] for job in listed.json()["jobs"]] == [ALICES_JOB]
    hidden, unknown = (alice.get(f"/api/v1/jobs/{jobid}/usage")
                       for jobid in (BOBS_JOB, UNKNOWN_JOB))
    assert hidden.status_code == 404
    assert (hidden["Content-Type"], hidden.content) == (unknown["Content-Type"],
                                                        unknown.content)
    assert BOB.encode() not in hidden.content and b"job-of" not in hidden.content
    assert alice.get(f"/api/v1/users/{BOB}").status_code == 404
    assert alice.get(f"/pie/{BOBS_JOB}/").status_code == 404
    assert alice.get(f"/pie/{ALICES_JOB}/")["Content-Type"] == "image/png"
    assert bob.get(f"/api/v1/jobs/{BOBS_JOB}/usage").json()["user"] == BOB
    # A page takes a session only: a script's credential is sent to the login page, unread.
    assert alice.get(f"/usage/jobs/{ALICES_JOB}/").status_code == 302


def test_a_replayed_credential_is_refused_by_munged_and_never_logged(
        monitor: UsageSite, alice: Munging, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    credential = alice.credential()
    assert alice.get(f"/api/v1/jobs/{ALICES_JOB}/usage", credential).status_code == 200
    for path in (f"/api/v1/jobs/{ALICES_JOB}/usage", f"/api/v1/users/{ALICE}"):
        again = alice.get(path, credential)
        assert refusal(again, 403) == ("MUNGE credential refused: replayed: a credential is "
                                       "good for one request only")
    assert credential not in caplog.text and credential[6:40] not in caplog.text
    assert "replayed" in caplog.text  # what was refused is logged, without the credential


def test_what_munged_refuses_and_what_the_monitor_does_not_take_are_403(
        monitor: UsageSite, munged: LoopbackMunge, people: dict[str, Person]) -> None:
    path = f"/api/v1/jobs/{ALICES_JOB}/usage"
    alice = people[ALICE]

    def munge(**options: object) -> str:
        return munged.credential(uid=alice.uid, gid=alice.gid, **options)  # type: ignore[arg-type]

    restricted = refusal(ask(path, f"MUNGE {munge(restrict_uid=54321)}"), 403)
    assert restricted.startswith("MUNGE credential refused: unauthorized")
    assert "payload" in refusal(ask(path, f"MUNGE {munge(payload='for slurmctld')}"), 403)
    with LoopbackMunge() as elsewhere:  # another cluster: another key
        foreign = elsewhere.credential(uid=alice.uid, gid=alice.gid)
    assert "not encoded with this cluster's MUNGE key" in refusal(
        ask(path, f"MUNGE {foreign}"), 403)
    # Root's own credential, even with an account root here; a uid with no name here; then
    # alice made inactive.
    User.objects.create_superuser("root", password=None)
    assert "uid 0 (root) proves no user" in refusal(
        ask(path, f"MUNGE {munged.credential(uid=0, gid=0)}"), 403)
    assert "uid 54321 has no user name" in refusal(
        ask(path, f"MUNGE {munged.credential(uid=54321, gid=54321)}"), 403)
    User.objects.filter(username=ALICE).update(is_active=False)
    assert f"'{ALICE}' (uid {alice.uid}) is no active account" in refusal(
        ask(path, f"MUNGE {munge()}"), 403)
    User.objects.filter(username=ALICE).update(is_active=True)
    # Bob's uid under a name that differs from his only in case is not bob.
    User.objects.filter(username=BOB).update(username=BOB.upper())
    bob = people[BOB]
    assert "no active account" in refusal(
        ask(path, f"MUNGE {munged.credential(uid=bob.uid, gid=bob.gid)}"), 403)


@pytest.mark.parametrize("header", [
    "MUNGE", "MUNGE ", "munge garbage", "MUNGE MUNGE:", "MUNGE MUNGE:abc\x00def=:",
    "MUNGE MUNGE:abc:def:", "MUNGE MUNGE:" + "A" * 2000 + ":", "MUNGE MUNGE:\u0660\u0661:"])
def test_a_header_that_holds_no_credential_is_403_before_unmunge_runs(
        monitor: UsageSite, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        header: str) -> None:
    ran = tmp_path / "ran"
    program = tmp_path / "unmunge"
    program.write_text(f"#!/bin/sh\ntouch {ran}\nexit 1\n")
    program.chmod(0o755)
    monkeypatch.setenv("CLUSTERWATCH_UNMUNGE", str(program))
    message = refusal(ask(f"/api/v1/jobs/{ALICES_JOB}/usage", header), 403)
    assert message.startswith("MUNGE credential refused: ") and not ran.exists()
    assert "\x00" not in message and len(message) < 200


def test_an_unmunge_that_is_missing_hangs_or_finds_no_munged_is_503_never_500(
        monitor: UsageSite, alice: Munging, monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    path = f"/api/v1/users/{ALICE}"
    monkeypatch.setenv("CLUSTERWATCH_MUNGE_SOCKET", str(tmp_path / "no-munged.socket"))
    assert "munged is not running" in refusal(alice.get(path), 503)
    monkeypatch.delenv("CLUSTERWATCH_MUNGE_SOCKET")
    monkeypatch.setenv("CLUSTERWATCH_MUNGE", "1")
    monkeypatch.setenv("CLUSTERWATCH_UNMUNGE", str(tmp_path / "no-unmunge"))
    assert "not installed" in refusal(alice.get(path), 503)
    hanging = tmp_path / "hanging-unmunge"
    hanging.write_text("#!/bin/sh\nsleep 60 &\nsleep 60\n")
    hanging.chmod(0o755)
    monkeypatch.setenv("CLUSTERWATCH_UNMUNGE", str(hanging))
    monkeypatch.setenv("CLUSTERWATCH_MUNGE_TIMEOUT_S", "0.3")
    started = time.monotonic()
    assert "no answer within 0.3 s" in refusal(alice.get(path), 503)
    assert time.monotonic() - started < 5
    monkeypatch.setenv("CLUSTERWATCH_MUNGE_TIMEOUT_S", "-1")
    assert "misconfigured" in refusal(alice.get(path), 503)


def test_a_monitor_without_munge_configured_says_so_in_one_line(
        usage_site: UsageSite, alice: Munging, monkeypatch: pytest.MonkeyPatch,
        munged: LoopbackMunge) -> None:
    User.objects.create_user(ALICE)
    path = f"/api/v1/users/{ALICE}"
    assert refusal(alice.get(path), 403) == NOT_CONFIGURED
    monkeypatch.setenv("CLUSTERWATCH_MUNGE", "0")
    monkeypatch.setenv("CLUSTERWATCH_MUNGE_SOCKET", str(munged.socket))
    assert refusal(alice.get(path), 403) == NOT_CONFIGURED
    assert "not configured on this monitor" in NOT_CONFIGURED


def test_the_login_nodes_credential_from_make_credential_is_taken(
        monitor: UsageSite, munged: LoopbackMunge, people: dict[str, Person],
        tmp_path: Path) -> None:
    # make_credential runs `munge` as this process's user, root here, whose credential the
    # monitor refuses: a munge that encodes as alice stands in for hers on a login node.
    alice = people[ALICE]
    program = tmp_path / "munge"
    program.write_text(f"#!/bin/sh\nexec {munged.munge} --uid={alice.uid} --gid={alice.gid} "
                       '"$@"\n')
    program.chmod(0o755)
    credential = make_credential(program=str(program), socket=str(munged.socket))
    answer = ask(f"/api/v1/users/{ALICE}", f"MUNGE {credential}")
    assert answer.status_code == 200 and answer.json()["user"] == ALICE


@pytest.fixture
def waited(expiring: Expiring) -> Iterator[Expiring]:
    # The moment munged's rule (decoded more than TTL whole seconds after encoding) holds;
    # the module's other tests have taken that long already, so this rarely waits at all.
    time.sleep(max(0.0, expiring.expired_from - time.time()))
    yield expiring


def test_an_expired_credential_is_refused(monitor: UsageSite, waited: Expiring) -> None:
    answer = ask(f"/api/v1/jobs/{ALICES_JOB}/usage", f"MUNGE {waited.credential}")
    assert refusal(answer, 403) == "MUNGE credential refused: expired: make a new one (munge -n)"
