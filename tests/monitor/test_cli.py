"""`clusterwatch monitor ...` as a person runs it: a real subprocess, settings from the
environment, exit statuses and messages without tracebacks or secrets."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from clusterwatch.loopback.services import free_port


def run(tmp_path: Path, *arguments: str, **environ: str) -> subprocess.CompletedProcess[str]:
    env = {name: value for name, value in os.environ.items()
           if not name.startswith("CLUSTERWATCH_") and name != "DJANGO_SETTINGS_MODULE"}
    env["CLUSTERWATCH_DATA_DIR"] = str(tmp_path / "data")
    env.update(environ)
    return subprocess.run([sys.executable, "-m", "clusterwatch", "monitor", *arguments],
                          env=env, capture_output=True, text=True, timeout=120, check=False)


def test_it_lists_django_and_the_monitors_own_commands(tmp_path: Path) -> None:
    done = run(tmp_path, "help")
    assert done.returncode == 0, done.stderr
    for command in ("migrate", "createsuperuser", "create_host_token", "revoke_host_token",
                    "prune_reports"):
        assert command in done.stdout


def test_its_help_explains_the_settings_and_the_demo(tmp_path: Path) -> None:
    done = run(tmp_path, "--help")
    assert done.returncode == 0
    for word in ("CLUSTERWATCH_DATABASE_URL", "CLUSTERWATCH_DATA_DIR", "docs/monitor.md",
                 "clusterwatch monitor demo"):
        assert word in done.stdout


@pytest.mark.parametrize("environ, message", [
    ({"CLUSTERWATCH_RETENTION_DAYS": "a month"},
     "CLUSTERWATCH_RETENTION_DAYS must be a whole number, not 'a month'"),
    ({"CLUSTERWATCH_MAX_RECORD_BYTES": "0"}, "CLUSTERWATCH_MAX_RECORD_BYTES must be positive"),
    ({"CLUSTERWATCH_DEBUG": "maybe"}, "CLUSTERWATCH_DEBUG must be one of"),
    ({"CLUSTERWATCH_DATABASE_URL": "mysql://cw:hunter2@db/monitor"},
     "CLUSTERWATCH_DATABASE_URL: unsupported scheme 'mysql'"),
    ({"CLUSTERWATCH_DATABASE_URL": "postgresql://cw:hunter2@[db/monitor"},
     "CLUSTERWATCH_DATABASE_URL is not a valid URL"),
])
def test_a_configuration_error_exits_78_with_one_line_and_no_traceback(
    tmp_path: Path, environ: dict[str, str], message: str
) -> None:
    done = run(tmp_path, "migrate", **environ)
    assert done.returncode == 78
    assert done.stderr.startswith(f"clusterwatch: configuration error: {message}")
    assert "Traceback" not in done.stderr and "hunter2" not in done.stderr + done.stdout


def test_a_readable_password_file_is_a_configuration_error(tmp_path: Path) -> None:
    secret = tmp_path / "db-password"
    secret.write_text("hunter2\n")
    secret.chmod(0o644)
    done = run(tmp_path, "migrate",
               CLUSTERWATCH_DATABASE_URL="postgresql://cw@127.0.0.1/monitor",
               CLUSTERWATCH_DATABASE_PASSWORD_FILE=str(secret))
    assert done.returncode == 78
    assert "chmod 600" in done.stderr and "hunter2" not in done.stderr


def test_an_unreachable_database_exits_1_with_one_line(tmp_path: Path) -> None:
    secret = tmp_path / "db-password"
    secret.write_text("hunter2\n")
    secret.chmod(0o600)
    done = run(tmp_path, "migrate",
               CLUSTERWATCH_DATABASE_URL=f"postgresql://cw@127.0.0.1:{free_port()}/monitor",
               CLUSTERWATCH_DATABASE_PASSWORD_FILE=str(secret))
    assert done.returncode == 1
    assert done.stderr.startswith("clusterwatch: database error: ")
    assert "127.0.0.1" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert "Traceback" not in done.stderr and "hunter2" not in done.stderr


def test_an_unknown_command_is_refused(tmp_path: Path) -> None:
    done = run(tmp_path, "no_such_command")
    assert done.returncode != 0
    assert "Unknown command: 'no_such_command'" in done.stderr


def test_it_says_how_to_install_django_when_it_is_missing(tmp_path: Path) -> None:
    code = ("import sys\n"
            "sys.modules['django'] = None  # as if not installed: import fails\n"
            "from clusterwatch.cli import main\n"
            "sys.exit(main(['monitor', 'help']))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=False,
                          env={**os.environ, "CLUSTERWATCH_DATA_DIR": str(tmp_path)})
    assert done.returncode == 1
    assert done.stderr == ("clusterwatch: the monitor needs Django: "
                           "pip install 'clusterwatch[monitor]'\n")


def test_the_demo_verb_is_not_a_django_command(tmp_path: Path) -> None:
    done = run(tmp_path, "demo", "--help")
    assert done.returncode == 0
    assert "clusterwatch watch demo" in done.stdout and "--check" in done.stdout
    assert not (tmp_path / "data").exists()  # no settings were read, nothing was made
    bad = run(tmp_path, "demo", "--port", "eighty")
    assert bad.returncode == 2 and "not a port number: 'eighty'" in bad.stderr
