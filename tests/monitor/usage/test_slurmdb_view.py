"""`clusterwatch monitor create_slurmdb_view` against the real cluster's MariaDB and the schema
slurmdbd made: the view, the read-only user that can read it and nothing else, the password
file, a second run, and every refusal with its exit status."""

from __future__ import annotations

import stat
from pathlib import Path

import pymysql
import pytest

from clusterwatch.loopback.services import free_port
from clusterwatch.monitor.usage.accounting.slurmdb_admin import native_password_hash
from clusterwatch.monitor.usage.accounting.slurmdb_sql_view import COLUMN_NAMES, create_view_sql
from tests.monitor.usage.real_slurm import USER, RealJobs, real_jobs
from tests.monitor.usage.slurmdb_support import (
    ADMIN,
    ADMIN_PASSWORD,
    Run,
    create_admin,
    create_view,
    login,
    rows,
    secret_file,
    silent_port,
)

pytestmark = pytest.mark.integration

SECRET_COLUMNS = ("batch_script", "env_vars", "submit_line", "work_dir", "admin_comment",
                  "system_comment", "script_hash_inx", "env_hash_inx")


@pytest.fixture(scope="module")
def jobs(pytestconfig: pytest.Config) -> RealJobs:
    found = real_jobs(pytestconfig)
    create_admin(found)
    return found


def password_of(path: Path) -> str:
    return path.read_text().strip()


def one_line_without(run: Run, *secrets: str) -> str:
    """stderr when it is one line, no traceback, and no secret anywhere in the output."""
    assert "Traceback" not in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1, run.stderr
    for secret in secrets:
        assert secret not in run.stderr + run.stdout
    return run.stderr.strip()


def denied(connection: object, query: str) -> int:
    with pytest.raises(pymysql.MySQLError) as refused:
        rows(connection, query)
    return int(refused.value.args[0])


def test_its_sql_names_only_the_tables_asked_for_and_refuses_odd_names() -> None:
    sql = create_view_sql("slurm_acct_db", "cwtest", "clusterwatch_usage")
    assert sql.startswith("CREATE OR REPLACE ALGORITHM=MERGE SQL SECURITY DEFINER VIEW "
                          "`clusterwatch_usage`.`jobs` AS")
    assert "FROM `slurm_acct_db`.`cwtest_job_table` AS j" in sql
    assert not set(SECRET_COLUMNS) & {word.strip("`.,") for word in sql.split()}
    for database, cluster, schema in (("a`b", "c", "d"), ("a", "c; DROP", "d"),
                                      ("a", "c", ""), ("a", "c" * 65, "d")):
        with pytest.raises(ValueError, match="must be 1-64 letters"):
            create_view_sql(database, cluster, schema)


def test_it_creates_a_view_the_new_user_can_read_and_nothing_else(
    jobs: RealJobs, tmp_path: Path
) -> None:
    target = tmp_path / "slurmdb-password"
    run = create_view(jobs, tmp_path, "--view-user", "cw_first", "--password-file",
                      str(target))
    assert run.returncode == 0, run.stderr
    password = password_of(target)
    assert len(password) >= 40 and stat.S_IMODE(target.stat().st_mode) == 0o600
    assert password not in run.stdout + run.stderr and ADMIN_PASSWORD not in run.stdout
    assert "view clusterwatch_usage.jobs: created or replaced" in run.stdout
    assert "user 'cw_first'@'localhost': created" in run.stdout
    assert "grant: SELECT on clusterwatch_usage.jobs only" in run.stdout

    with login(jobs, "cw_first", password) as reader:
        with reader.cursor() as cursor:
            cursor.execute("SELECT * FROM clusterwatch_usage.jobs WHERE id_job = %s",
                           (jobs.burner,))
            columns = tuple(column[0] for column in cursor.description)
            (row,) = cursor.fetchall()
        assert columns == COLUMN_NAMES and not set(SECRET_COLUMNS) & set(columns)
        found = dict(zip(columns, row))
        assert (found["user"], found["account"], found["job_name"]) == (USER, "cwlab",
                                                                        "burner")
        assert rows(reader, "SHOW DATABASES") == [("clusterwatch_usage",),
                                                  ("information_schema",)]
        for table in ("cwtest_job_table", "cwtest_assoc_table", "tres_table",
                      "cwtest_job_script_table", "cwtest_job_env_table", "user_table"):
            query = f"SELECT * FROM slurm_acct_db.{table} LIMIT 1"  # noqa: S608 (fixed names)
            assert denied(reader, query) == 1142
        assert denied(reader, "SELECT * FROM mysql.user LIMIT 1") == 1142
        assert denied(reader, "DELETE FROM clusterwatch_usage.jobs") == 1142
        assert denied(reader, "SHOW CREATE VIEW clusterwatch_usage.jobs") == 1142
        assert denied(reader, "CREATE TABLE clusterwatch_usage.mine (x int)") == 1142
        grants = [grant for (grant,) in rows(reader, "SHOW GRANTS")]
        assert len(grants) == 2 and "GRANT USAGE ON *.*" in grants[0]
        assert "GRANT SELECT ON `clusterwatch_usage`.`jobs`" in grants[1]


def test_the_password_reaches_no_query_log_only_its_hash(
    jobs: RealJobs, tmp_path: Path
) -> None:
    """SHOW PROCESSLIST and the general and slow query logs show each statement as sent:
    the new user's password must never be in one, on creating the user or on resetting it."""
    db = jobs.cluster.accounting.database
    db.sql("TRUNCATE mysql.general_log; TRUNCATE mysql.slow_log; SET GLOBAL log_output = "
           "'TABLE'; SET GLOBAL long_query_time = 0; SET GLOBAL slow_query_log = 1; "
           "SET GLOBAL general_log = 1;")
    target = tmp_path / "pw"
    passwords = []
    try:
        for _ in range(2):  # CREATE USER, then ALTER USER
            run = create_view(jobs, tmp_path, "--view-user", "cw_logged", "--password-file",
                              str(target))
            assert run.returncode == 0, run.stderr
            passwords.append(password_of(target))
    finally:
        db.sql("SET GLOBAL general_log = 0; SET GLOBAL slow_query_log = 0; "
               "SET GLOBAL long_query_time = 10;")
    logged = db.sql("SELECT CONVERT(argument USING utf8mb4) FROM mysql.general_log; "
                    "SELECT CONVERT(sql_text USING utf8mb4) FROM mysql.slow_log;")
    db.sql("TRUNCATE mysql.general_log; TRUNCATE mysql.slow_log;")
    user_statements = [line for line in logged.splitlines() if "cw_logged" in line
                       and "IDENTIFIED" in line]
    assert len(user_statements) >= 4, len(user_statements)  # both runs, in both logs
    # Which run's password leaked, never the password itself (test output is a log too).
    leaked = [run for run, password in enumerate(passwords) if password in logged]
    assert not leaked, f"the password of run {leaked} is in a query log"
    assert native_password_hash(passwords[0]) in logged
    assert native_password_hash(passwords[1]) in logged
    stored = db.sql("SELECT authentication_string FROM mysql.user WHERE User = 'cw_logged' "
                    "AND Host = 'localhost';").split()
    assert stored[-1] == native_password_hash(passwords[1])
    with login(jobs, "cw_logged", passwords[1]) as reader:
        assert rows(reader, "SELECT COUNT(*) FROM clusterwatch_usage.jobs")[0][0] >= 9


def test_the_hash_is_mysql_native_passwords() -> None:
    # The documented value for the password "password" (MySQL's PASSWORD() function).
    assert native_password_hash("password") == "*2470C0C06DEE42FD1618BB99005ADCA2EC9D1E19"


def test_a_second_run_replaces_the_view_and_resets_the_password(
    jobs: RealJobs, tmp_path: Path
) -> None:
    target = tmp_path / "slurmdb-password"
    options = ("--view-user", "cw_again", "--password-file", str(target))
    assert create_view(jobs, tmp_path, *options).returncode == 0
    first = password_of(target)
    # A grant added by hand in between is taken away by the next run.
    jobs.cluster.accounting.database.sql(
        "GRANT SELECT ON slurm_acct_db.* TO 'cw_again'@'localhost';")
    again = create_view(jobs, tmp_path, *options)
    assert again.returncode == 0, again.stderr
    assert "existed; its password was reset and its grants replaced" in again.stdout
    second = password_of(target)
    assert second != first and stat.S_IMODE(target.stat().st_mode) == 0o600
    with pytest.raises(pymysql.MySQLError) as refused:
        login(jobs, "cw_again", first)
    assert refused.value.args[0] == 1045
    with login(jobs, "cw_again", second) as reader:
        assert denied(reader, "SELECT 1 FROM slurm_acct_db.cwtest_job_table") == 1142
        assert rows(reader, "SELECT COUNT(*) FROM clusterwatch_usage.jobs")[0][0] >= 9


def test_it_creates_the_view_in_the_schema_asked_for(jobs: RealJobs, tmp_path: Path) -> None:
    target = tmp_path / "pw"
    run = create_view(jobs, tmp_path, "--schema", "usage_view", "--view-user", "cw_schema",
                      "--password-file", str(target))
    assert run.returncode == 0, run.stderr
    assert "CLUSTERWATCH_SLURMDB_URL=mysql://cw_schema@127.0.0.1:" in run.stdout
    with login(jobs, "cw_schema", password_of(target)) as reader:
        assert rows(reader, "SELECT job_name FROM usage_view.jobs WHERE id_job = %s",
                    jobs.failed) == [("failed",)]


def test_it_logs_in_with_a_defaults_file(jobs: RealJobs, tmp_path: Path) -> None:
    defaults = secret_file(tmp_path / "admin.cnf",
                           f"[client]\nuser={ADMIN}\npassword={ADMIN_PASSWORD}\n")
    run = create_view(jobs, tmp_path, "--admin-defaults-file", str(defaults), "--view-user",
                      "cw_defaults", "--password-file", str(tmp_path / "pw"), admin=False)
    assert run.returncode == 0, run.stderr


def test_root_logs_in_through_the_socket_without_a_password(
    jobs: RealJobs, tmp_path: Path
) -> None:
    socket_path = str(jobs.cluster.accounting.database.socket)
    run = create_view(jobs, tmp_path, "--socket", socket_path, "--admin-user", "root",
                      "--view-user", "cw_socket", "--password-file", str(tmp_path / "pw"),
                      admin=False)
    assert run.returncode == 0, run.stderr


def test_it_refuses_to_write_into_a_password_file_others_can_read(
    jobs: RealJobs, tmp_path: Path
) -> None:
    target = secret_file(tmp_path / "pw", "old\n", mode=0o644)
    run = create_view(jobs, tmp_path, "--view-user", "cw_never", "--password-file",
                      str(target))
    assert run.returncode == 78
    assert "has mode 644, readable by others; refusing" in one_line_without(run)
    assert target.read_text() == "old\n"
    # Nothing was done in the database either.
    assert jobs.cluster.accounting.database.sql(
        "SELECT COUNT(*) FROM mysql.user WHERE User = 'cw_never';").strip() == "0"


@pytest.mark.parametrize("options, message", [
    (("--schema", "x;drop"), "--schema must be 1-64 letters"),
    (("--cluster", "a b"), "--cluster must be 1-64 letters"),
    (("--database", "slurm`acct"), "--database must be 1-64 letters"),
    (("--view-user", "x'y"), "--view-user must be 1-80 letters"),
    (("--view-user-host", "h'@x"), "--view-user-host must be a host name"),
    (("--port", "0"), "--port must be 1-65535"),
    (("--timeout", "-1"), "--timeout must be 0-3600 seconds"),
    (("--admin-defaults-file", "/nonexistent"), "give --admin-password-file or"),
])
def test_bad_option_values_exit_78_with_one_line(
    jobs: RealJobs, tmp_path: Path, options: tuple[str, ...], message: str
) -> None:
    run = create_view(jobs, tmp_path, *options, "--password-file", str(tmp_path / "pw"))
    assert run.returncode == 78
    assert message in one_line_without(run, ADMIN_PASSWORD)
    assert not (tmp_path / "pw").exists()


def test_unsafe_or_missing_admin_files_exit_78(jobs: RealJobs, tmp_path: Path) -> None:
    readable = secret_file(tmp_path / "admin", ADMIN_PASSWORD, mode=0o640)
    for option, path, message in (
        ("--admin-password-file", readable, "is readable by others (mode 640); chmod 600"),
        ("--admin-defaults-file", readable, "is readable by others (mode 640); chmod 600"),
        ("--admin-defaults-file", tmp_path / "none.cnf", "no such file (give the path"),
        ("--admin-password-file", tmp_path / "none", "no such file (give the path"),
        ("--admin-defaults-file", tmp_path, "cannot read"),
        ("--admin-password-file", tmp_path, "is not a regular file but a directory"),
    ):
        run = create_view(jobs, tmp_path, "--admin-user", ADMIN, option, str(path),
                          "--password-file", str(tmp_path / "pw"), admin=False)
        assert run.returncode == 78, (option, run.stderr)
        assert message in one_line_without(run, ADMIN_PASSWORD)


@pytest.mark.parametrize("where", [
    ("--admin-password", ADMIN_PASSWORD),  # no such option, nor an abbreviation of one
    ("--admin-password-file", ADMIN_PASSWORD),  # the password where its file belongs
    ("--admin-password-file", ADMIN_PASSWORD, ADMIN_PASSWORD),
])
def test_a_password_typed_on_the_command_line_is_never_repeated(
    jobs: RealJobs, tmp_path: Path, where: tuple[str, ...]
) -> None:
    run = create_view(jobs, tmp_path, *where, "--password-file", str(tmp_path / "pw"),
                      admin=False)
    assert run.returncode in (2, 78)
    assert ADMIN_PASSWORD not in run.stdout + run.stderr and "Traceback" not in run.stderr


def test_its_help_lists_every_option_and_a_missing_one_is_a_usage_error(
    jobs: RealJobs, tmp_path: Path
) -> None:
    helped = create_view(jobs, tmp_path, "--help")
    assert helped.returncode == 0, helped.stderr
    for option in ("--cluster", "--password-file", "--socket", "--admin-defaults-file",
                   "--view-user-host", "pattern", "--timeout"):
        assert option in helped.stdout
    missing = create_view(jobs, tmp_path)
    assert missing.returncode == 2
    assert "the following arguments are required: --password-file" in missing.stderr


def test_a_wrong_admin_password_exits_1_with_the_servers_message(
    jobs: RealJobs, tmp_path: Path
) -> None:
    wrong = secret_file(tmp_path / "wrong", "not-the-password\n")
    run = create_view(jobs, tmp_path, "--admin-user", ADMIN, "--admin-password-file",
                      str(wrong), "--password-file", str(tmp_path / "pw"), admin=False)
    assert run.returncode == 1
    line = one_line_without(run, "not-the-password")
    assert line.startswith("clusterwatch: database error: Access denied for user 'cwadmin'")
    assert not (tmp_path / "pw").exists()


def test_an_unknown_cluster_exits_1_naming_the_missing_tables(
    jobs: RealJobs, tmp_path: Path
) -> None:
    run = create_view(jobs, tmp_path, "--cluster", "nosuch", "--password-file",
                      str(tmp_path / "pw"))
    assert run.returncode == 1
    assert "slurm_acct_db has no table nosuch_job_table, nosuch_assoc_table" in (
        one_line_without(run, ADMIN_PASSWORD))


def test_a_server_that_is_not_there_exits_1(jobs: RealJobs, tmp_path: Path) -> None:
    run = create_view(jobs, tmp_path, "--port", str(free_port()), "--password-file",
                      str(tmp_path / "pw"))
    assert run.returncode == 1
    assert "database error: Can't connect to MySQL server" in one_line_without(
        run, ADMIN_PASSWORD)


def test_a_server_that_never_answers_times_out(jobs: RealJobs, tmp_path: Path) -> None:
    with silent_port() as port:
        run = create_view(jobs, tmp_path, "--port", str(port), "--timeout", "1",
                          "--password-file", str(tmp_path / "pw"), timeout=60)
    assert run.returncode == 1
    assert "database error:" in one_line_without(run, ADMIN_PASSWORD)
    assert "timed out" in run.stderr


def test_a_job_is_found_through_the_view_by_index(jobs: RealJobs, tmp_path: Path) -> None:
    # A merged view: MariaDB reads one job by the job table's index, never a full scan.
    assert create_view(jobs, tmp_path, "--password-file", str(tmp_path / "pw")).returncode == 0
    with login(jobs, ADMIN, ADMIN_PASSWORD, cursorclass=pymysql.cursors.DictCursor) as admin:
        plan = rows(admin, "EXPLAIN SELECT * FROM clusterwatch_usage.jobs WHERE id_job = %s",
                    jobs.burner)
    jobs_table = next(step for step in plan if step["table"] == "j")
    assert jobs_table["key"] in ("id_job", "old_tuple")
    assert all(step["select_type"] == "SIMPLE" for step in plan)
