"""CLUSTERWATCH_SLURMDB_* read into the slurmdb source's settings; every bad value is one
configuration error that never quotes the URL or the password."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterwatch.errors import ConfigError
from clusterwatch.monitor.usage.accounting.interface import AccountingConfigError
from clusterwatch.monitor.usage.accounting.slurmdb import SlurmDbAccounting
from clusterwatch.monitor.usage.accounting.slurmdb_settings import SlurmDbSettings, read_settings

URL = "mysql://clusterwatch_usage@db.example.org:3307/clusterwatch_usage"
SECRET = "s3cret-Pa55"


def password_file(tmp_path: Path, mode: int = 0o600, text: str = SECRET + "\n") -> str:
    path = tmp_path / "slurmdb-password"
    path.write_text(text)
    path.chmod(mode)
    return str(path)


def test_it_reads_the_url_the_password_file_and_the_timeout(tmp_path: Path) -> None:
    settings = read_settings({"CLUSTERWATCH_SLURMDB_URL": URL,
                              "CLUSTERWATCH_SLURMDB_PASSWORD_FILE": password_file(tmp_path),
                              "CLUSTERWATCH_SLURMDB_TIMEOUT_S": "2.5"})
    assert settings == SlurmDbSettings(host="db.example.org", port=3307,
                                       user="clusterwatch_usage", schema="clusterwatch_usage",
                                       password=SECRET, timeout_s=2.5)


def test_it_defaults_the_port_and_timeout_and_takes_the_systemd_credential(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CREDENTIALS_DIRECTORY", str(tmp_path))  # as systemd sets it
    (tmp_path / "slurmdb-password").write_text(SECRET)
    (tmp_path / "slurmdb-password").chmod(0o440)  # systemd's credentials: mode not checked
    settings = read_settings({"CLUSTERWATCH_SLURMDB_URL": "mysql://reader@127.0.0.1/usage",
                              "CREDENTIALS_DIRECTORY": str(tmp_path)})
    assert (settings.port, settings.timeout_s, settings.password) == (3306, 10.0, SECRET)


def test_the_source_is_built_from_the_environment(tmp_path: Path) -> None:
    source = SlurmDbAccounting.from_environment({
        "CLUSTERWATCH_SLURMDB_URL": URL,
        "CLUSTERWATCH_SLURMDB_PASSWORD_FILE": password_file(tmp_path)})
    assert source.settings.host == "db.example.org"


@pytest.mark.parametrize("url, message", [
    ("", "CLUSTERWATCH_ACCOUNTING=slurmdb needs CLUSTERWATCH_SLURMDB_URL"),
    (f"mysql://reader:{SECRET}@db/usage", "must not hold the password"),
    ("postgresql://reader@db/usage", "must start with mysql://"),
    ("mysql://db/usage", "must name the user and host"),
    ("mysql://reader@/usage", "must name the user and host"),
    ("mysql://reader@db:port/usage", "is not a valid URL"),
    ("mysql://reader@db/", "schema (its path) must be 1-64 letters"),
    ("mysql://reader@db/usage;drop", "schema (its path) must be 1-64 letters"),
    ("mysql://reader@db/usage?ssl=1", "takes no ?options"),
])
def test_a_bad_url_is_a_configuration_error(tmp_path: Path, url: str, message: str) -> None:
    with pytest.raises(AccountingConfigError) as refused:
        read_settings({"CLUSTERWATCH_SLURMDB_URL": url,
                       "CLUSTERWATCH_SLURMDB_PASSWORD_FILE": password_file(tmp_path)})
    assert message in str(refused.value) and isinstance(refused.value, ConfigError)
    assert SECRET not in str(refused.value) and "\n" not in str(refused.value)


SECONDS = "must be a number of seconds above 0 and at most 300"


@pytest.mark.parametrize("environ, message", [
    ({}, "needs its password: a mode-600 file named by CLUSTERWATCH_SLURMDB_PASSWORD_FILE"),
    ({"CLUSTERWATCH_SLURMDB_PASSWORD_FILE": SECRET}, "no such file (it names a mode-600 file"),
    ({"CLUSTERWATCH_SLURMDB_TIMEOUT_S": "soon"}, f"{SECONDS}, not 'soon'"),
    ({"CLUSTERWATCH_SLURMDB_TIMEOUT_S": "0"}, SECONDS),
    ({"CLUSTERWATCH_SLURMDB_TIMEOUT_S": "nan"}, SECONDS),
])
def test_a_missing_password_or_bad_timeout_is_a_configuration_error(
    tmp_path: Path, environ: dict[str, str], message: str
) -> None:
    if "TIMEOUT" in str(environ):
        environ = {**environ, "CLUSTERWATCH_SLURMDB_PASSWORD_FILE": password_file(tmp_path)}
    with pytest.raises(AccountingConfigError) as refused:
        read_settings({"CLUSTERWATCH_SLURMDB_URL": URL, **environ})
    assert message in str(refused.value) and SECRET not in str(refused.value)


@pytest.mark.parametrize("mode, text, message", [
    (0o644, SECRET, "is readable by others (mode 644); chmod 600 it"),
    (0o600, "", "is empty"),
    (0o600, f"{SECRET}\nmore\n", "holds more than one line"),
])
def test_an_unsafe_or_unusable_password_file_is_refused(
    tmp_path: Path, mode: int, text: str, message: str
) -> None:
    with pytest.raises(AccountingConfigError) as refused:
        read_settings({"CLUSTERWATCH_SLURMDB_URL": URL,
                       "CLUSTERWATCH_SLURMDB_PASSWORD_FILE": password_file(tmp_path, mode, text)})
    assert str(refused.value).startswith("CLUSTERWATCH_SLURMDB_PASSWORD_FILE")
    assert message in str(refused.value) and SECRET not in str(refused.value)
