"""Reading an engine's TOML file: every failure is one ConfigError line naming the file."""

from __future__ import annotations

import os
import socket
import threading
from pathlib import Path

import pytest

from clusterwatch.errors import ConfigError
from clusterwatch.toml_file import read_toml


def refused(path: Path) -> str:
    with pytest.raises(ConfigError) as caught:
        read_toml(path)
    message = str(caught.value)
    assert str(path) in message and "\n" not in message
    return message


def test_it_reads_a_table(tmp_path: Path) -> None:
    path = tmp_path / "alarms.toml"
    path.write_text('disk_used_percent = 85\n[[channels]]\ntype = "slack"\n')
    assert read_toml(path) == {"disk_used_percent": 85, "channels": [{"type": "slack"}]}


def test_it_says_none_for_a_missing_file(tmp_path: Path) -> None:
    assert read_toml(tmp_path / "alarms.toml") is None
    (tmp_path / "dangling.toml").symlink_to(tmp_path / "nowhere")
    assert read_toml(tmp_path / "dangling.toml") is None


def test_it_refuses_bytes_that_are_not_utf8_naming_the_byte(tmp_path: Path) -> None:
    path = tmp_path / "watch.toml"
    path.write_bytes(b'[prometheus]\njob = "n\xffde"\n')
    assert refused(path) == f"{path}: not UTF-8 text (byte 22)"  # 1-based, as editors count


def test_it_refuses_text_that_is_not_toml(tmp_path: Path) -> None:
    path = tmp_path / "watch.toml"
    path.write_text("disk_used_percent = \n")
    assert refused(path).startswith(f"{path}: not valid TOML: ")


def test_it_refuses_a_fifo_without_waiting_for_a_writer(tmp_path: Path) -> None:
    path = tmp_path / "alarms.toml"
    os.mkfifo(path)
    outcome: list[str] = []
    reader = threading.Thread(target=lambda: outcome.append(refused(path)), daemon=True)
    reader.start()
    reader.join(timeout=10)
    assert outcome == [f"{path} is a FIFO, not a TOML file"]


def test_it_refuses_a_directory_and_an_endless_device(tmp_path: Path) -> None:
    directory = tmp_path / "dir.toml"
    directory.mkdir()
    assert refused(directory) == f"{directory} is a directory, not a TOML file"
    endless = tmp_path / "zero.toml"
    endless.symlink_to("/dev/zero")
    assert refused(endless) == f"{endless} is a device, not a TOML file"


def test_it_refuses_a_socket_in_one_line(tmp_path: Path) -> None:
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(tmp_path / "sock.toml"))
        assert refused(tmp_path / "sock.toml").startswith(f"cannot read {tmp_path}")


def test_it_refuses_a_path_the_system_cannot_open(tmp_path: Path) -> None:
    loop = tmp_path / "loop.toml"
    loop.symlink_to(loop)
    assert refused(loop) == f"cannot read {loop}: Too many levels of symbolic links"
