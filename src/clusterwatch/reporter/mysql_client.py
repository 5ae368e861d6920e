"""The harvester's MariaDB through the `mysql` client: queries in, typed rows out, per part.

The password travels in a mode-600 option file in a private temporary directory
(`--defaults-file=`, so no `~/.my.cnf` interferes, as none does for the harvester's own
Python connector), never in argv or the environment. The session is set READ ONLY and only
SELECTs follow (not `--safe-updates`: it also caps SELECTs at 1000 rows). `--force` runs
every query even when one fails; the client names the failing line, which maps the error to
its part.

Output is made unambiguous without JSON functions (absent before MariaDB 10.2): text columns
are selected as HEX(), so a value can hold tabs, newlines or the word NULL; integers and
timestamps print plainly.

Python 3.6 compatible, standard library only (see the package docstring).
"""

import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

# (part, columns with kinds, the rest of the SELECT); kinds: int, time, text, json
Query = Tuple[str, Sequence[Tuple[str, str]], str]

_MARKER = "cw-part:"  # never a data row: data are hex, digits, timestamps or NULL
_ERROR_LINE = re.compile(r"^ERROR \d+ \(\w+\) at line (\d+): (.*)$")
_CLIENT_ENV_DROPPED = ("MYSQL_PWD", "MYSQL_HOST", "MYSQL_TCP_PORT")


def sql_time(seconds: float) -> str:
    """A timestamp literal in naive UTC, as the harvester writes its times."""
    return time.strftime("'%Y-%m-%d %H:%M:%S'", time.gmtime(seconds))


def sql_text(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def sql_in(values: Sequence[str]) -> str:
    return "(" + ", ".join(sql_text(value) for value in values) + ")"


def script(queries: Sequence[Query]) -> str:
    """One statement a line, so the client's `at line N` names the part."""
    lines = ["SET SESSION TRANSACTION READ ONLY;"]
    for name, columns, rest in queries:
        selected = ", ".join(
            f"HEX(CONVERT({column} USING utf8mb4))" if kind in ("text", "json") else column
            for column, kind in columns
        )
        lines.append(f"SELECT '{_MARKER}{name}';")
        lines.append(f"SELECT {selected} {rest};")
    return "\n".join(lines) + "\n"


def option_file(settings: Mapping[str, Any]) -> str:
    def quoted(value: Any) -> str:
        text = str(value)
        for raw, escaped in (("\\", "\\\\"), ('"', '\\"'), ("'", "\\'"), ("\n", "\\n"),
                             ("\t", "\\t"), ("\r", "\\r")):
            text = text.replace(raw, escaped)
        return f'"{text}"'

    lines = ["[client]", f"user={quoted(settings['user'])}",
             f"password={quoted(settings['password'])}", f"host={quoted(settings['host'])}",
             f"port={int(settings['port'])}"]
    # The harvester's default connector (mysql.connector) speaks TCP even to "localhost";
    # MySQLdb, like the mysql client, would take the Unix socket.
    if settings["host"] == "localhost" and not settings.get("use_mysqldb"):
        lines.append("protocol=TCP")
    return "\n".join(lines) + "\n"


def run_queries(
    settings: Mapping[str, Any], queries: Sequence[Query], mysql: str, timeout: float
) -> Tuple[Dict[str, List[List[str]]], Dict[str, str]]:
    """Rows by part, and errors by part (every part when the client as a whole failed)."""
    password = str(settings["password"])
    private = tempfile.mkdtemp(prefix="cw-harvester-db-")
    try:
        options = os.path.join(private, "client.cnf")
        fd = os.open(options, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(option_file(settings))
        command = [mysql, f"--defaults-file={options}", "--batch", "--skip-column-names",
                   "--force", f"--connect-timeout={max(1, int(timeout))}",
                   f"--database={settings['schema']}"]
        env = {k: v for k, v in os.environ.items() if k not in _CLIENT_ENV_DROPPED}
        # Oracle's client reads ~/.mylogin.cnf even with --defaults-file; point it at nothing.
        env["MYSQL_TEST_LOGIN_FILE"] = os.path.join(private, "absent.mylogin.cnf")
        outcome = _communicate(command, script(queries), env, timeout)
    finally:
        shutil.rmtree(private, ignore_errors=True)
    if isinstance(outcome, str):
        return {}, {name: _scrub(outcome, password) for name, _, _ in queries}
    returncode, stdout, stderr = outcome
    errors = {}  # type: Dict[str, str]
    general = []  # type: List[str]
    for line in stderr.splitlines():
        match = _ERROR_LINE.match(line)
        if match is None:
            if line.startswith("ERROR"):
                general.append(line)
            continue
        index = (int(match.group(1)) - 2) // 2  # line 1 sets READ ONLY; 2 lines a part
        if 0 <= index < len(queries):
            errors.setdefault(queries[index][0], _scrub(line, password))
    if general or (returncode != 0 and not errors):
        reason = _scrub(" ".join(general) or _tail(stderr) or f"mysql exit {returncode}",
                        password)
        return {}, {name: reason for name, _, _ in queries}
    return _split(stdout), errors


def _communicate(
    command: List[str], script: str, env: Dict[str, str], timeout: float
) -> Any:
    """(returncode, stdout, stderr), or a string saying why the client gave no answer."""
    try:
        process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=env, universal_newlines=True, encoding="utf-8", errors="replace",
        )
    except OSError as error:
        return f"cannot run {command[0]}: {error.strerror or type(error).__name__}"
    try:
        stdout, stderr = process.communicate(script, timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        return f"{command[0]} gave no answer within {timeout:g} s"
    return process.returncode, stdout, stderr


def _scrub(text: str, password: str) -> str:
    return text.replace(password, "***") if password else text


def _tail(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith("---")]
    return lines[-1][:500] if lines else ""


def _split(stdout: str) -> Dict[str, List[List[str]]]:
    rows = {}  # type: Dict[str, List[List[str]]]
    current: Optional[List[List[str]]] = None
    for line in stdout.splitlines():
        if line.startswith(_MARKER):
            current = rows.setdefault(line[len(_MARKER):], [])
        elif current is not None and line:
            current.append(line.split("\t"))
    return rows


def typed_row(columns: Sequence[Tuple[str, str]], row: List[str]) -> Dict[str, Any]:
    if len(row) != len(columns):
        raise ValueError(f"{len(row)} fields where {len(columns)} were expected")
    # A computed integer column `EXPRESSION AS name` is delivered under its name.
    return {column.rsplit(" AS ", 1)[-1]: _typed(kind, raw)
            for (column, kind), raw in zip(columns, row)}


def _typed(kind: str, raw: str) -> Any:
    if raw == "NULL":
        return None
    if kind == "int":
        return int(raw)
    if kind == "time":
        if raw.startswith("0000-00-00"):
            return None
        seconds = time.strptime(raw[:19], "%Y-%m-%d %H:%M:%S")  # drops any fraction
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", seconds)
    text = bytes.fromhex(raw).decode("utf-8", "replace")
    if kind == "json":
        try:
            return json.loads(text)
        except ValueError:
            return {"error": "not valid JSON"}
    return text


def select_part(settings: Mapping[str, Any], part: str, columns: Sequence[Tuple[str, str]],
                rest: str, mysql: str = "mysql", timeout: float = 30) -> Any:
    """One SELECT in its own client run, with the same option file, READ ONLY session and
    typing as `collect`: its typed rows, or `{"error": ...}`. For a section that is not a
    part of `harvester_db` (the admission section's workers of the hour)."""
    rows, errors = run_queries(settings, [(part, columns, rest)], mysql, timeout)
    if part in errors:
        return {"error": errors[part]}
    try:
        return [typed_row(columns, row) for row in rows.get(part, [])]
    except ValueError as error:
        return {"error": f"unexpected client output: {error}"}
