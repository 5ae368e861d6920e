"""The reporter's environment file: private, KEY=VALUE, old names accepted, new names win."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from clusterwatch.reporter.envfile import (
    ConfigError,
    check_monitor_url,
    load_env,
    parse_env,
)

TOKEN = "s3cr3t-Token_value=="


def write_env(tmp_path: Path, text: str, mode: int = 0o600) -> str:
    path = tmp_path / "reporter.env"
    path.write_text(text)
    os.chmod(path, mode)
    return str(path)


def test_it_reads_the_compatible_names(tmp_path: Path) -> None:
    path = write_env(tmp_path, "SWF_MONITOR_URL=https://monitor.example.org/ingest\n"
                               f"SWF_REPORT_TOKEN={TOKEN}\n")
    assert load_env(path) == {"url": "https://monitor.example.org/ingest", "token": TOKEN,
                              "ca_bundle": None}


def test_it_prefers_the_new_names_when_both_are_given(tmp_path: Path) -> None:
    path = write_env(tmp_path, "\n".join([
        "CLUSTERWATCH_MONITOR_URL=https://new.example.org/ingest",
        "SWF_MONITOR_URL=https://old.example.org/ingest",
        "SWF_REPORT_TOKEN=old-token",
        "CLUSTERWATCH_REPORT_TOKEN=new-token",
        "SWF_CA_BUNDLE=/etc/old.pem",
        "CLUSTERWATCH_CA_BUNDLE=/etc/new.pem",
    ]))
    assert load_env(path) == {"url": "https://new.example.org/ingest", "token": "new-token",
                              "ca_bundle": "/etc/new.pem"}


def test_it_falls_back_to_an_old_name_when_the_new_one_is_empty(tmp_path: Path) -> None:
    path = write_env(tmp_path, "CLUSTERWATCH_REPORT_TOKEN=\nSWF_REPORT_TOKEN=old-token\n"
                               "SWF_CA_BUNDLE=/etc/pki/monitor-ca.pem\n")
    assert load_env(path) == {"url": None, "token": "old-token",
                              "ca_bundle": "/etc/pki/monitor-ca.pem"}


def test_it_gives_none_for_an_empty_file(tmp_path: Path) -> None:
    assert load_env(write_env(tmp_path, "")) == {"url": None, "token": None, "ca_bundle": None}


def test_it_parses_comments_exports_quotes_and_equals_signs() -> None:
    text = "\n".join([
        "# the reporter's settings",
        "",
        "   ",
        "export SWF_MONITOR_URL=https://monitor.example.org/ingest   # production",
        'SWF_REPORT_TOKEN="abc def#ghi"',
        "CLUSTERWATCH_CA_BUNDLE='/etc/my ca.pem'  # trailing comment",
        "PADDED = base64value==",
        "HASH_INSIDE=a#b",
        "LATER=1",
        "LATER=2",
    ])
    assert parse_env(text) == [
        ("SWF_MONITOR_URL", "https://monitor.example.org/ingest"),
        ("SWF_REPORT_TOKEN", "abc def#ghi"),
        ("CLUSTERWATCH_CA_BUNDLE", "/etc/my ca.pem"),
        ("PADDED", "base64value=="),
        ("HASH_INSIDE", "a#b"),
        ("LATER", "1"),
        ("LATER", "2"),
    ]


def test_it_lets_a_later_line_win(tmp_path: Path) -> None:
    path = write_env(tmp_path, "SWF_REPORT_TOKEN=first\nSWF_REPORT_TOKEN=second\n")
    assert load_env(path)["token"] == "second"


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660, 0o606, 0o620])
def test_it_refuses_a_file_others_can_reach(tmp_path: Path, mode: int) -> None:
    path = write_env(tmp_path, f"SWF_REPORT_TOKEN={TOKEN}\n", mode)
    with pytest.raises(ConfigError) as caught:
        load_env(path)
    message = str(caught.value)
    assert path in message
    assert f"chmod 600 {path}" in message
    assert f"mode {mode:04o}" in message
    assert TOKEN not in message


@pytest.mark.parametrize("mode", [0o600, 0o400])
def test_it_accepts_a_file_only_its_owner_can_read(tmp_path: Path, mode: int) -> None:
    path = write_env(tmp_path, f"SWF_REPORT_TOKEN={TOKEN}\n", mode)
    assert load_env(path)["token"] == TOKEN


def test_it_names_a_missing_file(tmp_path: Path) -> None:
    path = str(tmp_path / "absent.env")
    with pytest.raises(ConfigError, match=r"cannot open environment file .*absent\.env"):
        load_env(path)


def test_it_refuses_a_fifo_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.env"
    os.mkfifo(fifo, 0o600)
    with pytest.raises(ConfigError, match=r"fifo\.env is not a regular file"):
        load_env(str(fifo))


def test_it_refuses_a_directory(tmp_path: Path) -> None:
    directory = tmp_path / "dir.env"
    directory.mkdir(mode=0o700)
    with pytest.raises(ConfigError, match=r"dir\.env is not a regular file"):
        load_env(str(directory))


@pytest.mark.parametrize("line", [
    f"just the token {TOKEN}",
    f"1BAD={TOKEN}",
    f"={TOKEN}",
    f'SWF_REPORT_TOKEN="{TOKEN}',
    f'SWF_REPORT_TOKEN="{TOKEN}" extra',
])
def test_it_names_a_malformed_line_without_its_text(tmp_path: Path, line: str) -> None:
    path = write_env(tmp_path, "# settings\n" + line + "\n")
    with pytest.raises(ConfigError) as caught:
        load_env(path)
    assert str(caught.value).startswith(f"{path} line 2: ")
    assert TOKEN not in str(caught.value)


@pytest.mark.parametrize("token", ["has space", "tab\there", "bell\x07", "caf\u00e9"])
def test_it_refuses_a_token_that_cannot_be_a_header_without_quoting_it(
        tmp_path: Path, token: str) -> None:
    path = write_env(tmp_path, f'SWF_REPORT_TOKEN="{token}"\n')
    with pytest.raises(ConfigError, match="printable ASCII") as caught:
        load_env(path)
    assert token not in str(caught.value)


@pytest.mark.parametrize("url", [
    "https://monitor.example.org/api/reporter",
    "https://127.0.0.1:8443/x",
    "http://127.0.0.1:8000/x",
    "http://127.1.2.3/x",
    "http://[::1]:8000/x",
    "http://localhost:8000/x",
])
def test_it_accepts_https_and_loopback_http(url: str) -> None:
    assert check_monitor_url(url) == url


@pytest.mark.parametrize(("url", "why"), [
    ("http://monitor.example.org/ingest", "must be https"),
    ("http://10.0.0.5/ingest", "must be https"),
    ("ftp://monitor.example.org/x", "must be an https:// URL"),
    ("monitor.example.org/ingest", "no host"),
    ("https:///path-only", "no host"),
    ("https://user:pw@monitor.example.org/x", "must not carry credentials"),
    ("https://[::1/x", "not a valid URL"),
])
def test_it_refuses_other_urls_without_repeating_them(url: str, why: str) -> None:
    with pytest.raises(ConfigError, match=why) as caught:
        check_monitor_url(url)
    assert url not in str(caught.value)


def test_it_refuses_plain_http_to_another_host_in_the_file(tmp_path: Path) -> None:
    path = write_env(tmp_path, "SWF_MONITOR_URL=http://monitor.example.org/ingest\n")
    with pytest.raises(ConfigError, match=r"reporter\.env: the monitor URL must be https"):
        load_env(path)


def test_it_names_a_file_that_is_not_utf8_without_its_bytes(tmp_path: Path) -> None:
    path = tmp_path / "reporter.env"
    path.write_bytes(b"SWF_REPORT_TOKEN=\xff\xfe" + TOKEN.encode() + b"\n")
    os.chmod(path, 0o600)
    with pytest.raises(ConfigError) as caught:
        load_env(str(path))
    assert str(caught.value) == f"cannot read environment file {path}: UnicodeDecodeError"
