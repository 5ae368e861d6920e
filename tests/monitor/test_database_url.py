"""CLUSTERWATCH_DATABASE_URL and the password file to Django's DATABASES entry."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterwatch.monitor.core.database_url import (
    DatabaseUrlError,
    parse,
    read_password_file,
    sqlite_url,
)

SECRET = "s3cr%t:p@ss"


def password_file(tmp_path: Path, text: str = SECRET + "\n", mode: int = 0o600) -> str:
    path = tmp_path / "db-password"
    path.write_text(text)
    path.chmod(mode)
    return str(path)


def test_it_reads_an_absolute_sqlite_path() -> None:
    entry = parse("sqlite:///var/lib/clusterwatch/monitor.sqlite3")
    assert entry["ENGINE"] == "django.db.backends.sqlite3"
    assert entry["NAME"] == "/var/lib/clusterwatch/monitor.sqlite3"
    assert parse("sqlite:///tmp/a%20b.sqlite3")["NAME"] == "/tmp/a b.sqlite3"


@pytest.mark.parametrize("url", ["sqlite://relative.db", "sqlite:relative.db", "sqlite:///",
                                 "sqlite:///var/lib/clusterwatch/"])
def test_it_refuses_a_sqlite_url_without_an_absolute_file(url: str) -> None:
    with pytest.raises(DatabaseUrlError, match="sqlite:///absolute/path"):
        parse(url)


def test_it_reads_every_part_of_a_postgresql_url() -> None:
    entry = parse("postgresql://cw%40user@db.example.org:6432/monitor?sslmode=verify-full")
    assert entry == {
        "ENGINE": "django.db.backends.postgresql", "NAME": "monitor", "USER": "cw@user",
        "PASSWORD": "", "HOST": "db.example.org", "PORT": "6432",
        "OPTIONS": {"sslmode": "verify-full"}, "CONN_MAX_AGE": 60,
        "CONN_HEALTH_CHECKS": True,
    }


def test_it_takes_postgres_as_a_synonym_and_the_socket_when_no_host() -> None:
    entry = parse("postgres:///clusterwatch")
    assert entry["HOST"] == "" and entry["PORT"] == "" and entry["NAME"] == "clusterwatch"


def test_it_prefers_the_password_file_to_a_password_in_the_url(tmp_path: Path) -> None:
    assert parse("postgresql://u:inurl@h/db")["PASSWORD"] == "inurl"
    assert parse("postgresql://u:inurl@h/db", password_file(tmp_path))["PASSWORD"] == SECRET


@pytest.mark.parametrize("url, message", [
    ("postgresql://u:hunter2@h:port/db", "port is not a number"),
    ("postgresql://u:hunter2@h:5432", "names the database"),
    ("postgresql://u:hunter2@h:5432/", "names the database"),
    ("mysql://u:hunter2@h/db", "unsupported scheme 'mysql'"),
    ("", "unsupported scheme ''"),
    ("postgresql://u:hunter2@[::1/db", "not a valid URL"),
])
def test_it_explains_a_bad_url_without_its_password(url: str, message: str) -> None:
    with pytest.raises(DatabaseUrlError) as raised:
        parse(url)
    assert message in str(raised.value)
    assert "hunter2" not in str(raised.value)
    assert str(raised.value).startswith("CLUSTERWATCH_DATABASE_URL")


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o660, 0o644])
def test_it_refuses_a_password_file_others_can_read(tmp_path: Path, mode: int) -> None:
    path = password_file(tmp_path, mode=mode)
    with pytest.raises(DatabaseUrlError, match="chmod 600") as raised:
        read_password_file(path)
    assert SECRET not in str(raised.value)


@pytest.mark.parametrize("mode", [0o600, 0o400])
def test_it_reads_a_private_password_file_without_its_newline(tmp_path: Path, mode: int) -> None:
    assert read_password_file(password_file(tmp_path, mode=mode)) == SECRET


@pytest.mark.parametrize("text, message", [
    ("", "is empty"), ("\n  \n", "is empty"), ("one\ntwo\n", "more than one line"),
])
def test_it_refuses_an_empty_or_multiline_password_file(tmp_path: Path, text: str,
                                                        message: str) -> None:
    with pytest.raises(DatabaseUrlError, match=message):
        read_password_file(password_file(tmp_path, text))


def test_it_names_a_missing_or_undecodable_password_file(tmp_path: Path) -> None:
    with pytest.raises(DatabaseUrlError, match=r"cannot read .*No such file"):
        read_password_file(str(tmp_path / "absent"))
    path = tmp_path / "latin1"
    path.write_bytes(b"caf\xe9\n")
    path.chmod(0o600)
    with pytest.raises(DatabaseUrlError, match="not UTF-8"):
        read_password_file(str(path))


def test_its_sqlite_urls_survive_odd_characters_in_the_path() -> None:
    path = Path("/srv/data #1/50% ?/monitor.sqlite3")
    assert parse(sqlite_url(path))["NAME"] == str(path)


def test_it_trusts_a_systemd_credential_whatever_its_group_bits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    credentials = tmp_path / "credentials"
    credentials.mkdir()
    path = password_file(credentials, mode=0o440)  # an ACL mask shows as group bits
    monkeypatch.setenv("CREDENTIALS_DIRECTORY", str(credentials))
    assert read_password_file(path) == SECRET
    elsewhere = password_file(tmp_path, mode=0o440)
    with pytest.raises(DatabaseUrlError, match="chmod 600"):
        read_password_file(elsewhere)
