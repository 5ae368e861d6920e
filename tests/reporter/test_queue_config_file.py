"""Reading `panda_queueconfig.json` from a file or from bytes: every refusal, one line each."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Callable

import pytest

from clusterwatch.reporter.queue_config import (
    MAX_BYTES,
    QueueConfigError,
    decode_queue_config,
    load_queue_config,
    parse_queue_config,
)

SECRET = "hunter2-not-for-messages"


def refusal(path: Path) -> str:
    with pytest.raises(QueueConfigError) as caught:
        load_queue_config(str(path))
    message = str(caught.value)
    assert "\n" not in message and str(path) in message
    return message


def test_it_loads_an_object_of_queues(tmp_path: Path) -> None:
    path = tmp_path / "panda_queueconfig.json"
    path.write_text(json.dumps({"Q": {"maxWorkers": 3}}), encoding="utf-8")
    assert load_queue_config(str(path)) == {"Q": {"maxWorkers": 3}}


def test_it_says_when_the_file_does_not_exist(tmp_path: Path) -> None:
    assert refusal(tmp_path / "absent.json").endswith("absent.json does not exist")


def test_it_says_why_a_path_cannot_be_read(tmp_path: Path) -> None:
    (tmp_path / "plain").write_text("{}", encoding="utf-8")
    message = refusal(tmp_path / "plain" / "panda_queueconfig.json")  # a file as a directory
    assert message.startswith("cannot read the queue configuration ")
    assert message.endswith(": Not a directory")


@pytest.mark.parametrize("make", [os.mkdir, os.mkfifo], ids=["directory", "fifo"])
def test_it_refuses_what_is_not_a_regular_file_without_waiting(
        tmp_path: Path, make: Callable[[Path], None]) -> None:
    path = tmp_path / "panda_queueconfig.json"
    make(path)  # opening a FIFO to read would wait for a writer: open_regular never does
    assert refusal(path).endswith("is not a regular file")


def test_it_refuses_text_that_is_not_json_without_quoting_it(tmp_path: Path) -> None:
    path = tmp_path / "q.json"
    text = '{"Q": {"submitter": {"password": "' + SECRET + '"}},,}'
    path.write_text(text, encoding="utf-8")
    message = refusal(path)
    column = text.index(",,") + 2  # the second comma, counted from 1
    assert message == f"queue configuration {path} is not JSON: " \
        f"Expecting property name enclosed in double quotes at line 1 column {column}"
    assert SECRET not in message


@pytest.mark.parametrize(("text", "kind"), [
    ("[]", "a JSON array"), ('"Q"', "a JSON string"), ("3", "a JSON number"),
    ("null", "null"), ("true", "a JSON boolean"),
])
def test_it_refuses_a_document_that_is_not_an_object(tmp_path: Path, text: str, kind: str) -> None:
    path = tmp_path / "q.json"
    path.write_text(text, encoding="utf-8")
    assert refusal(path) == f"queue configuration {path} is {kind}, not an object of queues"


def test_it_refuses_a_file_over_the_cap_reading_no_more_than_the_cap(tmp_path: Path) -> None:
    path = tmp_path / "q.json"
    with open(path, "wb") as handle:  # 64 GiB, sparse: reading it all would never end here
        handle.truncate(64 << 30)
    assert refusal(path) == f"queue configuration {path} is larger than {MAX_BYTES} bytes"


def test_it_takes_a_file_of_exactly_the_cap(tmp_path: Path) -> None:
    path = tmp_path / "q.json"
    body = b'{"Q": {"note": "'
    path.write_bytes(body + b"x" * (MAX_BYTES - len(body) - 4) + b'"}}\n')
    assert os.path.getsize(path) == MAX_BYTES
    assert set(load_queue_config(str(path))) == {"Q"}


def test_it_refuses_bytes_that_are_not_utf_8() -> None:
    with pytest.raises(QueueConfigError, match=r"^queue configuration iri:/q.json is not UTF-8 "
                                               r"text \(at byte offset 8\)$"):
        decode_queue_config(b'{"Q": {"\xe9": 1}}', "iri:/q.json")


def test_it_takes_a_byte_order_mark() -> None:
    assert decode_queue_config(b'\xef\xbb\xbf{"Q": {}}', "q") == {"Q": {}}


def test_it_refuses_nesting_too_deep_for_the_parser() -> None:
    with pytest.raises(QueueConfigError, match=r"^queue configuration q is not usable JSON: "
                                               r"nested too deeply$"):
        decode_queue_config(b'{"Q": ' + b"[" * 200_000 + b"]" * 200_000 + b"}", "q")


def test_it_refuses_a_number_too_long_to_convert() -> None:
    with pytest.raises(QueueConfigError, match=r"^queue configuration q is not usable JSON: "
                                               r"a number too long$"):
        decode_queue_config(b'{"Q": {"maxWorkers": ' + b"9" * 5000 + b"}}", "q")


def test_it_applies_the_same_cap_to_bytes_from_elsewhere() -> None:
    with pytest.raises(QueueConfigError, match=r"larger than 10 bytes$"):
        decode_queue_config(b'{"Q": {"a": 1}}', "iri", max_bytes=10)


def test_it_refuses_to_parse_a_document_that_is_not_an_object() -> None:
    with pytest.raises(QueueConfigError, match=r"^the queue configuration is a JSON array, "
                                               r"not an object of queues$"):
        parse_queue_config([{"Q": {}}])
