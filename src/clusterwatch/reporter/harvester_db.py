"""The record's `harvester_db` section, read from the harvester's MariaDB with the `mysql` client.

One client run per collection: the password travels in a mode-600 option file in a private
temporary directory (`--defaults-file=`, so no `~/.my.cnf` interferes, as none does for the
harvester's own Python connector), never in argv or the environment. The session is set READ
ONLY and only SELECTs follow (not `--safe-updates`: it also caps SELECTs at 1000 rows).
`--force` runs every query even when one fails; the client names the failing line, which
maps the error to its part.

Output is made unambiguous without JSON functions (absent before MariaDB 10.2): text columns
are selected as HEX(), so a value can hold tabs, newlines or the word NULL; integers and
timestamps print plainly. Timestamps are read in the server's session time zone, as the
harvester writes them: naive UTC.
"""



import calendar
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import tempfile
import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from clusterwatch.reporter import harvester_regulation as regulation
from clusterwatch.reporter.harvester_cfg import HarvesterConfigError, read_db_settings

PARTS = (
    "launch_limits",
    "workers_now",
    "workers_ended",
    "workers_not_finished_candidates",
    "service_metrics",
    "worker_starts",
    "job_demand_cache",
)
LIVE_STATUSES = ("submitted", "running", "ready", "idle", "pending")
FINAL_STATUSES = ("finished", "failed", "cancelled", "missed")
CANDIDATE_WINDOW_S = 24 * 3600
CANDIDATE_LIMIT = 2000  # newest first; workAttributes can be long
_MARKER = "cw-part:"  # never a data row: data are hex, digits, timestamps or NULL
_ERROR_LINE = re.compile(r"^ERROR \d+ \(\w+\) at line (\d+): (.*)$")
_CLIENT_ENV_DROPPED = ("MYSQL_PWD", "MYSQL_HOST", "MYSQL_TCP_PORT")

# (part, columns with kinds, the rest of the SELECT); kinds: int, time, text, json
_Query = Tuple[str, Sequence[Tuple[str, str]], str]


def collect_with_config(
    cfg_path: str,
    environ: Mapping[str, str],
    now: float,
    since: float,
    mysql: str = "mysql",
    timeout: float = 30,
    fqdn: Optional[str] = None,
) -> Dict[str, Any]:
    """`collect` with the settings read from `cfg_path`; a config error fills every part."""
    try:
        settings = read_db_settings(cfg_path, environ)
    except HarvesterConfigError as error:
        return {part: {"error": str(error)} for part in PARTS}
    return collect(settings, now, since, mysql=mysql, timeout=timeout, fqdn=fqdn)


def collect(
    settings: Mapping[str, Any],
    now: float,
    since: float,
    mysql: str = "mysql",
    timeout: float = 30,
    fqdn: Optional[str] = None,
) -> Dict[str, Any]:
    """Every part of the section; a part that cannot be read is `{"error": ...}`."""
    if settings.get("engine") != "mariadb":
        reason = f"engine {settings.get('engine')}: only MariaDB is read (through mysql)"
        return {part: {"error": reason} for part in PARTS}
    host_fqdn = fqdn if fqdn is not None else socket.getfqdn()
    queries = _queries(now, since, host_fqdn)
    rows, errors = _run(settings, queries, mysql, timeout)
    builders: Dict[str, Callable[[List[Dict[str, Any]]], Any]] = {
        "launch_limits": _launch_limits,
        "workers_now": _workers_now,
        "workers_ended": _workers_ended,
        "workers_not_finished_candidates": _candidates,
        "service_metrics": lambda found: _service_metrics(found, host_fqdn),
        "worker_starts": regulation.worker_starts,
        "job_demand_cache": regulation.job_demand_cache,
    }
    section = {}  # type: Dict[str, Any]
    for name, columns, _ in queries:
        if name in errors:
            section[name] = {"error": errors[name]}
            continue
        try:
            typed = [_typed_row(columns, row) for row in rows.get(name, [])]
            section[name] = builders[name](typed)
        except ValueError as error:
            section[name] = {"error": f"unexpected client output: {error}"}
    return section


def _sql_time(seconds: float) -> str:
    return time.strftime("'%Y-%m-%d %H:%M:%S'", time.gmtime(seconds))


def _sql_text(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _in(values: Sequence[str]) -> str:
    return "(" + ", ".join(_sql_text(value) for value in values) + ")"


def _queries(now: float, since: float, fqdn: str) -> List[_Query]:
    window = f"endTime > {_sql_time(since)} AND endTime <= {_sql_time(now)}"
    started = f"startTime > {_sql_time(since)} AND startTime <= {_sql_time(now)}"
    day = f"endTime > {_sql_time(now - CANDIDATE_WINDOW_S)} AND endTime <= {_sql_time(now)}"
    not_finished = (
        f"(status IN {_in(FINAL_STATUSES[1:])} OR (status = 'finished'"
        " AND nativeExitCode IS NOT NULL AND nativeExitCode <> 0))"
    )
    return [
        ("launch_limits",
         [("queueName", "text"), ("siteName", "text"), ("jobType", "text"),
          ("resourceType", "text"), ("nQueueLimitWorker", "int"), ("maxWorkers", "int"),
          ("nQueueLimitJob", "int"), ("nNewWorkers", "int"), ("jobFetchTime", "time"),
          ("submitTime", "time")],
         "FROM pq_table ORDER BY queueName, jobType, resourceType"),
        ("workers_now",
         [("computingSite", "text"), ("status", "text"), ("COUNT(*)", "int")],
         f"FROM work_table WHERE status IN {_in(LIVE_STATUSES)} GROUP BY computingSite, status"),
        ("workers_ended",
         [("computingSite", "text"), ("status", "text"), ("startTime", "time"),
          ("endTime", "time")],
         f"FROM work_table WHERE {window} AND status IN {_in(FINAL_STATUSES)}"),
        ("workers_not_finished_candidates",
         [("workerID", "int"), ("computingSite", "text"), ("queueName", "text"),
          ("status", "text"), ("batchID", "text"), ("nodeID", "text"),
          ("computingElement", "text"), ("workAttributes", "json"), ("diagMessage", "text"),
          ("nativeExitCode", "int"), ("nativeStatus", "text"), ("submitTime", "time"),
          ("startTime", "time"), ("endTime", "time")],
         f"FROM work_table WHERE {day} AND {not_finished}"
         f" ORDER BY endTime DESC, workerID DESC LIMIT {CANDIDATE_LIMIT}"),
        ("service_metrics",
         [("creationTime", "time"), ("metrics", "json")],
         f"FROM sm_table WHERE hostName = {_sql_text(fqdn)} ORDER BY creationTime DESC LIMIT 1"),
        # Appended after the older parts so their `at line N` stays what it was.
        ("worker_starts",
         [("computingSite", "text"), ("status", "text"), ("COUNT(*)", "int")],
         f"FROM work_table WHERE {started} GROUP BY computingSite, status"),
        ("job_demand_cache",  # never the data blob: only when each key was refreshed
         [("mainKey", "text"), ("subKey", "text"), ("lastUpdate", "time"),
          (f"TIMESTAMPDIFF(SECOND, lastUpdate, {_sql_time(now)}) AS {regulation.AGE}", "int")],
         "FROM cache_table ORDER BY mainKey"),
    ]


def _script(queries: Sequence[_Query]) -> str:
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


def _option_file(settings: Mapping[str, Any]) -> str:
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


def _run(
    settings: Mapping[str, Any], queries: Sequence[_Query], mysql: str, timeout: float
) -> Tuple[Dict[str, List[List[str]]], Dict[str, str]]:
    """Rows by part, and errors by part (every part when the client as a whole failed)."""
    password = str(settings["password"])
    private = tempfile.mkdtemp(prefix="cw-harvester-db-")
    try:
        options = os.path.join(private, "client.cnf")
        fd = os.open(options, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(_option_file(settings))
        command = [mysql, f"--defaults-file={options}", "--batch", "--skip-column-names",
                   "--force", f"--connect-timeout={max(1, int(timeout))}",
                   f"--database={settings['schema']}"]
        env = {k: v for k, v in os.environ.items() if k not in _CLIENT_ENV_DROPPED}
        # Oracle's client reads ~/.mylogin.cnf even with --defaults-file; point it at nothing.
        env["MYSQL_TEST_LOGIN_FILE"] = os.path.join(private, "absent.mylogin.cnf")
        outcome = _communicate(command, _script(queries), env, timeout)
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
    current = None  # type: Optional[List[List[str]]]
    for line in stdout.splitlines():
        if line.startswith(_MARKER):
            current = rows.setdefault(line[len(_MARKER):], [])
        elif current is not None and line:
            current.append(line.split("\t"))
    return rows


def _typed_row(columns: Sequence[Tuple[str, str]], row: List[str]) -> Dict[str, Any]:
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


def _seconds(utc: str) -> int:
    return calendar.timegm(time.strptime(utc, "%Y-%m-%dT%H:%M:%SZ"))


def _key(value: Optional[str]) -> str:
    return "(null)" if value is None else value


def _launch_limits(rows: List[Dict[str, Any]]) -> Dict[str, Any]:
    limits = ("nQueueLimitWorker", "maxWorkers", "nQueueLimitJob", "nNewWorkers")
    queues = {}  # type: Dict[str, Dict[str, Any]]
    for row in rows:
        queue = queues.setdefault(_key(row["queueName"]), dict(
            {"siteName": row["siteName"], "jobFetchTime": None, "submitTime": None},
            **{name: None for name in limits}, by_type={}))
        job_type = row["jobType"] or "ANY"
        resource_type = row["resourceType"] or "ANY"
        queue["by_type"][f"{job_type}/{resource_type}"] = {name: row[name] for name in limits}
        if (job_type, resource_type) == ("ANY", "ANY"):
            queue.update({name: row[name] for name in limits})
        for name in ("jobFetchTime", "submitTime"):  # same on all rows; latest if not
            if row[name] is not None and (queue[name] is None or row[name] > queue[name]):
                queue[name] = row[name]
    return queues


def _workers_now(rows: List[Dict[str, Any]]) -> Dict[str, Any]:
    sites = {}  # type: Dict[str, Dict[str, int]]
    for row in rows:
        sites.setdefault(_key(row["computingSite"]), {})[_key(row["status"])] = row["COUNT(*)"]
    return sites


def _workers_ended(rows: List[Dict[str, Any]]) -> Dict[str, Any]:
    counts = {}  # type: Dict[str, Dict[str, int]]
    runs = {}  # type: Dict[str, List[int]]
    for row in rows:
        site = _key(row["computingSite"])
        by_status = counts.setdefault(site, {})
        by_status[row["status"]] = by_status.get(row["status"], 0) + 1
        runs.setdefault(site, [])
        if row["status"] == "finished" and row["startTime"] and row["endTime"]:
            seconds = _seconds(row["endTime"]) - _seconds(row["startTime"])
            if seconds >= 0:
                runs[site].append(seconds)
    return {
        site: {"by_status": by_status, "finished_median_run_s": _median(runs[site])}
        for site, by_status in counts.items()
    }


def _median(values: List[int]) -> Optional[float]:
    if not values:
        return None
    middle = statistics.median(values)
    return int(middle) if middle == int(middle) else float(middle)


def _candidates(rows: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    found = []
    for row in rows:
        attributes = row.pop("workAttributes")
        batch_log = attributes.get("batchLog") if isinstance(attributes, dict) else None
        row["batchLog"] = batch_log if isinstance(batch_log, str) else None
        found.append(row)
    return found


def _service_metrics(rows: List[Dict[str, Any]], fqdn: str) -> Dict[str, Any]:
    latest = rows[0] if rows else {"creationTime": None, "metrics": None}
    return {"hostName": fqdn, "creationTime": latest["creationTime"],
            "metrics": latest["metrics"]}


def select_part(settings: Mapping[str, Any], part: str, columns: Sequence[Tuple[str, str]],
                rest: str, mysql: str = "mysql", timeout: float = 30) -> Any:
    """One SELECT in its own client run, with the same option file, READ ONLY session and
    typing as `collect`: its typed rows, or `{"error": ...}`. For a section that is not a
    part of `harvester_db` (the admission section's workers of the hour)."""
    rows, errors = _run(settings, [(part, columns, rest)], mysql, timeout)
    if part in errors:
        return {"error": errors[part]}
    try:
        return [_typed_row(columns, row) for row in rows.get(part, [])]
    except ValueError as error:
        return {"error": f"unexpected client output: {error}"}
