"""The kernel's secrets: a private file named by a setting, else the systemd credential, read
whole and refused in one line that names the setting and never the secret; database URLs
split with the password kept out of messages and reprs."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from clusterwatch.errors import ConfigError
from clusterwatch.monitor.core.secrets import (
    SecretFile,
    SettingError,
    read_secret,
    read_secret_file,
    secret_file,
    secret_file_in,
    split_database_url,
)

SECRET = "Zq7-s3cret-ffe1"
SETTING = "CLUSTERWATCH_THING_PASSWORD_FILE"
EXAMPLE = "postgresql://user@host:5432/db"


def private(path: Path, text: str = SECRET + "\n", mode: int = 0o600) -> Path:
    path.write_text(text)
    path.chmod(mode)
    return path


def refusal(path: Path | str, credentials_dir: str = "") -> SettingError:
    with pytest.raises(SettingError) as raised:
        read_secret_file(str(path), SETTING, credentials_dir=credentials_dir)
    error = raised.value
    for text in (str(error), repr(error)):
        assert SECRET not in text and "\n" not in text
    assert str(error).startswith(SETTING + ": ")
    return error


def test_it_is_a_configuration_error_and_a_value_error() -> None:
    # ConfigError: exit 78 for a command; ValueError: what settings.py's callers catch.
    assert issubclass(SettingError, ConfigError) and issubclass(SettingError, ValueError)


@pytest.mark.parametrize("text", [SECRET, SECRET + "\n", f"  {SECRET} \r\n", SECRET + "\n\n"])
def test_it_reads_the_secret_without_the_white_space_around_it(tmp_path: Path,
                                                              text: str) -> None:
    path = private(tmp_path / "secret", text)
    assert read_secret_file(str(path), SETTING, credentials_dir="") == SECRET


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660, 0o610, 0o601])
def test_it_refuses_a_file_others_can_use(tmp_path: Path, mode: int) -> None:
    path = private(tmp_path / "secret", mode=mode)
    assert str(refusal(path)) == (f"{SETTING}: {path} is readable by others "
                                  f"(mode {mode:o}); chmod 600 it")


def test_it_names_no_path_when_nothing_is_there(tmp_path: Path) -> None:
    # A secret typed where its file's path belongs names no file: it must not be echoed.
    message = str(refusal(SECRET))
    assert message == (f"{SETTING}: no such file (it names a mode-600 file holding the secret, "
                       "never the secret itself)")
    assert "no such file" in str(refusal(tmp_path / "absent"))
    assert "no such file" in str(refusal(SECRET * 40))  # longer than a file name may be
    os.symlink(tmp_path / "gone", tmp_path / "dangling")
    assert "cannot read" in str(refusal(tmp_path / "dangling"))  # something is there


def test_it_refuses_a_directory(tmp_path: Path) -> None:
    assert str(refusal(tmp_path)) == (f"{SETTING}: {tmp_path} is not a regular file but a "
                                      "directory")


def test_it_refuses_a_fifo_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo, 0o600)
    # A blocking open would wait here for good: the test would hang, not fail.
    assert str(refusal(fifo)).endswith("is not a regular file but a FIFO")


def test_it_refuses_a_socket(tmp_path: Path) -> None:
    path = tmp_path / "s"
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(path))
        os.chmod(path, 0o600)
        assert str(refusal(path)).endswith("is not a regular file but a socket")


def test_it_refuses_a_file_it_may_not_read(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads a file of mode 000")
    path = private(tmp_path / "secret", mode=0o000)
    assert str(refusal(path)) == f"{SETTING}: cannot read {path}: Permission denied"


@pytest.mark.parametrize("content, says", [
    (b"", "is empty"), (b" \n\t\n", "is empty"),
    (SECRET.encode() + b"\nsecond\n", "holds more than one line"),
    (SECRET.encode() + b"\0tail\n", "holds a NUL byte"),
    (b"\0" + SECRET.encode(), "holds a NUL byte"),
    (b"caf\xe9" + SECRET.encode(), "is not UTF-8 text"),
])
def test_it_refuses_a_file_that_holds_no_single_secret(tmp_path: Path, content: bytes,
                                                       says: str) -> None:
    path = tmp_path / "secret"
    path.write_bytes(content)
    path.chmod(0o600)
    assert str(refusal(path)) == f"{SETTING}: {path} {says}"


def test_it_says_what_to_do_about_an_empty_file(tmp_path: Path) -> None:
    path = private(tmp_path / "key", "")
    with pytest.raises(SettingError, match=r"is empty; make a new one\Z"):
        read_secret_file(str(path), SETTING, credentials_dir="", if_empty="; make a new one")


def test_it_trusts_a_credential_whatever_its_group_bits_and_nothing_else(
    tmp_path: Path,
) -> None:
    credentials = tmp_path / "credentials"
    credentials.mkdir()
    # systemd may grant the unit's user access through an ACL, which shows as group bits.
    credential = private(credentials / "thing-password", mode=0o640)
    assert read_secret_file(str(credential), SETTING, credentials_dir=str(credentials)) == SECRET
    elsewhere = private(tmp_path / "thing-password", mode=0o640)
    assert "chmod 600" in str(refusal(elsewhere, credentials_dir=str(credentials)))
    nested = credentials / "sub"
    nested.mkdir()
    below = private(nested / "thing-password", mode=0o640)  # only the directory itself
    assert "chmod 600" in str(refusal(below, credentials_dir=str(credentials)))
    assert "chmod 600" in str(refusal(credential, credentials_dir=""))  # no credentials


def test_it_reads_the_credentials_directory_of_the_process_by_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    credential = private(tmp_path / "thing-password", mode=0o440)
    monkeypatch.setenv("CREDENTIALS_DIRECTORY", str(tmp_path))
    assert read_secret_file(str(credential), SETTING) == SECRET
    monkeypatch.delenv("CREDENTIALS_DIRECTORY")
    with pytest.raises(SettingError, match="chmod 600"):
        read_secret_file(str(credential), SETTING)


def test_the_named_file_comes_first_then_the_credential(tmp_path: Path) -> None:
    named = private(tmp_path / "named")
    credentials = tmp_path / "credentials"
    credentials.mkdir()
    private(credentials / "thing-password", "from-systemd\n")
    environ = {SETTING: f" {named} ", "CREDENTIALS_DIRECTORY": str(credentials)}
    found = secret_file_in(environ, SETTING, credential="thing-password")
    assert found == SecretFile(str(named), SETTING, str(credentials))
    assert read_secret(found) == SECRET
    found = secret_file_in({**environ, SETTING: " "}, SETTING, credential="thing-password")
    assert found is not None and found.setting == "the systemd credential thing-password"
    assert read_secret(found) == "from-systemd"


@pytest.mark.parametrize("credentials_dir", ["", "  ", "/nonexistent/credentials"])
def test_without_a_file_or_a_credential_there_is_no_secret(credentials_dir: str) -> None:
    assert secret_file("", SETTING, credential="thing-password",
                       credentials_dir=credentials_dir) is None
    assert secret_file_in({"CREDENTIALS_DIRECTORY": credentials_dir}, SETTING,
                          credential="thing-password") is None


def test_a_credential_that_is_there_but_unreadable_is_refused_not_skipped(
    tmp_path: Path,
) -> None:
    (tmp_path / "thing-password").mkdir()  # going on without the password would hide it
    found = secret_file("", SETTING, credential="thing-password", credentials_dir=str(tmp_path))
    assert found is not None
    with pytest.raises(SettingError, match=r"^the systemd credential thing-password: .* "
                                           "directory$"):
        read_secret(found)


def test_a_database_url_keeps_its_password_out_of_the_repr() -> None:
    found = split_database_url(f"postgresql://cw%40user:{SECRET}@db.example.org:6432/name?x=1",
                               "URL", example=EXAMPLE, password_file_setting=None)
    assert (found.scheme, found.user, found.host, found.port, found.name, found.query) == (
        "postgresql", "cw@user", "db.example.org", 6432, "name", "x=1")
    assert found.password == SECRET and SECRET not in repr(found)


@pytest.mark.parametrize("url, message", [
    (f"postgresql://u:{SECRET}@[db/x", "URL is not a valid URL (e.g. "),
    (f"postgresql://u:{SECRET}@db:port/x", "URL is not a valid URL: the port is not a number"),
    (f"postgresql://u:{SECRET}@db:70000/x", "URL is not a valid URL: the port is not a number"),
    (f"postgresql://u:{SECRET}@db/x", "URL must not hold the password: put it in a mode-600 "
                                      f"file named by {SETTING}"),
    ("postgresql://u:@db/x", "URL must not hold the password"),
    ("postgresql://db/x", "URL must name the user, host and database: " + EXAMPLE),
    ("postgresql://u@/x", "URL must name the user, host and database"),
    ("postgresql://u@db/", "URL must name the user, host and database"),
])
def test_a_bad_database_url_is_refused_without_quoting_it(url: str, message: str) -> None:
    with pytest.raises(SettingError) as raised:
        split_database_url(url, "URL", example=EXAMPLE, password_file_setting=SETTING,
                           required=("user", "host", "database"))
    assert str(raised.value).startswith(message)
    assert SECRET not in str(raised.value) and SECRET not in repr(raised.value)
