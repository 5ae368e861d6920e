"""A `panda_queueconfig.json` document read from a file or from bytes, with clear refusals.

The document comes from the harvester host's disk (the reporter) or through the NERSC IRI
API (the monitor's remote builder, which hands over the bytes it received). Either way it is
capped at 5 MiB, the IRI API's own limit on a viewed file, so the two paths refuse the same
documents; a real configuration with hundreds of queues is far smaller. The harvester itself
reads the file with `json.load`; JSON text is UTF-8 here, as the JSON standard has it.

Every refusal is one QueueConfigError whose message names the source and says what is
wrong, never quoting the document: a plugin section may hold a credential.

Python 3.6 compatible, standard library only (see the package docstring).
"""

import json
from typing import Any, Dict, Optional

from clusterwatch.reporter.regular_read import NotRegularFile, open_regular

MAX_BYTES = 5 * 1024 * 1024
# A real configuration nests four levels (queue, plugin section, a setting's list or map);
# json.loads takes about 1,000 but copy.deepcopy in the template merge only half of that.
MAX_DEPTH = 100


class QueueConfigError(Exception):
    """The queue configuration as a whole cannot be used; the message is one line."""


def load_queue_config(path: str, max_bytes: int = MAX_BYTES) -> Dict[str, Any]:
    """The decoded document (an object of queues and templates) in the file at `path`."""
    try:
        handle = open_regular(path)  # a FIFO in the file's place must not hang the run
    except NotRegularFile:
        raise QueueConfigError(f"queue configuration {path} is not a regular file") from None
    except FileNotFoundError:
        raise QueueConfigError(f"queue configuration {path} does not exist") from None
    except OSError as error:
        raise QueueConfigError(
            f"cannot read the queue configuration {path}: {_reason(error)}") from None
    try:
        with handle:
            data = handle.read(max_bytes + 1)
    except OSError as error:
        raise QueueConfigError(
            f"cannot read the queue configuration {path}: {_reason(error)}") from None
    return decode_queue_config(data, path, max_bytes)


def decode_queue_config(data: bytes, source: str, max_bytes: int = MAX_BYTES) -> Dict[str, Any]:
    """The decoded document in `data`; `source` names where it came from in every message."""
    if len(data) > max_bytes:
        raise QueueConfigError(
            f"queue configuration {source} is larger than {max_bytes} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise QueueConfigError(f"queue configuration {source} is not UTF-8 text "
                               f"(at byte offset {error.start})") from None
    if text.startswith("\ufeff"):  # a byte-order mark some editors write; json refuses it
        text = text[1:]
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise QueueConfigError(
            f"queue configuration {source} is not JSON: {error.msg} at line {error.lineno} "
            f"column {error.colno}") from None
    except RecursionError:
        raise QueueConfigError(
            f"queue configuration {source} is not usable JSON: nested too deeply") from None
    except ValueError:  # e.g. an integer longer than Python converts (3.11's digit limit)
        raise QueueConfigError(
            f"queue configuration {source} is not usable JSON: a number too long") from None
    if not isinstance(document, dict):
        raise QueueConfigError(
            f"queue configuration {source} is {json_kind(document)}, not an object of queues")
    problem = _unstorable(document, MAX_DEPTH)
    if problem:
        raise QueueConfigError(f"queue configuration {source} {problem}")
    return document


def _unstorable(document: Any, limit: int) -> Optional[str]:
    """Why `document` cannot go into a record, or None: containers nested over `limit` levels
    (the template merge copies values recursively), or a string holding a NUL or a lone
    surrogate (valid JSON escapes that PostgreSQL refuses, and so does ingest). A loop, not
    recursion, so the check itself cannot run out of stack."""
    pending = [(document, 1)]
    while pending:
        value, depth = pending.pop()
        if depth > limit:
            return "is not usable JSON: nested too deeply"
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for name, item in items:
            for text in (name, item):
                if isinstance(text, str) and not _storable(text):
                    return ("holds a NUL character or a lone surrogate (\\u0000, \\ud800): "
                            "no record can store it")
            if isinstance(item, (dict, list)):
                pending.append((item, depth + 1))
    return None


def _storable(text: str) -> bool:
    if "\x00" in text:
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def json_kind(value: Any) -> str:
    """What a decoded JSON value is, as a message says it: "a JSON array", "null"..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a JSON boolean"
    if isinstance(value, (int, float)):
        return "a JSON number"
    if isinstance(value, str):
        return "a JSON string"
    if isinstance(value, list):
        return "a JSON array"
    return "a JSON object"


def _reason(error: OSError) -> str:
    return error.strerror or type(error).__name__
