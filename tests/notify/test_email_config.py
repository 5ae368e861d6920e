"""An email channel's `[[channels]]` table: its defaults, each refusal in one line naming the
setting, and its password and CA files read only when the channel is built."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from clusterwatch.errors import ConfigError
from clusterwatch.notify.channel_config import build_channels, parse_channels
from clusterwatch.notify.email_channel import EmailChannel
from clusterwatch.toml_file import read_toml
from tests.notify.email_support import PASSWORD

BASE = 'type = "email"\nsmtp_host = "smtp.example.org"\nfrom = "watch@example.org"\n' \
       'to = ["ops@example.org"]\n'
LOGIN = 'username = "clusterwatch"\npassword_file = "smtp_password"\n'


def parse(tmp_path: Path, text: str) -> Any:
    path = tmp_path / "watch.toml"
    path.write_text("[[channels]]\n" + text)
    data = read_toml(path)
    assert data is not None
    return parse_channels(data["channels"], tmp_path)


def password_file(tmp_path: Path, text: str = PASSWORD + "\n", mode: int = 0o600) -> Path:
    path = tmp_path / "smtp_password"
    path.write_text(text)
    path.chmod(mode)
    return path


def test_it_takes_starttls_on_587_by_default(tmp_path: Path) -> None:
    [spec] = parse(tmp_path, BASE)
    assert (spec.type, spec.name, spec.timeout_s) == ("email", "email", 10.0)
    assert spec.email is not None
    smtp = spec.email.smtp
    assert (smtp.host, smtp.port, smtp.security, smtp.username) == (
        "smtp.example.org", 587, "starttls", "")
    assert spec.email.recipients == ("ops@example.org",)


@pytest.mark.parametrize(("security", "port"), [("tls", 465), ("none", 25)])
def test_it_takes_each_security_modes_own_port(tmp_path: Path, security: str,
                                               port: int) -> None:
    [spec] = parse(tmp_path, BASE + f'security = "{security}"\n')
    assert spec.email.smtp.port == port


def test_it_reads_every_setting(tmp_path: Path) -> None:
    [spec] = parse(tmp_path, BASE.replace('to = ["ops@example.org"]\n', "")
                   + 'name = "ops-mail"\nsmtp_port = 2525\nsecurity = "tls"\n' + LOGIN
                   + 'ca_file = "site-ca.pem"\ntimeout_s = 30\n'
                   'to = ["Pool ops <ops@example.org>", "oncall@example.org"]\n')
    settings = spec.email
    assert (spec.name, settings.smtp.port, settings.smtp.timeout_s) == ("ops-mail", 2525, 30.0)
    assert settings.smtp.username == "clusterwatch"
    assert settings.password_file == tmp_path / "smtp_password"
    assert settings.ca_file == tmp_path / "site-ca.pem"
    assert settings.envelope().recipients == ("ops@example.org", "oncall@example.org")


def test_it_allows_a_login_in_clear_to_a_server_on_this_host(tmp_path: Path) -> None:
    for host in ("localhost", "127.0.0.1", "::1", "[::1]"):
        text = BASE.replace("smtp.example.org", host) + 'security = "none"\n' + LOGIN
        [spec] = parse(tmp_path, text)
        assert spec.email.smtp.host in ("localhost", "127.0.0.1", "::1")


REFUSED = {
    "no smtp_host": (BASE.replace('smtp_host = "smtp.example.org"\n', ""), "needs smtp_host"),
    "a bad smtp_host": (BASE.replace("smtp.example.org", "smtp example.org"),
                        "smtp_host must be a host name"),
    "no from": (BASE.replace('from = "watch@example.org"\n', ""), "from is needed"),
    "a from that is not an address": (BASE.replace("watch@example.org", "watch"),
                                      "from must be one address"),
    "a from with a line break": (BASE.replace('"watch@example.org"',
                                              '"watch@example.org\\r\\nBcc: x@evil.example"'),
                                 "from must be one address"),
    "a from of two addresses": (BASE.replace('"watch@example.org"',
                                             '"a@example.org, b@example.org"'),
                                "from must be one address"),
    "no to": (BASE.replace('to = ["ops@example.org"]\n', ""), "to is needed"),
    "to a string": (BASE.replace('["ops@example.org"]', '"ops@example.org"'),
                    "must be a non-empty list"),
    "to empty": (BASE.replace('["ops@example.org"]', "[]"), "must be a non-empty list"),
    "to twice": (BASE.replace('["ops@example.org"]', '["ops@example.org", "OPS@example.org"]'),
                 "lists an address twice"),
    "to a bad address": (BASE.replace('["ops@example.org"]', '["ops team@example.org"]'),
                         "to[0] must be one address"),
    "port 0": (BASE + "smtp_port = 0\n", "smtp_port must be a port number"),
    "port 70000": (BASE + "smtp_port = 70000\n", "smtp_port must be a port number"),
    "port a string": (BASE + 'smtp_port = "25"\n', "smtp_port must be a port number"),
    "port true": (BASE + "smtp_port = true\n", "smtp_port must be a port number"),
    "a bad security word": (BASE + 'security = "ssl"\n',
                            "security must be one of starttls, tls, none"),
    "a username alone": (BASE + 'username = "u"\n', "username and password_file go together"),
    "a password file alone": (BASE + 'password_file = "p"\n', "go together"),
    "a login in clear": (BASE + 'security = "none"\n' + LOGIN, "password in clear"),
    "a CA in clear": (BASE + 'security = "none"\nca_file = "ca.pem"\n',
                      "ca_file needs security starttls or tls"),
    "a slack key": (BASE + 'webhook_file = "slack_webhook"\n', "unknown key(s) webhook_file"),
    "timeout inf": (BASE + "timeout_s = inf\n", "timeout_s must be a positive number"),
}


@pytest.mark.parametrize(("text", "message"), list(REFUSED.values()), ids=list(REFUSED))
def test_it_refuses_a_bad_setting_in_one_line_naming_it(tmp_path: Path, text: str,
                                                        message: str) -> None:
    with pytest.raises(ConfigError, match=r"^channels\[0\]") as caught:
        parse(tmp_path, text)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_other_channels_refuse_the_email_keys(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"unknown key\(s\) smtp_host"):
        parse(tmp_path, 'type = "slack"\nwebhook_file = "w"\nsmtp_host = "x"\n')


def test_it_reads_the_password_when_built_and_never_shows_it(tmp_path: Path) -> None:
    password_file(tmp_path)
    [channel] = build_channels(parse(tmp_path, BASE + LOGIN))
    assert isinstance(channel, EmailChannel)
    assert channel._password == PASSWORD  # the spaces inside are the password's own
    assert PASSWORD not in repr(channel) and "smtp.example.org:587" in repr(channel)


BAD_PASSWORD_FILES = {
    "group-readable": (lambda tmp: password_file(tmp, mode=0o640), "readable by group"),
    "world-readable": (lambda tmp: password_file(tmp, mode=0o604), "chmod 600"),
    "missing": (lambda tmp: None, "does not exist"),
    "empty": (lambda tmp: password_file(tmp, "\n"), "password alone, on one line"),
    "two lines": (lambda tmp: password_file(tmp, PASSWORD + "\nmore\n"), "on one line"),
    "a directory": (lambda tmp: (tmp / "smtp_password").mkdir(mode=0o700),
                    "not a regular file"),
}


@pytest.mark.parametrize(("make", "message"), list(BAD_PASSWORD_FILES.values()),
                         ids=list(BAD_PASSWORD_FILES))
def test_it_refuses_an_unusable_password_file_without_quoting_it(
    tmp_path: Path, make: Any, message: str
) -> None:
    make(tmp_path)
    with pytest.raises(ConfigError) as caught:
        build_channels(parse(tmp_path, BASE + LOGIN))
    assert message in str(caught.value) and str(tmp_path / "smtp_password") in str(caught.value)
    assert "8817" not in str(caught.value) and "more" not in str(caught.value)


def test_it_refuses_a_ca_file_it_cannot_use(tmp_path: Path) -> None:
    text = BASE + 'ca_file = "site-ca.pem"\n'
    with pytest.raises(ConfigError, match=r"site-ca\.pem does not exist"):
        build_channels(parse(tmp_path, text))
    (tmp_path / "site-ca.pem").write_text("not a certificate\n")
    with pytest.raises(ConfigError, match=r"site-ca\.pem holds no PEM certificate"):
        build_channels(parse(tmp_path, text))
