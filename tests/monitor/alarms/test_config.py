"""The alarms' TOML file, and what `evaluate_alarms` does with a wrong one."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from clusterwatch.errors import EXIT_CONFIG, ConfigError
from clusterwatch.monitor.alarms.config import load_config
from clusterwatch.notify.channel_config import ChannelConfig

SECRET_URL = "https://hooks.slack.com/services/T0/B0/cwCONFIGsecret5521"
CLUSTERWATCH = Path(sys.executable).with_name("clusterwatch")  # the installed console script


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "alarms.toml"
    path.write_text(text)
    return path


def test_it_means_no_channels_and_default_rules_when_the_file_is_missing(tmp_path: Path) -> None:
    config = load_config(tmp_path / "alarms.toml", 300)
    assert not config.found and config.channels == ()
    assert config.rules.disk_used_percent == 90.0
    assert config.rules.stale_after_s == 900.0
    assert config.rules.grace_s == 900.0


def test_it_reads_rules_and_channels_in_the_watch_syntax(tmp_path: Path) -> None:
    path = write(tmp_path, """
        disk_used_percent = 85.5
        report_interval_s = 600
        stale_after_intervals = 2
        never_reported_grace_s = 3600

        [[channels]]
        type = "slack"
        webhook_file = "slack_webhook"

        [[channels]]
        type = "alertmanager"
        name = "am"
        url = "http://127.0.0.1:9093"
        labels = { team = "panda" }
    """.replace("\n        ", "\n"))
    config = load_config(path, 300)
    assert config.found
    assert config.rules.disk_used_percent == 85.5
    assert config.rules.stale_after_s == 1200.0
    assert config.rules.grace_s == 3600.0
    assert config.channels == (
        ChannelConfig("slack", "slack", secret_file=tmp_path / "slack_webhook"),
        ChannelConfig("alertmanager", "am", url="http://127.0.0.1:9093",
                      labels={"team": "panda"}),
    )


@pytest.mark.parametrize(("text", "message"), [
    ("disk_used_percent = 0", "disk_used_percent must be a number above 0 and at most 100"),
    ("disk_used_percent = 101", "disk_used_percent must be a number above 0 and at most 100"),
    ('disk_used_percent = "90"', "disk_used_percent must be a number"),
    ("stale_after_intervals = -1", "stale_after_intervals must be a positive number"),
    ("report_interval_s = 0", "report_interval_s must be a positive number of seconds"),
    ("threshold = 90", "top level: unknown key(s) threshold"),
    ('[[channels]]\ntype = "pager"', "channels[0].type must be one of"),
    ('[[channels]]\ntype = "slack"', "channels[0] (slack) needs webhook_file"),
    ("disk_used_percent = ", "not valid TOML"),
])
def test_it_refuses_a_wrong_file_naming_it(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, text + "\n")
    with pytest.raises(ConfigError) as caught:
        load_config(path, 300)
    assert str(caught.value).startswith(str(path))
    assert message in str(caught.value)


@pytest.mark.django_db
def test_it_exits_with_the_configuration_status_for_a_bad_file(
    tmp_path: Path, settings: Any
) -> None:
    settings.ALARMS_CONFIG = write(tmp_path, "disk_used_percent = 200\n")
    with pytest.raises(CommandError) as caught:
        call_command("evaluate_alarms", stdout=io.StringIO(), stderr=io.StringIO())
    assert caught.value.returncode == EXIT_CONFIG
    assert "disk_used_percent" in str(caught.value)


@pytest.mark.django_db
def test_it_refuses_a_secret_file_others_can_read_without_quoting_it(
    tmp_path: Path, settings: Any
) -> None:
    secret = tmp_path / "slack_webhook"
    secret.write_text(SECRET_URL + "\n")
    secret.chmod(0o644)
    settings.ALARMS_CONFIG = write(tmp_path, '[[channels]]\ntype = "slack"\n'
                                             'webhook_file = "slack_webhook"\n')
    with pytest.raises(CommandError) as caught:
        call_command("evaluate_alarms", stdout=io.StringIO(), stderr=io.StringIO())
    assert caught.value.returncode == EXIT_CONFIG
    assert "readable by group or others" in str(caught.value)
    assert "cwCONFIGsecret" not in str(caught.value)


def _not_utf8(path: Path) -> None:
    path.write_bytes(b'disk_used_percent = 90\n# caf\xe9\n[[channels]]\ntype = "slack"\n')


UNREADABLE: dict[str, tuple[Callable[[Path], None], str]] = {
    "not UTF-8": (_not_utf8, "not UTF-8 text (byte 29)"),
    "a FIFO": (os.mkfifo, "is a FIFO, not a TOML file"),  # reading it would wait forever
    "a directory": (Path.mkdir, "is a directory, not a TOML file"),
}


@pytest.mark.parametrize("make", list(UNREADABLE.values()), ids=list(UNREADABLE))
def test_the_console_script_exits_78_in_one_line_for_an_unreadable_file(
    tmp_path: Path, make: tuple[Callable[[Path], None], str]
) -> None:
    setup, message = make
    path = tmp_path / "alarms.toml"
    setup(path)
    environ = {k: v for k, v in os.environ.items()
               if not k.startswith(("CLUSTERWATCH_", "DJANGO_"))}
    environ.update(CLUSTERWATCH_DATA_DIR=str(tmp_path), CLUSTERWATCH_ALARMS_CONFIG=str(path))
    done = subprocess.run([str(CLUSTERWATCH), "monitor", "evaluate_alarms"], env=environ,
                          capture_output=True, text=True, timeout=120, check=False,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == EXIT_CONFIG, done.stderr
    assert done.stdout == ""
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert str(path) in done.stderr and message in done.stderr
