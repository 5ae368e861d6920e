"""CLUSTERWATCH_EMAIL_*: Django's SMTP settings and the email's own, every bad value one line
naming the variable; the SMTP password only from a private file or a systemd credential."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterwatch.errors import ConfigError
from clusterwatch.monitor.usage.mail.settings import (
    MailSettings,
    from_environ,
    require_sending,
    smtp_password,
)

SECRET = "s3cret-Pa55"


def test_it_defaults_to_a_local_server_and_mails_only_jobs_with_warnings() -> None:
    settings = from_environ({})
    assert (settings["EMAIL_HOST"], settings["EMAIL_PORT"]) == ("localhost", 25)
    assert settings["EMAIL_TIMEOUT"] == 10.0 and settings["EMAIL_USE_TLS"] is False
    assert settings["USAGE_MAIL"].jobs == "warnings"
    assert "DEFAULT_FROM_EMAIL" not in settings


def test_it_reads_every_setting() -> None:
    settings = from_environ({
        "CLUSTERWATCH_EMAIL_HOST": "smtp.example.org", "CLUSTERWATCH_EMAIL_USE_TLS": "yes",
        "CLUSTERWATCH_EMAIL_USER": "monitor", "CLUSTERWATCH_EMAIL_FROM": "hpc@example.org",
        "CLUSTERWATCH_EMAIL_TIMEOUT": "20", "CLUSTERWATCH_EMAIL_DOMAIN": "@example.org",
        "CLUSTERWATCH_EMAIL_BASE_URL": "https://monitor.example.org/",
        "CLUSTERWATCH_EMAIL_JOBS": "ALL", "CLUSTERWATCH_EMAIL_PASSWORD_FILE": "/etc/pw",
        "CREDENTIALS_DIRECTORY": "/run/credentials/x"})
    assert settings["EMAIL_PORT"] == 587 and settings["EMAIL_USE_TLS"] is True
    assert settings["EMAIL_HOST_USER"] == "monitor" and settings["EMAIL_TIMEOUT"] == 20.0
    assert settings["DEFAULT_FROM_EMAIL"] == "hpc@example.org"
    assert settings["USAGE_MAIL"] == MailSettings(
        sender="hpc@example.org", base_url="https://monitor.example.org", domain="example.org",
        jobs="all", user="monitor", password_file="/etc/pw",
        credentials_dir="/run/credentials/x")
    assert from_environ({"CLUSTERWATCH_EMAIL_USE_SSL": "1"})["EMAIL_PORT"] == 465


@pytest.mark.parametrize(("name", "value", "says"), [
    ("CLUSTERWATCH_EMAIL_PORT", "0", "CLUSTERWATCH_EMAIL_PORT must be a port number"),
    ("CLUSTERWATCH_EMAIL_PORT", "smtp", "CLUSTERWATCH_EMAIL_PORT must be a port number"),
    ("CLUSTERWATCH_EMAIL_HOST", "mail host", "CLUSTERWATCH_EMAIL_HOST must be a host name"),
    ("CLUSTERWATCH_EMAIL_USE_TLS", "maybe", "CLUSTERWATCH_EMAIL_USE_TLS must be one of"),
    ("CLUSTERWATCH_EMAIL_FROM", "not an address", "CLUSTERWATCH_EMAIL_FROM must be an address"),
    ("CLUSTERWATCH_EMAIL_TIMEOUT", "nan", "CLUSTERWATCH_EMAIL_TIMEOUT must be a number"),
    ("CLUSTERWATCH_EMAIL_TIMEOUT", "600", "CLUSTERWATCH_EMAIL_TIMEOUT must be a number"),
    ("CLUSTERWATCH_EMAIL_BASE_URL", "monitor.example.org", "CLUSTERWATCH_EMAIL_BASE_URL must"),
    ("CLUSTERWATCH_EMAIL_BASE_URL", "https://[::1", "CLUSTERWATCH_EMAIL_BASE_URL must"),
    ("CLUSTERWATCH_EMAIL_BASE_URL", "https://u:pw@m.example.org",
     "CLUSTERWATCH_EMAIL_BASE_URL must not hold a user name or password"),
    ("CLUSTERWATCH_EMAIL_DOMAIN", "exa mple", "CLUSTERWATCH_EMAIL_DOMAIN must be a domain"),
    ("CLUSTERWATCH_EMAIL_JOBS", "some", "CLUSTERWATCH_EMAIL_JOBS must be one of all, warnings"),
    ("CLUSTERWATCH_EMAIL_HOTS", "x", "CLUSTERWATCH_EMAIL_HOTS is not a setting"),
    ("CLUSTERWATCH_EMAIL_PASSWORD", SECRET, "CLUSTERWATCH_EMAIL_PASSWORD is not read"),
])
def test_a_bad_value_is_one_line_naming_the_variable(name: str, value: str, says: str) -> None:
    with pytest.raises(ValueError) as raised:
        from_environ({name: value})
    message = str(raised.value)
    assert message.startswith(says) and "\n" not in message
    assert SECRET not in message and "pw@" not in message


def test_tls_and_ssl_exclude_each_other() -> None:
    with pytest.raises(ValueError, match="USE_TLS and CLUSTERWATCH_EMAIL_USE_SSL exclude"):
        from_environ({"CLUSTERWATCH_EMAIL_USE_TLS": "1", "CLUSTERWATCH_EMAIL_USE_SSL": "1"})


def test_sending_needs_a_sender_and_the_links_base() -> None:
    with pytest.raises(ConfigError, match="CLUSTERWATCH_EMAIL_FROM is not set"):
        require_sending(from_environ({})["USAGE_MAIL"])
    with pytest.raises(ConfigError, match="CLUSTERWATCH_EMAIL_BASE_URL is not set"):
        require_sending(from_environ({"CLUSTERWATCH_EMAIL_FROM": "a@b.org"})["USAGE_MAIL"])


def test_the_password_comes_from_a_private_file_or_the_credential(tmp_path: Path) -> None:
    secret = tmp_path / "email-password"
    secret.write_text(SECRET + "\n")
    secret.chmod(0o600)
    user = {"CLUSTERWATCH_EMAIL_USER": "monitor"}
    assert smtp_password(from_environ({})["USAGE_MAIL"]) == ""
    named = from_environ({**user, "CLUSTERWATCH_EMAIL_PASSWORD_FILE": str(secret)})
    assert smtp_password(named["USAGE_MAIL"]) == SECRET
    credential = from_environ({**user, "CREDENTIALS_DIRECTORY": str(tmp_path)})
    assert smtp_password(credential["USAGE_MAIL"]) == SECRET
    secret.chmod(0o644)
    with pytest.raises(ConfigError) as raised:
        smtp_password(named["USAGE_MAIL"])
    assert "readable by others" in str(raised.value) and SECRET not in str(raised.value)


def test_a_login_without_a_password_or_a_password_without_a_login_is_refused(
        tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="USER is set but there is no password"):
        smtp_password(from_environ({"CLUSTERWATCH_EMAIL_USER": "monitor",
                                    "CREDENTIALS_DIRECTORY": str(tmp_path)})["USAGE_MAIL"])
    with pytest.raises(ConfigError, match="PASSWORD_FILE is set but CLUSTERWATCH_EMAIL_USER"):
        smtp_password(from_environ({"CLUSTERWATCH_EMAIL_PASSWORD_FILE": "/x"})["USAGE_MAIL"])
