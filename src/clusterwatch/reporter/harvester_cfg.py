"""The harvester's database settings, read from `panda_harvester.cfg` the way it reads them.

The harvester (`harvesterconfig/harvester_config.py` over panda-common's `LiveConfigParser`)
uses a `ConfigParser` with its default interpolation, so `%%` in a value stands for `%`, keeps
option names case-sensitive, overlays `$PANDA_HOME/etc/configmap/panda_harvester_configmap.json`
and then replaces a whole value that starts with `$` by the environment variable it names
(`$VAR`, `${VAR}`; `$HOSTNAME` is the short host name). Only `engine == "mariadb"` selects
MariaDB; everything else is sqlite. Without `host` / `port` it connects to 127.0.0.1:3306.

Secrets: no message raised here quotes a configuration value or line, since the password is
one of them.
"""



import configparser
import json
import os
import re
import socket
from typing import Any, Dict, Mapping, Optional

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 3306
CONFIGMAP = os.path.join("etc", "configmap", "panda_harvester_configmap.json")
_ENV_REFERENCE = re.compile(r"\$\{*([^\}]+)\}*")  # the harvester's own pattern


class HarvesterConfigError(Exception):
    """The `[db]` settings cannot be read; the message never holds a configuration value."""


class DbSettings(Dict[str, Any]):
    """The settings as a plain dict whose repr hides the password (tracebacks, logs)."""

    def __repr__(self) -> str:
        shown = {k: ("***" if k == "password" else v) for k, v in self.items()}
        return f"DbSettings({shown!r})"

    __str__ = __repr__


def read_db_settings(
    cfg_path: str, environ: Mapping[str, str], short_hostname: Optional[str] = None
) -> DbSettings:
    """`engine` ("mariadb" or "sqlite"), then host, port (int), user, password, schema and
    use_mysqldb for MariaDB, or database_filename for sqlite."""
    raw = _db_section(cfg_path)
    raw.update(_configmap_db(environ))
    values = {}  # type: Dict[str, Any]
    for key, value in raw.items():
        if isinstance(value, str) and value.startswith("$"):
            value = _expand(key, value, environ, short_hostname)
        values[key] = _convert(value)
    return _settings(values)


def _db_section(cfg_path: str) -> Dict[str, Any]:
    try:
        with open(cfg_path, "rb") as handle:
            text = handle.read().decode("utf-8")
    except OSError as error:
        raise HarvesterConfigError(
            f"cannot read {cfg_path}: {error.strerror or type(error).__name__}"
        ) from None
    except UnicodeDecodeError:
        raise HarvesterConfigError(f"{cfg_path} is not UTF-8 text") from None
    parser = configparser.ConfigParser()
    parser.optionxform = str  # type: ignore[assignment, method-assign]  # case-sensitive
    try:
        parser.read_string(text, source=cfg_path)
    except configparser.Error as error:
        raise HarvesterConfigError(f"{cfg_path}: {_describe(error)}") from None
    if not parser.has_section("db"):
        raise HarvesterConfigError(f"{cfg_path} has no [db] section")
    section = {}  # type: Dict[str, Any]
    for key in parser.options("db"):
        try:
            section[key] = parser.get("db", key)
        except configparser.Error as error:
            raise HarvesterConfigError(
                f"{cfg_path}: [db] {key}: {_describe(error)}"
            ) from None
    return section


def _describe(error: "configparser.Error") -> str:
    """The kind of error and where, without the offending text (it may be the password)."""
    if isinstance(error, configparser.InterpolationError):
        return "bad % interpolation (write a literal % as %%)"
    if isinstance(error, configparser.MissingSectionHeaderError):  # a ParsingError too
        return f"no section header before line {error.lineno}"
    if isinstance(error, configparser.ParsingError):
        lines = ", ".join(str(number) for number, _ in error.errors)
        return f"cannot parse line(s) {lines}"
    if isinstance(error, configparser.DuplicateOptionError):
        return f"option {error.option!r} repeated in [{error.section}] (line {error.lineno})"
    if isinstance(error, configparser.DuplicateSectionError):
        return f"section [{error.section}] repeated (line {error.lineno})"
    return type(error).__name__


def _configmap_db(environ: Mapping[str, str]) -> Dict[str, Any]:
    home = environ.get("PANDA_HOME")
    if not home:
        return {}
    path = os.path.join(home, CONFIGMAP)
    if not os.path.exists(path):
        return {}
    try:
        with open(path, "rb") as handle:
            data = json.loads(handle.read().decode("utf-8"))
    except (OSError, ValueError):
        raise HarvesterConfigError(f"cannot read the configmap {path}") from None
    section = data.get("db") if isinstance(data, dict) else None
    return dict(section) if isinstance(section, dict) else {}


def _expand(
    key: str, value: str, environ: Mapping[str, str], short_hostname: Optional[str]
) -> str:
    match = _ENV_REFERENCE.search(value)
    if match is None:
        return value
    name = match.group(1)
    if name.upper() == "HOSTNAME":
        return short_hostname or socket.gethostname().split(".")[0]
    if name not in environ:
        raise HarvesterConfigError(
            f"[db] {key} names the environment variable {name}, which is not set"
        )
    return environ[name]


def _convert(value: Any) -> Any:
    """The harvester's string conversion: True/False/None and digit strings."""
    if not isinstance(value, str):
        return value
    if value in ("True", "False"):
        return value == "True"
    if value == "None":
        return None
    if re.match(r"^\d+$", value):
        return int(value)
    return value


def _settings(values: Dict[str, Any]) -> DbSettings:
    engine = values.get("engine")
    if engine is None:
        raise HarvesterConfigError("[db] has no engine")
    if engine != "mariadb":
        if engine != "sqlite":
            raise HarvesterConfigError(
                f"[db] engine {engine!r} is neither mariadb nor sqlite "
                "(the harvester would use sqlite)"
            )
        filename = values.get("database_filename")
        if not isinstance(filename, str) or not filename:
            raise HarvesterConfigError("[db] engine sqlite without database_filename")
        return DbSettings(engine="sqlite", database_filename=filename)
    for key in ("user", "password", "schema"):
        if not isinstance(values.get(key), (str, int)) or values[key] == "":
            raise HarvesterConfigError(f"[db] {key} is missing or not a single value")
    port = values.get("port", DEFAULT_PORT)
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        raise HarvesterConfigError("[db] port is not a port number")
    host = values.get("host", DEFAULT_HOST)
    if not isinstance(host, str) or not host:
        raise HarvesterConfigError("[db] host is not a host name")
    return DbSettings(
        engine="mariadb",
        host=host,
        port=port,
        user=str(values["user"]),
        password=str(values["password"]),
        schema=str(values["schema"]),
        use_mysqldb=values.get("useMySQLdb") is True,
    )
