"""panda_harvester.cfg [db] read as the harvester reads it; errors never show the password."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clusterwatch.reporter.harvester_cfg import (
    DbSettings,
    HarvesterConfigError,
    read_db_settings,
)
from tests.unprivileged import run_python, unreadable_file

SECRET = "s3cr%t"  # what the harvester gets from `s3cr%%t`


def write_cfg(tmp_path: Path, db_section: str, name: str = "panda_harvester.cfg") -> str:
    path = tmp_path / name
    path.write_text(
        "[master]\nuname = atlpan\nharvester_id = BNL_test\n\n"
        "[fifo]\ndatabase_filename = /dev/shm/$(TITLE)_fifo.db\n\n"
        f"[db]\n{db_section}\n\n[jobfetcher]\nnQueues = 5\n"
    )
    return str(path)


MARIADB = (
    "# database engine : sqlite or mariadb\n"
    "engine = mariadb\nverbose = False\nuseInspect = False\nuseMySQLdb = False\n"
    "user = $HARVESTER_DB_USER\npassword = s3cr%%t\nschema = HARVESTER\n"
    "host = db.example.org\nport = \t${HARVESTER_DB_PORT}\nreconnectTimeout = 300\n"
)
ENV = {"HARVESTER_DB_USER": "harvester", "HARVESTER_DB_PORT": "3307"}


def test_it_reads_mariadb_settings_with_interpolation_and_environment(tmp_path: Path) -> None:
    settings = read_db_settings(write_cfg(tmp_path, MARIADB), ENV)
    assert settings == {
        "engine": "mariadb", "host": "db.example.org", "port": 3307, "user": "harvester",
        "password": SECRET, "schema": "HARVESTER", "use_mysqldb": False,
    }
    assert isinstance(settings["port"], int)


def test_it_takes_a_literal_tab_before_the_port_as_the_template_has_it(tmp_path: Path) -> None:
    cfg = MARIADB.replace("${HARVESTER_DB_PORT}", "3306")
    assert read_db_settings(write_cfg(tmp_path, cfg), ENV)["port"] == 3306


def test_it_uses_the_harvesters_defaults_without_host_and_port(tmp_path: Path) -> None:
    cfg = "engine = mariadb\nuser = h\npassword = p\nschema = HARVESTER\n"
    settings = read_db_settings(write_cfg(tmp_path, cfg), {})
    assert (settings["host"], settings["port"]) == ("127.0.0.1", 3306)


def test_it_does_not_interpolate_a_password_from_the_environment(tmp_path: Path) -> None:
    cfg = MARIADB.replace("s3cr%%t", "${HARVESTER_DB_PASSWORD}")
    env = dict(ENV, HARVESTER_DB_PASSWORD="a%%b$c")
    assert read_db_settings(write_cfg(tmp_path, cfg), env)["password"] == "a%%b$c"


def test_it_expands_hostname_to_the_short_host_name(tmp_path: Path) -> None:
    cfg = MARIADB.replace("db.example.org", "$HOSTNAME")
    settings = read_db_settings(write_cfg(tmp_path, cfg), ENV, short_hostname="osgsub01")
    assert settings["host"] == "osgsub01"


def test_it_keeps_option_names_case_sensitive(tmp_path: Path) -> None:
    settings = read_db_settings(write_cfg(tmp_path, MARIADB.replace("useMySQLdb = False",
                                                                      "useMySQLdb = True")), ENV)
    assert settings["use_mysqldb"] is True
    other_case = MARIADB.replace("useMySQLdb = False", "usemysqldb = True")
    assert read_db_settings(write_cfg(tmp_path, other_case), ENV)["use_mysqldb"] is False


def test_it_overlays_the_configmap_under_panda_home(tmp_path: Path) -> None:
    configmap = tmp_path / "home" / "etc" / "configmap"
    configmap.mkdir(parents=True)
    (configmap / "panda_harvester_configmap.json").write_text(
        json.dumps({"db": {"host": "$DB_HOST", "port": 3308}, "master": {"uname": "x"}}))
    env = dict(ENV, PANDA_HOME=str(tmp_path / "home"), DB_HOST="mariadb.svc")
    settings = read_db_settings(write_cfg(tmp_path, MARIADB), env)
    assert (settings["host"], settings["port"]) == ("mariadb.svc", 3308)


def test_it_reads_the_sqlite_engine(tmp_path: Path) -> None:
    cfg = "engine = sqlite\ndatabase_filename = /var/lib/harvester/harvester.db\npassword = x\n"
    assert read_db_settings(write_cfg(tmp_path, cfg), {}) == {
        "engine": "sqlite", "database_filename": "/var/lib/harvester/harvester.db"}


def test_it_hides_the_password_in_repr_and_str(tmp_path: Path) -> None:
    settings = read_db_settings(write_cfg(tmp_path, MARIADB), ENV)
    assert isinstance(settings, DbSettings)
    assert SECRET not in repr(settings) and SECRET not in str(settings)
    assert "'password': '***'" in repr(settings)


def failure(tmp_path: Path, db_section: str, env: dict[str, str] = ENV) -> str:
    with pytest.raises(HarvesterConfigError) as raised:
        read_db_settings(write_cfg(tmp_path, db_section), env)
    message = str(raised.value)
    assert SECRET not in message and "s3cr" not in message
    # nothing chained that could carry the value into a traceback
    assert raised.value.__cause__ is None
    assert raised.value.__context__ is None or raised.value.__suppress_context__
    return message


def test_it_names_a_single_percent_without_quoting_the_value(tmp_path: Path) -> None:
    message = failure(tmp_path, MARIADB.replace("s3cr%%t", "s3cr%t"))
    assert message.endswith("panda_harvester.cfg: [db] password: bad % interpolation "
                            "(write a literal % as %%)")


def test_it_names_an_unparsable_line_by_number_only(tmp_path: Path) -> None:
    message = failure(tmp_path, MARIADB + "s3cr%%t without an equals sign\n")
    assert message.endswith("panda_harvester.cfg: cannot parse line(s) 20")


def test_it_fails_on_an_unset_environment_variable(tmp_path: Path) -> None:
    message = failure(tmp_path, MARIADB, {"HARVESTER_DB_USER": "harvester"})
    assert message == "[db] port names the environment variable HARVESTER_DB_PORT, which is not set"


def test_it_fails_on_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(HarvesterConfigError) as raised:
        read_db_settings(str(tmp_path / "absent.cfg"), {})
    assert str(raised.value) == f"cannot read {tmp_path / 'absent.cfg'}: No such file or directory"


def test_it_fails_on_an_unreadable_file(tmp_path: Path) -> None:
    path = unreadable_file(Path(write_cfg(tmp_path, MARIADB)).read_bytes(), "panda_harvester.cfg")
    said = run_python(
        "from clusterwatch.reporter.harvester_cfg import HarvesterConfigError, read_db_settings\n"
        "try:\n"
        f"    read_db_settings({str(path)!r}, {ENV!r})\n"
        "except HarvesterConfigError as error:\n"
        "    print(error)\n")
    assert said == f"cannot read {path}: Permission denied\n"


def test_it_fails_without_a_db_section(tmp_path: Path) -> None:
    path = tmp_path / "panda_harvester.cfg"
    path.write_text("[master]\nuname = x\n")
    with pytest.raises(HarvesterConfigError, match=r"has no \[db\] section$"):
        read_db_settings(str(path), {})


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (("engine = mariadb", "engine = mysql"),
         "[db] engine 'mysql' is neither mariadb nor sqlite (the harvester would use sqlite)"),
        (("engine = mariadb\n", ""), "[db] has no engine"),
        (("password = s3cr%%t\n", ""), "[db] password is missing or not a single value"),
        (("${HARVESTER_DB_PORT}", "33o6"), "[db] port is not a port number"),
        (("${HARVESTER_DB_PORT}", "70000"), "[db] port is not a port number"),
    ],
)
def test_it_fails_on_incomplete_settings(
    tmp_path: Path, change: tuple[str, str], expected: str
) -> None:
    assert failure(tmp_path, MARIADB.replace(*change)) == expected


def test_it_fails_on_a_repeated_option(tmp_path: Path) -> None:
    message = failure(tmp_path, MARIADB + "password = s3cr%%t\n")
    assert message.endswith("option 'password' repeated in [db] (line 20)")
