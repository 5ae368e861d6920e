"""The monitor's settings, read from CLUSTERWATCH_* variables: defaults, bad values, secrets.

Each test executes settings.py afresh as a private module, so Django's own configured
settings (tests/monitor/settings.py) stay untouched.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import stat
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import clusterwatch.monitor.site.settings as real_settings

SETTINGS_FILE = real_settings.__file__


@pytest.fixture
def load(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):  # type: ignore[no-untyped-def]
    """`load(NAME=value, ...)`: settings.py executed with only these CLUSTERWATCH_* set
    (and CLUSTERWATCH_DATA_DIR=tmp_path/data unless given)."""

    def load_settings(**environ: str) -> ModuleType:
        for name in list(os.environ):
            if name.startswith("CLUSTERWATCH_"):
                monkeypatch.delenv(name)
        monkeypatch.setenv("CLUSTERWATCH_DATA_DIR", str(tmp_path / "data"))
        for name, value in environ.items():
            monkeypatch.setenv(name, value)
        spec = importlib.util.spec_from_file_location("settings_under_test", SETTINGS_FILE)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    return load_settings


def test_it_has_safe_defaults_in_a_private_data_dir(load, tmp_path: Path) -> None:
    settings = load()
    data = tmp_path / "data"
    assert data == settings.DATA_DIR
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    assert settings.DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3"
    assert settings.DATABASES["default"]["NAME"] == str(data / "monitor.sqlite3")
    assert settings.DEBUG is False
    assert settings.ALLOWED_HOSTS == ["localhost", "127.0.0.1", "[::1]"]
    assert settings.MAX_RECORD_BYTES == 1024 * 1024
    assert settings.DATA_UPLOAD_MAX_MEMORY_SIZE == settings.MAX_RECORD_BYTES + 1
    assert settings.RETENTION_DAYS == 30 and settings.REPORT_INTERVAL_S == 300
    assert settings.MAX_CLOCK_SKEW_S == 600
    assert data / "alarms.toml" == settings.ALARMS_CONFIG
    assert not hasattr(settings, "SECURE_PROXY_SSL_HEADER")


def test_it_makes_a_secret_key_once_mode_600_and_keeps_it(load, tmp_path: Path) -> None:
    first = load().SECRET_KEY
    key_file = tmp_path / "data" / "secret_key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert len(first) >= 50 and key_file.read_text().strip() == first
    assert first == load().SECRET_KEY
    assert list((tmp_path / "data").glob(".secret_key-*")) == []  # no temporary file left


def test_it_takes_the_secret_key_from_the_environment_first(load, tmp_path: Path) -> None:
    assert load(CLUSTERWATCH_SECRET_KEY="from-env").SECRET_KEY == "from-env"
    assert not (tmp_path / "data" / "secret_key").exists()


def test_workers_starting_together_all_get_the_same_whole_key(tmp_path: Path) -> None:
    code = ("import hashlib, clusterwatch.monitor.site.settings as s; "
            "print(len(s.SECRET_KEY), hashlib.sha256(s.SECRET_KEY.encode()).hexdigest())")
    environ = {name: value for name, value in os.environ.items()
               if not name.startswith("CLUSTERWATCH_")}
    environ["CLUSTERWATCH_DATA_DIR"] = str(tmp_path / "shared")
    workers = [subprocess.Popen([sys.executable, "-c", code], env=environ, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
               for _ in range(8)]
    answers = {worker.communicate(timeout=60)[0].strip() for worker in workers}
    key = (tmp_path / "shared" / "secret_key").read_text().strip()
    assert answers == {f"{len(key)} {hashlib.sha256(key.encode()).hexdigest()}"}


@pytest.mark.parametrize("content, message", [
    ("", "is empty"), ("\n", "is empty"),
])
def test_it_refuses_an_empty_secret_key_file(load, tmp_path: Path, content: str,
                                             message: str) -> None:
    key_file = tmp_path / "data" / "secret_key"
    key_file.parent.mkdir()
    key_file.write_text(content)
    key_file.chmod(0o600)
    with pytest.raises(ValueError, match=f"^CLUSTERWATCH_DATA_DIR: .*{message}"):
        load()


def test_it_refuses_a_secret_key_file_others_can_read(load, tmp_path: Path) -> None:
    key_file = tmp_path / "data" / "secret_key"
    key_file.parent.mkdir()
    key_file.write_text("a-perfectly-good-key-that-others-can-read\n")
    key_file.chmod(0o644)
    with pytest.raises(ValueError, match=r"mode 644.*chmod 600") as raised:
        load()
    assert "perfectly-good" not in str(raised.value)


@pytest.mark.parametrize("name", ["CLUSTERWATCH_MAX_RECORD_BYTES", "CLUSTERWATCH_RETENTION_DAYS",
                                  "CLUSTERWATCH_REPORT_INTERVAL_S",
                                  "CLUSTERWATCH_MAX_CLOCK_SKEW_S"])
@pytest.mark.parametrize("value, message", [
    ("abc", "must be a whole number, not 'abc'"), ("1.5", "must be a whole number"),
    ("0", "must be positive, not 0"), ("-3", "must be positive, not -3"),
])
def test_it_refuses_a_bad_number_naming_the_variable(load, name: str, value: str,
                                                     message: str) -> None:
    with pytest.raises(ValueError, match=f"^{name} {message}"):
        load(**{name: value})


def test_it_reads_numbers_and_blank_means_default(load) -> None:
    settings = load(CLUSTERWATCH_MAX_RECORD_BYTES=" 2048 ", CLUSTERWATCH_RETENTION_DAYS="",
                    CLUSTERWATCH_REPORT_INTERVAL_S="60")
    assert settings.MAX_RECORD_BYTES == 2048 and settings.DATA_UPLOAD_MAX_MEMORY_SIZE == 2049
    assert settings.RETENTION_DAYS == 30 and settings.REPORT_INTERVAL_S == 60


@pytest.mark.parametrize("value, expected", [("1", True), ("TRUE", True), (" yes ", True),
                                             ("on", True), ("0", False), ("false", False),
                                             ("No", False), ("off", False), ("", False)])
def test_it_reads_debug_flags(load, value: str, expected: bool) -> None:
    assert load(CLUSTERWATCH_DEBUG=value).DEBUG is expected


@pytest.mark.parametrize("name", ["CLUSTERWATCH_DEBUG", "CLUSTERWATCH_BEHIND_TLS_PROXY"])
def test_it_refuses_a_flag_it_cannot_read(load, name: str) -> None:
    with pytest.raises(ValueError, match=f"^{name} must be one of .*not 'ture'"):
        load(**{name: "ture"})


def test_it_trusts_the_proxy_header_and_secures_cookies_behind_a_tls_proxy(load) -> None:
    settings = load(CLUSTERWATCH_BEHIND_TLS_PROXY="1")
    assert settings.SECURE_PROXY_SSL_HEADER == ("HTTP_X_FORWARDED_PROTO", "https")
    assert settings.SESSION_COOKIE_SECURE and settings.CSRF_COOKIE_SECURE


def test_it_reads_allowed_hosts_as_a_list(load) -> None:
    settings = load(CLUSTERWATCH_ALLOWED_HOSTS="monitor.example.org, ,.example.net,")
    assert settings.ALLOWED_HOSTS == ["monitor.example.org", ".example.net"]


def test_it_makes_a_relative_data_dir_absolute(load, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    settings = load(CLUSTERWATCH_DATA_DIR="relative")
    assert tmp_path / "relative" == settings.DATA_DIR and settings.DATA_DIR.is_absolute()


def test_it_connects_to_postgresql_with_the_password_file(load, tmp_path: Path) -> None:
    secret = tmp_path / "pw"
    secret.write_text("hunter2\n")
    secret.chmod(0o600)
    settings = load(CLUSTERWATCH_DATABASE_URL="postgresql://cw@db.example.org/monitor",
                    CLUSTERWATCH_DATABASE_PASSWORD_FILE=str(secret))
    entry = settings.DATABASES["default"]
    assert (entry["HOST"], entry["NAME"], entry["USER"], entry["PASSWORD"]) == (
        "db.example.org", "monitor", "cw", "hunter2")
    assert not (tmp_path / "data" / "monitor.sqlite3").exists()


def test_it_refuses_a_readable_password_file_without_quoting_it(load, tmp_path: Path) -> None:
    secret = tmp_path / "pw"
    secret.write_text("hunter2\n")
    secret.chmod(0o644)
    with pytest.raises(ValueError, match=r"^CLUSTERWATCH_DATABASE_PASSWORD_FILE") as raised:
        load(CLUSTERWATCH_DATABASE_URL="postgresql://cw@db.example.org/monitor",
             CLUSTERWATCH_DATABASE_PASSWORD_FILE=str(secret))
    assert "hunter2" not in str(raised.value)


def test_it_reads_the_systemd_credential_db_password_by_default(
    load, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    credentials = tmp_path / "credentials"
    credentials.mkdir()
    (credentials / "db-password").write_text("from-systemd\n")
    (credentials / "db-password").chmod(0o400)
    monkeypatch.setenv("CREDENTIALS_DIRECTORY", str(credentials))
    url = "postgresql://cw@db.example.org/monitor"
    assert load(CLUSTERWATCH_DATABASE_URL=url).DATABASES["default"]["PASSWORD"] == (
        "from-systemd")
    explicit = tmp_path / "explicit"
    explicit.write_text("explicit\n")
    explicit.chmod(0o600)
    settings = load(CLUSTERWATCH_DATABASE_URL=url,
                    CLUSTERWATCH_DATABASE_PASSWORD_FILE=str(explicit))
    assert settings.DATABASES["default"]["PASSWORD"] == "explicit"


def test_the_production_settings_hash_passwords_with_pbkdf2(tmp_path: Path) -> None:
    # tests/monitor/settings.py hashes with MD5 for the in-process logins' speed; what runs
    # in production (gunicorn, the demo, the browser tests) must keep Django's PBKDF2.
    code = ("import django; django.setup(); "
            "from django.conf import settings; "
            "from django.contrib.auth.hashers import get_hasher, make_password; "
            "print(settings.PASSWORD_HASHERS[0]); print(get_hasher().algorithm); "
            "print(make_password('a long pass phrase').split('$')[0])")
    environ = {name: value for name, value in os.environ.items()
               if not name.startswith("CLUSTERWATCH_") and name != "DJANGO_SETTINGS_MODULE"}
    environ.update(CLUSTERWATCH_DATA_DIR=str(tmp_path / "data"),
                   DJANGO_SETTINGS_MODULE="clusterwatch.monitor.site.settings")
    done = subprocess.run([sys.executable, "-c", code], env=environ, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [
        "django.contrib.auth.hashers.PBKDF2PasswordHasher", "pbkdf2_sha256", "pbkdf2_sha256"]


def test_the_test_settings_hash_in_process_logins_fast() -> None:
    from django.conf import settings
    from django.contrib.auth.hashers import get_hasher

    assert settings.PASSWORD_HASHERS[0] == "django.contrib.auth.hashers.MD5PasswordHasher"
    assert get_hasher().algorithm == "md5"
