"""The people and scripts of the access tests, and the job they ask about.

The world: alice's job 4242 (account quarkphys, a name and figures of its own); bob, who
has nothing to do with it; carol, whose own kept job ran under quarkphys (so she is a
member of the account); dave, who coordinates quarkphys (the coordinators file) and ran no
job; root, staff; `Alice`, a user whose name differs from alice's only in case. Each asker
is a way of sending requests: a session, a token in a header, a MUNGE
credential, nothing. The MUNGE askers' unmunge is a stand-in that prints what the real one
prints for each case (tests/monitor/usage/test_munge_auth.py holds the cases against a real
munged), and their uids are mapped to the world's names (MUNGE_UIDS).
"""

from __future__ import annotations

import atexit
import re
import shutil
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Callable, NamedTuple, Optional

import pytest
from django.contrib.auth.models import User
from django.http import HttpResponse
from django.test import Client
from django.urls import URLPattern, reverse
from django.utils import timezone

from clusterwatch.monitor.core import munge_auth
from clusterwatch.monitor.core.tokens import digest
from clusterwatch.monitor.ingest import tokens as host_tokens
from clusterwatch.monitor.usage import api_tokens
from clusterwatch.monitor.usage.config import get_config
from clusterwatch.monitor.usage.coordinators import VARIABLE as COORDINATORS_VARIABLE
from clusterwatch.monitor.usage.models import ShareLink
from clusterwatch.monitor.usage.usage_report import load_report
from clusterwatch.monitor.usage.web.urls import urlpatterns
from tests.monitor.usage.site import GiB, UsageSite

OWNER, JOBID, ACCOUNT, JOB_NAME = "alice", "4242", "quarkphys", "hidden-name-q7"
# A link alice made to her job 4242 (the world's row): a test's constant, opening nothing
# anywhere else.
SHARE_PREFIX = "cws_matrix00"
SHARE_TOKEN = SHARE_PREFIX + "_" + "m" * 43
# What each path's arguments are in the matrix: alice's job, alice's list, a plot metric,
# the job's account, alice's share link.
ARGUMENTS = {"jobid": JOBID, "username": OWNER, "metric": "cpu", "account": ACCOUNT,
             "array_id": "4300", "token": SHARE_TOKEN}
COORDINATOR = "dave"  # the account's coordinator (CLUSTERWATCH_USAGE_COORDINATORS)


def pattern_names() -> list[str]:
    """The names of the usage reports' URL patterns."""
    return [p.name for p in urlpatterns if isinstance(p, URLPattern) and p.name]


def path_of(name: str) -> str:
    """The path of pattern `name` with the matrix's ARGUMENTS."""
    pattern = next(p for p in urlpatterns if isinstance(p, URLPattern) and p.name == name)
    return str(reverse(name, kwargs={key: ARGUMENTS[key] for key in pattern.pattern.converters}))
MEMBER_JOBID = "5000"
# Names that look like alice's: a Cyrillic a, and a fullwidth a.
CYRILLIC, FULLWIDTH = "\u0430lice", "\uff41lice"
# What a refusal must never carry: the hidden job's user, account, name and id.
HIDDEN = (OWNER.encode(), ACCOUNT.encode(), JOB_NAME.encode(), JOBID.encode())
LDAP_BACKEND = "clusterwatch.monitor.site.ldap_backend.DirectoryBackend"
MODEL_BACKEND = "django.contrib.auth.backends.ModelBackend"
_CSRF = re.compile(rb'name="csrfmiddlewaretoken" value="[^"]*"')


class World(NamedTuple):
    site: UsageSite
    users: Mapping[str, User]
    monkeypatch: pytest.MonkeyPatch


def build_world(site: UsageSite, monkeypatch: pytest.MonkeyPatch) -> World:
    """The users, carol's own kept job under quarkphys and alice's share link to her job
    4242, valid a week; alice's job is not there yet."""
    users = {name: User.objects.create_user(name, password=None, is_staff=name == "root")
             for name in (OWNER, "bob", "carol", COORDINATOR, "root", "Alice", CYRILLIC)}
    ShareLink.objects.create(jobid=JOBID, made_by=users[OWNER], prefix=SHARE_PREFIX,
                             digest=digest(SHARE_TOKEN),
                             expires_at=timezone.now() + timedelta(days=7))
    # As the LDAP backend makes it: saved without create_user's NFKC (which makes it alice).
    users[FULLWIDTH] = User.objects.create(username=FULLWIDTH)
    site.job(MEMBER_JOBID, user="carol", account=ACCOUNT, name="carols-own")
    load_report(MEMBER_JOBID)  # kept: carol's account is known from it
    monkeypatch.delenv(COORDINATORS_VARIABLE, raising=False)  # only `coordinator` has one
    return World(site, users, monkeypatch)


def add_hidden_job(site: UsageSite) -> None:
    """Alice's job 4242 as accounting and Prometheus know it."""
    start, end = site.job(JOBID, user=OWNER, account=ACCOUNT, name=JOB_NAME, req_mem="7G")
    site.measured(JOBID, start, end, busy_cpus=0.75, memory_bytes=1.5 * GiB)
    for task in (1, 2):  # her array 4300, asked of /api/v1/arrays/4300/usage
        site.job(f"4300_{task}", raw_id=str(4300 + 2 - task), user=OWNER, account=ACCOUNT,
                 name=JOB_NAME)


def session(name: str, backend: str = MODEL_BACKEND) -> Callable[[World], Client]:
    def build(world: World) -> Client:
        client = Client()
        client.force_login(world.users[name], backend=backend)
        return client
    return build


def member(account_access: bool) -> Callable[[World], Client]:
    def build(world: World) -> Client:
        if account_access:
            world.monkeypatch.setenv("CLUSTERWATCH_USAGE_ACCOUNT_ACCESS", "1")
        else:
            world.monkeypatch.delenv("CLUSTERWATCH_USAGE_ACCOUNT_ACCESS", raising=False)
        get_config.cache_clear()
        return session("carol")(world)
    return build


def coordinator(world: World) -> Client:
    """Dave's session, with a coordinators file that makes him quarkphys' coordinator."""
    mapping = world.site.sacct.parent / "coordinators.toml"
    mapping.write_text(f'{ACCOUNT} = ["{COORDINATOR}"]\nother = ["{OWNER}"]\n')
    world.monkeypatch.setenv(COORDINATORS_VARIABLE, str(mapping))
    return session(COORDINATOR)(world)


def header(value: str) -> Client:
    return Client(HTTP_AUTHORIZATION=value)


def usage_token(name: str, *, revoked: bool = False,
                scheme: str = "Bearer") -> Callable[[World], Client]:
    def build(world: World) -> Client:
        row, token = api_tokens.create(world.users[name], note="access matrix")
        if revoked:
            row.revoked_at = timezone.now()
            row.save()
        return header(f"{scheme} {token}")
    return build


# What the MUNGE askers' credentials prove: alice's and bob's uids on the monitor's host.
MUNGE_UIDS = {5001: OWNER, 5002: "bob"}
# The shape of `munge -n`'s output; what it proves is the stand-in's answer, every time it is
# decoded (the matrix asks five times; a real munged refuses the second: test_munge_auth.py).
MUNGE_CREDENTIAL = "MUNGE:AwQFAABkN2hcXYZabc123+/def456ghi789jklmnoPQRSTUVWXyz0=:"
_UNMUNGE = """#!/bin/sh
cat > /dev/null
printf 'STATUS:          {status}\\nENCODE_HOST:     127.0.0.1\\nTTL:             300\\n'
printf 'UID:             {uid}\\nGID:             {uid}\\nLENGTH:          0\\n\\n'
exit {status}
"""


def munge_credential(uid: int, status: int = 0) -> Callable[[World], Client]:
    """A MUNGE credential of `uid` that unmunge answers with `status` (17: replayed)."""
    def build(world: World) -> Client:
        folder = Path(tempfile.mkdtemp(prefix="cw-unmunge-"))
        atexit.register(shutil.rmtree, folder, True)
        program = folder / "unmunge"
        program.write_text(_UNMUNGE.format(status=status, uid=uid))
        program.chmod(0o755)
        world.monkeypatch.setenv("CLUSTERWATCH_MUNGE", "1")
        world.monkeypatch.setenv("CLUSTERWATCH_UNMUNGE", str(program))
        world.monkeypatch.setattr(munge_auth, "account_name", MUNGE_UIDS.get)
        return header(f"MUNGE {MUNGE_CREDENTIAL}")
    return build


def host_token(_world: World) -> Client:
    _row, token = host_tokens.create(["node01"], note="a host, not a person")
    return header(f"Bearer {token}")


def inactive(backend: str) -> Callable[[World], Client]:
    """The owner's session, after the admin unticked Active."""
    def build(world: World) -> Client:
        client = session(OWNER, backend)(world)
        User.objects.filter(username=OWNER).update(is_active=False)
        return client
    return build


class Asker(NamedTuple):
    user: Optional[str]  # whose name the answer may show: the asker's own
    build: Callable[[World], Client]


ASKERS: Mapping[str, Asker] = {
    "owner": Asker(OWNER, session(OWNER)),
    "other": Asker("bob", session("bob")),
    "member_on": Asker("carol", member(account_access=True)),
    "member_off": Asker("carol", member(account_access=False)),
    "coordinator": Asker(COORDINATOR, coordinator),
    "staff": Asker("root", session("root")),
    "anonymous": Asker(None, lambda _world: Client()),
    "owner_token": Asker(OWNER, usage_token(OWNER)),
    "other_token": Asker("bob", usage_token("bob")),
    "revoked_token": Asker(None, usage_token(OWNER, revoked=True)),
    "wrong_scheme": Asker(None, usage_token(OWNER, scheme="Basic")),
    "malformed": Asker(None, lambda _world: header("Bearer nonsense")),
    "host_token": Asker(None, host_token),
    "owner_munge": Asker(OWNER, munge_credential(5001)),
    "other_munge": Asker("bob", munge_credential(5002)),
    "replayed_munge": Asker(None, munge_credential(5001, status=17)),
    "inactive": Asker(None, inactive(MODEL_BACKEND)),
    "inactive_ldap": Asker(None, inactive(LDAP_BACKEND)),
    "case_twin": Asker("Alice", session("Alice")),
    "lookalike_cyrillic": Asker(CYRILLIC, session(CYRILLIC)),
    "lookalike_fullwidth": Asker(FULLWIDTH, session(FULLWIDTH)),
}


@dataclass(frozen=True)
class Answer:
    """What a client can tell from an answer: status, type, redirect target and body (the
    CSRF token of the logout form, different every time, taken out)."""

    status: int
    content_type: str
    location: Optional[str]
    body: bytes

    @classmethod
    def of(cls, response: HttpResponse) -> Answer:
        return cls(response.status_code, response.get("Content-Type", ""),
                   response.get("Location"), _CSRF.sub(b"", response.content))

    def leaks(self, asker: Optional[str]) -> list[bytes]:
        """What of the hidden job the body shows, but for the asker's own name."""
        own = asker.encode() if asker else None
        return [secret for secret in HIDDEN if secret != own and secret in self.body]


_WRAPPER = """\
import os, sys
args = sys.argv[1:]
with open({log!r}, "a") as log:
    log.write(" ".join(args) + "\\n")
if "--user" in args:
    at = args.index("--user") + 1
    args[at] = {names!r}.get(args[at], args[at])
os.execv({sacct!r}, [{sacct!r}, *args])
"""


def wrapped_sacct(site: UsageSite, directory: Path, monkeypatch: pytest.MonkeyPatch,
                  names: Optional[Mapping[str, str]] = None) -> Path:
    """CLUSTERWATCH_SACCT becomes a wrapper of the site's sacct that logs each run's arguments
    (one line per run, in the file returned) and resolves `--user` through `names`, as a
    name service may (sssd with case_sensitive = false takes Alice for alice; a number is a
    uid)."""
    log, program = directory / "sacct-runs.log", directory / "sacct-wrapper"
    log.write_text("")
    program.write_text(f"#!{sys.executable}\n" + _WRAPPER.format(
        log=str(log), names=dict(names or {}), sacct=str(site.sacct)))
    program.chmod(0o755)
    monkeypatch.setenv("CLUSTERWATCH_SACCT", str(program))
    get_config.cache_clear()
    return log


def runs(log: Path) -> int:
    return len(log.read_text().splitlines())
