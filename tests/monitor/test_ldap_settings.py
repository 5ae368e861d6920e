"""The login settings from CLUSTERWATCH_LDAP_*: what a good configuration becomes, and every
bad value as an operator meets it, through the console script (exit 78, one line, no secret).

The logins themselves, against a real slapd, are in test_ldap_login.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import ldap  # python-ldap, part of the monitor extra like Django itself
import pytest

from clusterwatch.monitor.site import ldap_settings
from clusterwatch.monitor.site.ldap_settings import LDAP_BACKEND, MODEL_BACKEND, from_environ

CONSOLE_SCRIPT = Path(sys.executable).with_name("clusterwatch")
SECRET = "s3cret-bind-pw-Zq9"
TEMPLATE = "uid=%(user)s,ou=people,dc=example,dc=org"
MINIMAL = {"CLUSTERWATCH_LDAP_URI": "ldap://ldap.example.org",
           "CLUSTERWATCH_LDAP_USER_DN_TEMPLATE": TEMPLATE}


def secret_file(directory: Path, mode: int = 0o600, text: str = SECRET + "\n") -> str:
    path = directory / "ldap-bind-password"
    path.write_text(text)
    path.chmod(mode)
    return str(path)


def test_it_keeps_local_accounts_only_without_an_ldap_uri() -> None:
    assert from_environ({"PATH": "/usr/bin"}) == {"AUTHENTICATION_BACKENDS": [MODEL_BACKEND]}
    assert from_environ({"CLUSTERWATCH_LDAP_URI": "  "}) == {
        "AUTHENTICATION_BACKENDS": [MODEL_BACKEND]}


def test_it_asks_ldap_first_then_local_accounts_with_timeouts() -> None:
    settings = from_environ(MINIMAL)
    assert settings["AUTHENTICATION_BACKENDS"] == [LDAP_BACKEND, MODEL_BACKEND]
    assert settings["AUTH_LDAP_SERVER_URI"] == "ldap://ldap.example.org"
    assert settings["AUTH_LDAP_USER_DN_TEMPLATE"] == TEMPLATE
    assert settings["AUTH_LDAP_BIND_DN"] == "" and settings["AUTH_LDAP_BIND_PASSWORD"] == ""
    assert settings["AUTH_LDAP_BIND_AS_AUTHENTICATING_USER"] is True
    assert settings["AUTH_LDAP_START_TLS"] is False
    assert settings["AUTH_LDAP_USERNAME_ATTR"] == "uid"
    assert settings["AUTH_LDAP_USER_ATTR_MAP"] == {
        "first_name": "givenName", "last_name": "sn", "email": "mail"}
    options = settings["AUTH_LDAP_CONNECTION_OPTIONS"]
    assert options[ldap.OPT_NETWORK_TIMEOUT] == 5.0 and options[ldap.OPT_TIMEOUT] == 5.0
    assert options[ldap.OPT_CONNECT_ASYNC] == 1 and options[ldap.OPT_REFERRALS] == 0
    assert "AUTH_LDAP_USER_FLAGS_BY_GROUP" not in settings  # is_staff stays the admin's


def test_it_searches_with_a_service_account_whose_password_is_in_a_file(
        tmp_path: Path) -> None:
    settings = from_environ({
        "CLUSTERWATCH_LDAP_URI": "ldaps://ldap1.example.org:636 ldaps://[2001:db8::1]",
        "CLUSTERWATCH_LDAP_USER_SEARCH_BASE": "ou=people,dc=example,dc=org",
        "CLUSTERWATCH_LDAP_USER_FILTER": "(&(objectClass=person)(sAMAccountName=%(user)s))",
        "CLUSTERWATCH_LDAP_BIND_DN": "cn=monitor,ou=services,dc=example,dc=org",
        "CLUSTERWATCH_LDAP_BIND_PASSWORD_FILE": secret_file(tmp_path, 0o400),
        "CLUSTERWATCH_LDAP_USERNAME_ATTR": "sAMAccountName",
        "CLUSTERWATCH_LDAP_TIMEOUT_S": "2.5",
    })
    search = settings["AUTH_LDAP_USER_SEARCH"]
    assert (search.base_dn, search.scope) == ("ou=people,dc=example,dc=org", ldap.SCOPE_SUBTREE)
    assert search.filterstr == "(&(objectClass=person)(sAMAccountName=%(user)s))"
    assert "AUTH_LDAP_USER_DN_TEMPLATE" not in settings
    assert settings["AUTH_LDAP_BIND_PASSWORD"] == SECRET
    assert settings["AUTH_LDAP_BIND_AS_AUTHENTICATING_USER"] is False
    assert settings["AUTH_LDAP_SERVER_URI"] == "ldaps://ldap1.example.org:636 ldaps://[2001:db8::1]"
    assert settings["AUTH_LDAP_USERNAME_ATTR"] == "sAMAccountName"
    assert settings["AUTH_LDAP_CONNECTION_OPTIONS"][ldap.OPT_TIMEOUT] == 2.5


def test_it_reads_the_systemd_credential_when_no_file_is_named(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret_file(tmp_path, 0o640)  # systemd's ACL may show as group bits: trusted as is
    monkeypatch.setenv("CREDENTIALS_DIRECTORY", str(tmp_path))  # what the file check reads
    settings = from_environ({**MINIMAL, "CREDENTIALS_DIRECTORY": str(tmp_path),
                             "CLUSTERWATCH_LDAP_BIND_DN": "cn=monitor,dc=example,dc=org"})
    assert settings["AUTH_LDAP_BIND_PASSWORD"] == SECRET


@pytest.mark.parametrize("kind, group_type", [
    (None, "GroupOfNamesType"), ("groupofnames", "GroupOfNamesType"),
    ("groupOfUniqueNames", "GroupOfUniqueNamesType"), ("posixGroup", "PosixGroupType")])
def test_it_makes_staff_of_the_staff_groups_members(kind: Any, group_type: str) -> None:
    group = "cn=staff,ou=groups,dc=example,dc=org"
    environ = {**MINIMAL, "CLUSTERWATCH_LDAP_STAFF_GROUP": group}
    if kind:
        environ["CLUSTERWATCH_LDAP_GROUP_TYPE"] = kind
    settings = from_environ(environ)
    assert settings["AUTH_LDAP_USER_FLAGS_BY_GROUP"] == {"is_staff": group}
    assert type(settings["AUTH_LDAP_GROUP_TYPE"]).__name__ == group_type
    assert settings["AUTH_LDAP_GROUP_SEARCH"].base_dn == group
    assert "AUTH_LDAP_OPERATORS_GROUP" not in settings  # the operators group is the admin's


def test_it_names_the_operators_group_alone_or_beside_the_staff_group() -> None:
    operators = "cn=hpc-operators,ou=groups,dc=example,dc=org"
    alone = from_environ({**MINIMAL, "CLUSTERWATCH_LDAP_OPERATORS_GROUP": operators,
                          "CLUSTERWATCH_LDAP_GROUP_TYPE": "posixGroup"})
    assert alone["AUTH_LDAP_OPERATORS_GROUP"] == operators
    assert "AUTH_LDAP_USER_FLAGS_BY_GROUP" not in alone  # staff stays the admin's
    assert alone["AUTH_LDAP_GROUP_SEARCH"].base_dn == operators
    assert type(alone["AUTH_LDAP_GROUP_TYPE"]).__name__ == "PosixGroupType"
    staff = "cn=staff,ou=groups,dc=example,dc=org"
    both = from_environ({**MINIMAL, "CLUSTERWATCH_LDAP_OPERATORS_GROUP": operators,
                         "CLUSTERWATCH_LDAP_STAFF_GROUP": staff})
    assert both["AUTH_LDAP_USER_FLAGS_BY_GROUP"] == {"is_staff": staff}
    assert both["AUTH_LDAP_OPERATORS_GROUP"] == operators
    assert [search.base_dn for search in both["AUTH_LDAP_GROUP_SEARCH"].searches] == [
        staff, operators]


def test_it_trusts_only_the_ca_file_when_one_is_given(tmp_path: Path) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    options = from_environ({**MINIMAL, "CLUSTERWATCH_LDAP_CA_FILE": str(ca),
                            "CLUSTERWATCH_LDAP_START_TLS": "yes"})["AUTH_LDAP_CONNECTION_OPTIONS"]
    assert options[ldap.OPT_X_TLS_CACERTFILE] == str(ca)
    assert options[ldap.OPT_X_TLS_REQUIRE_CERT] == ldap.OPT_X_TLS_DEMAND
    assert list(options)[-1] == ldap.OPT_X_TLS_NEWCTX  # applied last, after the CA


# --- every bad value, through the console script ------------------------------------------

BAD = [
    ({"CLUSTERWATCH_LDAP_URI": "http://ldap.example.org"}, "CLUSTERWATCH_LDAP_URI must be"),
    ({"CLUSTERWATCH_LDAP_URI": "ldap://ldap.example.org/dc=example,dc=org"},
     "CLUSTERWATCH_LDAP_URI must be"),
    ({"CLUSTERWATCH_LDAP_URI": "ldap://ldap.example.org:99999"}, "CLUSTERWATCH_LDAP_URI must be"),
    ({"CLUSTERWATCH_LDAP_URI": "ldap://cw:pw@ldap.example.org"}, "CLUSTERWATCH_LDAP_URI must be"),
    ({"CLUSTERWATCH_LDAP_USER_DN_TEMPLATE": None}, "needs exactly one of"),
    ({"CLUSTERWATCH_LDAP_USER_SEARCH_BASE": "dc=example,dc=org"}, "needs exactly one of"),
    ({"CLUSTERWATCH_LDAP_USER_DN_TEMPLATE": "uid=alice,ou=people,dc=example,dc=org"},
     "CLUSTERWATCH_LDAP_USER_DN_TEMPLATE must hold %(user)s"),
    ({"CLUSTERWATCH_LDAP_USER_DN_TEMPLATE": "uid=%(user)s,%(base)s"},
     "CLUSTERWATCH_LDAP_USER_DN_TEMPLATE must hold %(user)s"),
    ({"CLUSTERWATCH_LDAP_USER_DN_TEMPLATE": "uid=%(user)s,people"},
     "CLUSTERWATCH_LDAP_USER_DN_TEMPLATE must be a distinguished name"),
    ({"CLUSTERWATCH_LDAP_USER_DN_TEMPLATE": None, "CLUSTERWATCH_LDAP_USER_SEARCH_BASE": "people"},
     "CLUSTERWATCH_LDAP_USER_SEARCH_BASE must be a distinguished name"),
    ({"CLUSTERWATCH_LDAP_USER_DN_TEMPLATE": None, "CLUSTERWATCH_LDAP_USER_SEARCH_BASE":
      "dc=example,dc=org", "CLUSTERWATCH_LDAP_USER_FILTER": "uid=%(user)s"},
     "CLUSTERWATCH_LDAP_USER_FILTER must be an LDAP filter"),
    ({"CLUSTERWATCH_LDAP_USER_DN_TEMPLATE": None, "CLUSTERWATCH_LDAP_USER_SEARCH_BASE":
      "dc=example,dc=org", "CLUSTERWATCH_LDAP_USER_FILTER": "(uid=%(user)s))("},
     "CLUSTERWATCH_LDAP_USER_FILTER must be an LDAP filter"),
    ({"CLUSTERWATCH_LDAP_USER_FILTER": "(uid=%(user)s)"}, "CLUSTERWATCH_LDAP_USER_FILTER is for"),
    ({"CLUSTERWATCH_LDAP_BIND_DN": "cn=monitor,dc=example,dc=org"},
     "CLUSTERWATCH_LDAP_BIND_DN needs its password"),
    ({"CLUSTERWATCH_LDAP_BIND_DN": "monitor"}, "CLUSTERWATCH_LDAP_BIND_DN must be a distinguished"),
    ({"CLUSTERWATCH_LDAP_BIND_DN": "cn=monitor,dc=example,dc=org",
      "CLUSTERWATCH_LDAP_BIND_PASSWORD_FILE": "{open file}"},
     "CLUSTERWATCH_LDAP_BIND_PASSWORD_FILE: {open file} is readable by others (mode 644)"),
    ({"CLUSTERWATCH_LDAP_BIND_DN": "cn=monitor,dc=example,dc=org",
      "CLUSTERWATCH_LDAP_BIND_PASSWORD_FILE": "{absent}"},
     "CLUSTERWATCH_LDAP_BIND_PASSWORD_FILE: no such file (it names a mode-600 file"),
    ({"CLUSTERWATCH_LDAP_BIND_PASSWORD_FILE": "{private file}"},
     "CLUSTERWATCH_LDAP_BIND_PASSWORD_FILE is the password of CLUSTERWATCH_LDAP_BIND_DN"),
    ({"CLUSTERWATCH_LDAP_BIND_DN": "cn=monitor,dc=example,dc=org",
      "CLUSTERWATCH_LDAP_BIND_PASSWORD": SECRET}, "CLUSTERWATCH_LDAP_BIND_PASSWORD is not read"),
    ({"CLUSTERWATCH_LDAP_START_TLS": "maybe"}, "CLUSTERWATCH_LDAP_START_TLS must be one of"),
    ({"CLUSTERWATCH_LDAP_URI": "ldaps://ldap.example.org", "CLUSTERWATCH_LDAP_START_TLS": "1"},
     "CLUSTERWATCH_LDAP_START_TLS is for ldap:// URIs"),
    ({"CLUSTERWATCH_LDAP_CA_FILE": "{absent}"}, "CLUSTERWATCH_LDAP_CA_FILE: cannot read {absent}"),
    ({"CLUSTERWATCH_LDAP_STAFF_GROUP": "staff"},
     "CLUSTERWATCH_LDAP_STAFF_GROUP must be a distinguished name"),
    ({"CLUSTERWATCH_LDAP_OPERATORS_GROUP": "operators"},
     "CLUSTERWATCH_LDAP_OPERATORS_GROUP must be a distinguished name"),
    ({"CLUSTERWATCH_LDAP_OPERATORS_GROUP": "cn=ops,dc=example,dc=org",
      "CLUSTERWATCH_LDAP_GROUP_TYPE": "nisNetgroup"},
     "CLUSTERWATCH_LDAP_GROUP_TYPE must be one of"),
    ({"CLUSTERWATCH_LDAP_STAFF_GROUP": "cn=staff,dc=example,dc=org",
      "CLUSTERWATCH_LDAP_GROUP_TYPE": "nisNetgroup"},
     "CLUSTERWATCH_LDAP_GROUP_TYPE must be one of"),
    ({"CLUSTERWATCH_LDAP_GROUP_TYPE": "posixGroup"}, "CLUSTERWATCH_LDAP_GROUP_TYPE says what"),
    ({"CLUSTERWATCH_LDAP_TIMEOUT_S": "0"}, "CLUSTERWATCH_LDAP_TIMEOUT_S must be a number"),
    ({"CLUSTERWATCH_LDAP_TIMEOUT_S": "nan"}, "CLUSTERWATCH_LDAP_TIMEOUT_S must be a number"),
    ({"CLUSTERWATCH_LDAP_TIMEOUT_S": "60"}, "CLUSTERWATCH_LDAP_TIMEOUT_S must be a number"),
    ({"CLUSTERWATCH_LDAP_TIMEOUT_S": "five"}, "CLUSTERWATCH_LDAP_TIMEOUT_S must be a number"),
    ({"CLUSTERWATCH_LDAP_EMAIL_ATTR": "e mail"}, "CLUSTERWATCH_LDAP_EMAIL_ATTR must be an LDAP"),
    ({"CLUSTERWATCH_LDAP_STAF_GROUP": "cn=staff,dc=example,dc=org"},
     "CLUSTERWATCH_LDAP_STAF_GROUP is not a setting"),
    ({"CLUSTERWATCH_LDAP_URI": None}, "CLUSTERWATCH_LDAP_USER_DN_TEMPLATE is set but "
     "CLUSTERWATCH_LDAP_URI is not"),
]


def console(tmp_path: Path, environ: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`clusterwatch monitor check` (the installed console script) in a clean environment."""
    env = {name: value for name, value in os.environ.items()
           if not name.startswith("CLUSTERWATCH_") and name not in (
               "DJANGO_SETTINGS_MODULE", "CREDENTIALS_DIRECTORY")}
    env.update(environ, CLUSTERWATCH_DATA_DIR=str(tmp_path / "data"))
    return subprocess.run([str(CONSOLE_SCRIPT), "monitor", "check"], env=env,
                          capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.parametrize("changes, message", BAD)
def test_it_stops_with_78_and_one_line_naming_the_variable(
        tmp_path: Path, changes: dict[str, Any], message: str) -> None:
    places = {"{open file}": secret_file(tmp_path, 0o644), "{absent}": str(tmp_path / "absent")}
    (tmp_path / "private").mkdir()
    places["{private file}"] = secret_file(tmp_path / "private")
    for placeholder, path in places.items():
        message = message.replace(placeholder, path)
    environ = dict(MINIMAL)
    for name, value in changes.items():
        if value is None:
            environ.pop(name)
        else:
            environ[name] = places.get(value, value)
    done = console(tmp_path, environ)
    assert done.returncode == 78, done.stderr
    assert done.stdout == "" and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert message in done.stderr
    assert "Traceback" not in done.stderr and SECRET not in done.stderr


def test_a_good_configuration_passes_the_check(tmp_path: Path) -> None:
    environ = {**MINIMAL, "CLUSTERWATCH_LDAP_STAFF_GROUP": "cn=staff,dc=example,dc=org",
               "CLUSTERWATCH_LDAP_BIND_DN": "cn=monitor,dc=example,dc=org",
               "CLUSTERWATCH_LDAP_BIND_PASSWORD_FILE": secret_file(tmp_path)}
    done = console(tmp_path, environ)
    assert done.returncode == 0, done.stderr
    assert SECRET not in done.stdout + done.stderr


def test_every_variable_it_knows_is_documented() -> None:
    docs = (Path(__file__).parents[2] / "docs" / "monitor.md").read_text()
    section = docs.split("## Logging in: LDAP and local accounts", 1)[1].split("\n## ", 1)[0]
    for name in sorted(ldap_settings.KNOWN):
        assert f"`{name}`" in section, name


ROOT = Path(__file__).parents[2]


def _with_files(environ: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """`environ` with its CA file made up (the examples name a site's) and, with a bind DN,
    the service password as the systemd credential."""
    if "CLUSTERWATCH_LDAP_CA_FILE" in environ:
        (tmp_path / "ca.pem").write_text("-----BEGIN CERTIFICATE-----\n")
        environ["CLUSTERWATCH_LDAP_CA_FILE"] = str(tmp_path / "ca.pem")
    if "CLUSTERWATCH_LDAP_BIND_DN" in environ:
        (tmp_path / ldap_settings.CREDENTIAL).write_text(SECRET)
        (tmp_path / ldap_settings.CREDENTIAL).chmod(0o600)
        environ["CREDENTIALS_DIRECTORY"] = str(tmp_path)
    return environ


def test_the_docs_examples_are_good_configurations(tmp_path: Path) -> None:
    section = (ROOT / "docs" / "monitor.md").read_text().split(
        "## Logging in: LDAP and local accounts", 1)[1].split("\n## ", 1)[0]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    examples = [[line for line in chunk.splitlines() if line and not line.startswith("#")]
                for chunk in block.split("\n\n")]
    assert len(examples) == 3  # OpenLDAP, FreeIPA, Active Directory
    for lines in examples:
        environ = _with_files(dict(line.split("=", 1) for line in lines), tmp_path)
        settings = from_environ(environ)
        assert settings["AUTHENTICATION_BACKENDS"] == [LDAP_BACKEND, MODEL_BACKEND]
        assert settings["AUTH_LDAP_USER_FLAGS_BY_GROUP"]["is_staff"] == environ[
            "CLUSTERWATCH_LDAP_STAFF_GROUP"]


def test_the_shipped_environment_file_and_drop_in_agree_with_the_code(tmp_path: Path) -> None:
    lines = [line[1:] for line in (ROOT / "deploy" / "monitor.env.example").read_text()
             .splitlines() if line.startswith("#CLUSTERWATCH_LDAP_")]
    settings = from_environ(_with_files(dict(line.split("=", 1) for line in lines), tmp_path))
    assert settings["AUTH_LDAP_SERVER_URI"].startswith("ldaps://")
    drop_in = (ROOT / "deploy" / "systemd" / "clusterwatch-monitor-ldap.conf").read_text()
    assert f"LoadCredential={ldap_settings.CREDENTIAL}:" in drop_in
