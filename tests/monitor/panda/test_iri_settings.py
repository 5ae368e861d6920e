"""The IRI client's settings: the token file (private, one token, never quoted) and the
values no request could be made with, each a ConfigError in one line, before any request."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterwatch.errors import ConfigError
from clusterwatch.loopback.fake_iri import FakeIri
from clusterwatch.monitor.panda.iri.client import view_file
from clusterwatch.monitor.panda.iri.settings import base_url_problem, read_token_file
from tests.monitor.panda.iri_support import CONFIG_PATH, RESOURCE, TOKEN, token_file


def refusal(path: Path) -> str:
    with pytest.raises(ConfigError) as info:
        read_token_file(str(path))
    message = str(info.value)
    assert TOKEN not in message and "\n" not in message
    return message


def test_it_reads_the_token_from_a_private_file(tmp_path: Path) -> None:
    assert read_token_file(str(token_file(tmp_path))) == TOKEN


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o644, 0o660, 0o610])
def test_it_refuses_a_token_file_others_can_use(tmp_path: Path, mode: int) -> None:
    path = token_file(tmp_path, mode=mode)
    assert refusal(path) == (f"--iri-token-file: {path} is readable by others "
                             f"(mode {mode:o}); chmod 600 it")


def test_it_takes_a_systemd_credential_whatever_its_group_bits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # systemd may grant the unit's user access to a credential through an ACL (group bits).
    monkeypatch.setenv("CREDENTIALS_DIRECTORY", str(tmp_path))
    assert read_token_file(str(token_file(tmp_path, mode=0o640))) == TOKEN


@pytest.mark.parametrize(("content", "says"), [
    ("", "is empty"),
    (f"Bearer {TOKEN}", "must hold the token alone: printable ASCII without spaces"),
    (f"base_url: https://api.iri.nersc.gov\naccess_token: {TOKEN}", "holds more than one line"),
    (f"{TOKEN}\x00", "holds a NUL byte"),
    (f"{TOKEN}\u00e9", "must hold the token alone"),
])
def test_it_refuses_a_file_that_holds_no_single_token(tmp_path: Path, content: str,
                                                     says: str) -> None:
    path = tmp_path / "iri-token"
    path.write_text(content)
    path.chmod(0o600)
    assert says in refusal(path)


def test_it_refuses_a_missing_or_binary_token_file(tmp_path: Path) -> None:
    assert refusal(tmp_path / "nothing-here").startswith("--iri-token-file: no such file")
    binary = tmp_path / "binary"
    binary.write_bytes(b"\xff\xfe")
    binary.chmod(0o600)
    assert "is not UTF-8 text" in refusal(binary)


@pytest.mark.parametrize(("url", "problem"), [
    ("http://127.0.0.1:1/api/v1", "the URL must be https:// (the token goes with every request)"),
    ("https://user:pw@127.0.0.1/api/v1", "the URL must not hold a user or password"),
    ("https://127.0.0.1/api/v1?key=s3cret", "the URL must not hold a query or fragment"),
    ("https://127.0.0.1/api/v1#top", "the URL must not hold a query or fragment"),
    ("ftp://127.0.0.1/api/v1", "the URL is not an http(s) URL with a host"),
    ("https://127.0.0.1:99999/api/v1", "the URL has an invalid host or port"),
    ("https://127.0.0.1/api v1", "the URL holds spaces or control characters"),
])
def test_it_names_what_is_wrong_with_a_base_url(url: str, problem: str) -> None:
    found = base_url_problem(url)
    assert found is not None and found.startswith(problem)
    assert "s3cret" not in found and "pw" not in found


def test_it_takes_nersc_s_base_url() -> None:
    assert base_url_problem("https://api.iri.nersc.gov/api/v1") is None


@pytest.mark.parametrize(("change", "setting"), [
    ({"base_url": "http://127.0.0.1/api/v1"}, "--iri-url"),
    ({"resource_id": " "}, "--iri-resource"),
    ({"path": "harvester/panda_queueconfig.json"}, "--iri-path"),
    ({"path": "/a\nb"}, "--iri-path"),
    ({"token": f"{TOKEN}\r\nX-Injected: 1"}, "--iri-token-file"),
    ({"token": ""}, "--iri-token-file"),
])
def test_it_refuses_settings_no_request_could_use_before_sending_one(
    iri: FakeIri, change: dict[str, str], setting: str,
) -> None:
    arguments = {"base_url": iri.base_url, "resource_id": RESOURCE, "path": CONFIG_PATH,
                 "token": TOKEN, **change}
    with pytest.raises(ConfigError) as info:
        view_file(**arguments)
    assert str(info.value).startswith(setting + ": ")
    assert TOKEN not in str(info.value)
    assert iri.requests == []
