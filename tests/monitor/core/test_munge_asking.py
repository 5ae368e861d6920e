"""Who is asking with a MUNGE credential (core.asking over core.munge_auth): the settings that
turn it on, one decoding per request however often a view asks (munged would call a second
one a replay), and a session that wins over the header. unmunge is a stand-in that counts its
runs; the real one is tests/monitor/usage/test_munge_auth.py's."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.models import AnonymousUser, User
from django.http import HttpRequest
from django.test import RequestFactory

from clusterwatch.monitor.core import munge_auth
from clusterwatch.monitor.core.asking import asker
from clusterwatch.monitor.core.munge_settings import MungeSettings, munge_settings
from clusterwatch.monitor.core.refusals import Refusal
from clusterwatch.monitor.core.secrets import SettingError

CREDENTIAL = "MUNGE:AwQFAABkN2hcXYZabc123+/def456=:"


def test_it_is_off_unless_turned_on_and_zero_keeps_it_off() -> None:
    assert munge_settings({}) is None
    assert munge_settings({"CLUSTERWATCH_UNMUNGE": "/opt/munge/bin/unmunge"}) is None
    assert munge_settings({"CLUSTERWATCH_MUNGE": "1"}) == MungeSettings("unmunge", None, 5.0)
    assert munge_settings({"CLUSTERWATCH_MUNGE_SOCKET": "/run/m/s"}) == MungeSettings(
        "unmunge", "/run/m/s", 5.0)
    assert munge_settings({"CLUSTERWATCH_MUNGE": "off",
                           "CLUSTERWATCH_MUNGE_SOCKET": "/run/m/s"}) is None


@pytest.mark.parametrize(("environ", "words"), [
    ({"CLUSTERWATCH_MUNGE": "maybe"}, "CLUSTERWATCH_MUNGE must be one of"),
    ({"CLUSTERWATCH_MUNGE_SOCKET": "munge.socket"}, "must be an absolute path"),
    ({"CLUSTERWATCH_MUNGE": "1", "CLUSTERWATCH_MUNGE_TIMEOUT_S": "600"}, "at most 60")])
def test_a_bad_setting_is_one_line_naming_it(environ: dict[str, str], words: str) -> None:
    with pytest.raises(SettingError, match=words):
        munge_settings(environ)


def request_with(header: str, user: object = None) -> HttpRequest:
    made: HttpRequest = RequestFactory().get("/api/v1/users/alice",
                                             HTTP_AUTHORIZATION=header)
    made.user = user if user is not None else AnonymousUser()  # type: ignore[assignment]
    return made


@pytest.fixture
def counted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A stand-in unmunge that proves uid 5001 and appends a line to the file returned per run."""
    runs = tmp_path / "runs"
    runs.write_text("")
    program = tmp_path / "unmunge"
    program.write_text(f"#!/bin/sh\ncat > /dev/null\necho run >> {runs}\n"
                       "printf 'STATUS: 0\\nUID: 5001\\nGID: 5001\\nLENGTH: 0\\n\\n'\n")
    program.chmod(0o755)
    monkeypatch.setenv("CLUSTERWATCH_MUNGE", "1")
    monkeypatch.setenv("CLUSTERWATCH_UNMUNGE", str(program))
    monkeypatch.setattr(munge_auth, "account_name", {5001: "alice"}.get)
    return runs


@pytest.mark.django_db
def test_a_request_is_decoded_once_however_often_it_is_asked_about(counted: Path) -> None:
    alice = User.objects.create_user("alice")
    request = request_with(f"MUNGE {CREDENTIAL}")
    assert asker(request) == alice and asker(request) == alice
    assert counted.read_text().count("run") == 1
    assert asker(request_with(f"munge  {CREDENTIAL} ")) == alice  # the scheme in any case
    assert counted.read_text().count("run") == 2


@pytest.mark.django_db
def test_a_refusal_is_kept_too_and_a_session_wins_over_the_header(counted: Path) -> None:
    request = request_with(f"MUNGE {CREDENTIAL}")  # alice has no account yet
    for _ in range(2):
        with pytest.raises(Refusal) as refused:
            asker(request)
        assert refused.value.status == 403 and "no active account" in refused.value.message
    assert counted.read_text().count("run") == 1
    bob = User.objects.create_user("bob")
    assert asker(request_with(f"MUNGE {CREDENTIAL}", user=bob)) == bob
    assert counted.read_text().count("run") == 1
