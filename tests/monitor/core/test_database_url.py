"""CLUSTERWATCH_DATABASE_URL and the password file to Django's DATABASES entry."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterwatch.monitor.core.database_url import parse, password_file, sqlite_url
from clusterwatch.monitor.core.secrets import SettingError

SECRET = "s3cr%t:p@ss"


def write_password(tmp_path: Path, text: str = SECRET + "\n", mode: int = 0o600) -> str:
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
    with pytest.raises(SettingError, match="sqlite:///absolute/path"):
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
    assert parse("postgresql://u:inurl@h/db", write_password(tmp_path))["PASSWORD"] == SECRET


@pytest.mark.parametrize("url, message", [
    ("postgresql://u:hunter2@h:port/db", "port is not a number"),
    ("postgresql://u:hunter2@h:5432", "must name the database"),
    ("postgresql://u:hunter2@h:5432/", "must name the database"),
    ("postgresql://u:hunter2@h:99999/db", "port is not a number up to 65535"),
    ("mysql://u:hunter2@h/db", "unsupported scheme 'mysql'"),
    ("", "unsupported scheme ''"),
    ("postgresql://u:hunter2@[::1/db", "not a valid URL"),
])
def test_it_explains_a_bad_url_without_its_password(url: str, message: str) -> None:
    with pytest.raises(SettingError) as raised:
        parse(url)
    assert message in str(raised.value)
    assert "hunter2" not in str(raised.value)
    assert str(raised.value).startswith("CLUSTERWATCH_DATABASE_URL")


def test_its_sqlite_urls_survive_odd_characters_in_the_path() -> None:
    path = Path("/srv/data #1/50% ?/monitor.sqlite3")
    assert parse(sqlite_url(path))["NAME"] == str(path)


def test_it_takes_the_password_file_else_the_credential_and_names_which(
    tmp_path: Path
) -> None:
    credentials = tmp_path / "credentials"
    credentials.mkdir()
    assert password_file({"CREDENTIALS_DIRECTORY": str(credentials)}) is None
    (credentials / "db-password").write_text("from-systemd\n")
    found = password_file({"CREDENTIALS_DIRECTORY": str(credentials)})
    assert found is not None and found.setting == "the systemd credential db-password"
    assert parse("postgresql://u@h/db", found)["PASSWORD"] == "from-systemd"
    named = password_file({"CREDENTIALS_DIRECTORY": str(credentials),
                           "CLUSTERWATCH_DATABASE_PASSWORD_FILE": write_password(tmp_path)})
    assert named is not None and named.setting == "CLUSTERWATCH_DATABASE_PASSWORD_FILE"
    assert parse("postgresql://u@h/db", named)["PASSWORD"] == SECRET


def test_a_sqlite_url_ignores_the_password_file(tmp_path: Path) -> None:
    # The default database has no password: a stale password file must not stop it.
    assert parse("sqlite:///tmp/m.sqlite3", str(tmp_path / "absent"))["NAME"] == (
        "/tmp/m.sqlite3")
