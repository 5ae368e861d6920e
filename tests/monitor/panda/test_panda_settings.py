"""The PanDA database settings: the URL's parts, the password from a file or the systemd
credential, the schema as an identifier, each refusal one line without the password; and
docs/monitor.md's section naming every setting and option."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from clusterwatch.errors import ConfigError
from clusterwatch.monitor.panda.panda_settings import (
    CREDENTIAL,
    PASSWORD_SETTING,
    SCHEMA_SETTING,
    URL_SETTING,
    PandaDatabase,
    panda_database,
)
from clusterwatch.monitor.site.management.commands.remote_harvester_report import Command

DOCS = Path(__file__).resolve().parents[3] / "docs" / "monitor.md"
URL = "postgresql://panda_reader@pandadb01.example.org:6432/panda_db?sslmode=verify-full"


def secret(directory: Path, name: str = "pw", mode: int = 0o600) -> Path:
    path = directory / name
    path.write_text("hunter2\n")
    path.chmod(mode)
    return path


def test_it_reads_the_url_and_the_password_file(tmp_path: Path) -> None:
    database = panda_database({URL_SETTING: URL, PASSWORD_SETTING: str(secret(tmp_path))})
    assert database == PandaDatabase(
        host="pandadb01.example.org", port=6432, dbname="panda_db", user="panda_reader",
        schema="doma_panda", password="hunter2", options={"sslmode": "verify-full"})
    assert "hunter2" not in repr(database)


def test_it_is_off_without_a_url_and_defaults_the_port_and_takes_the_credential(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert panda_database({}) is None
    monkeypatch.setenv("CREDENTIALS_DIRECTORY", str(tmp_path))
    secret(tmp_path, CREDENTIAL, mode=0o640)  # systemd may grant access through a group ACL
    database = panda_database({URL_SETTING: "postgres://r@db/panda", SCHEMA_SETTING: "DOMA_PANDA",
                               "CREDENTIALS_DIRECTORY": str(tmp_path)})
    assert database is not None
    assert (database.port, database.password, database.schema) == (5432, "hunter2",
                                                                   "doma_panda")
    nothing = panda_database({URL_SETTING: "postgres://r@db/panda"})
    assert nothing is not None and nothing.password is None


@pytest.mark.parametrize("environ, message", [
    ({URL_SETTING: "postgresql://r:hunter2@db/panda"}, "must not hold the password"),
    ({URL_SETTING: "mysql://r@db/panda"}, "only PostgreSQL is supported"),
    ({URL_SETTING: "postgresql://r@db/"}, "must name the user, host and database"),
    ({URL_SETTING: "postgresql://r@db:port/panda"}, "is not a valid URL"),
    ({URL_SETTING: "postgresql://r@[db/panda:hunter2"}, "is not a valid URL"),
    ({URL_SETTING: "postgresql://r@db/panda?options=-c%20x"}, "unsupported option 'options'"),
    ({URL_SETTING: "postgresql://r@db/panda", SCHEMA_SETTING: "x.y"}, "a plain SQL name"),
    ({URL_SETTING: "postgresql://r@db/panda", SCHEMA_SETTING: '"X"'}, "a plain SQL name"),
])
def test_it_refuses_bad_settings_in_one_line(environ: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)) as refused:
        panda_database(environ)
    assert "hunter2" not in str(refused.value) and "\n" not in str(refused.value)


def test_it_refuses_a_password_file_others_can_read(tmp_path: Path) -> None:
    path = secret(tmp_path, mode=0o644)
    with pytest.raises(ConfigError, match="chmod 600"):
        panda_database({URL_SETTING: URL, PASSWORD_SETTING: str(path)})
    with pytest.raises(ConfigError, match="no such file"):
        panda_database({URL_SETTING: URL, PASSWORD_SETTING: str(tmp_path / "none")})


def test_the_docs_name_every_setting_and_option() -> None:
    text = DOCS.read_text(encoding="utf-8")
    section = text.split("## Remote harvester report (the command and its timer)\n", 1)[1]
    section = section.split("\n## ", 1)[0]
    for name in (URL_SETTING, PASSWORD_SETTING, SCHEMA_SETTING, CREDENTIAL, "sslmode",
                 "sslrootcert", "Oracle", "clusterwatch-remote-harvester.timer"):
        assert name in section, name
    parser = Command().create_parser("clusterwatch monitor", "remote_harvester_report")
    options = {option for action in parser._actions for option in action.option_strings
               if option.startswith("--") and action.dest in (
                   "key", "harvester_id", "print_only", "queue_config", "iri_url",
                   "iri_resource", "iri_path", "iri_token_file")}
    assert len(options) == 8
    for option in options:
        assert option in section, option
