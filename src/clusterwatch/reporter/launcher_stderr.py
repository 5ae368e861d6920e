"""What a worker's launcher wrote to stderr before the job: where it started, and the
lifetime it had against the lifetime it needed.

The native launcher's lines are site-specific, so they are matched by configurable regular
expressions with named groups. The default line format (docs/reporter.md, "Admission"):

    2026-10-22 14:00:05,123 [launcher] startup: queue=BNL_OSG_1 host=wn12.example.edu
    2026-10-22 14:00:05,140 [launcher] lifetime: remaining=3400s required=7200s

A pattern is searched anywhere in a line; when a value occurs on several lines the last one
counts (the launcher's final word before it ran or refused). Python 3.6, standard library.
"""

import re
from typing import Any, Dict, List, Optional, Sequence

from clusterwatch.reporter.regular_read import open_regular

DEFAULT_STARTUP_PATTERN = r"\bstartup: queue=(?P<queue>\S+) host=(?P<host>\S+)"
DEFAULT_LIFETIME_PATTERN = r"\blifetime: remaining=(?P<remaining>\d+)s required=(?P<required>\d+)s"
STARTUP_GROUPS = ("queue", "host")
LIFETIME_GROUPS = ("remaining", "required")
# The startup and lifetime lines come first; a chatty launcher's later output is not read.
DEFAULT_HEAD_BYTES = 262144
MAX_VALUE_CHARS = 200


class PatternError(ValueError):
    """A configured pattern that does not compile or names none of the groups it must."""


def compile_patterns(texts: Sequence[str], groups: Sequence[str], option: str
                     ) -> List["re.Pattern[str]"]:
    """Each of `texts` compiled; each must name at least one of `groups`, and no other."""
    compiled = []  # type: List[re.Pattern[str]]
    for text in texts:
        try:
            pattern = re.compile(text)
        except re.error as exc:
            raise PatternError("{} {!r} is not a regular expression: {}".format(
                option, text, exc)) from None
        named = set(pattern.groupindex)
        if not named & set(groups) or named - set(groups):
            raise PatternError("{} {!r} must name the group(s) {} and no others".format(
                option, text, " and/or ".join("(?P<{}>...)".format(g) for g in groups)))
        compiled.append(pattern)
    return compiled


def _seconds(value: Optional[str]) -> Optional[int]:
    if value is None or not value.isdigit() or len(value) > 12:
        return None
    return int(value)


def parse_stderr(text: str, startup: Sequence["re.Pattern[str]"],
                 lifetime: Sequence["re.Pattern[str]"]) -> Dict[str, Any]:
    """The launcher's evidence in `text`; each value absent from it is None, with the
    reason under `missing`."""
    found = {}  # type: Dict[str, str]
    for line in text.splitlines():
        if "\x00" in line:
            line = line.replace("\x00", "")
        for pattern in list(startup) + list(lifetime):
            match = pattern.search(line)
            if match is None:
                continue
            for name, value in match.groupdict().items():
                if value is not None:
                    found[name] = value[:MAX_VALUE_CHARS]
    remaining, required = _seconds(found.get("remaining")), _seconds(found.get("required"))
    out = {
        "execution_queue": found.get("queue"),
        "execution_host": found.get("host"),
        "remaining_lifetime_s": remaining,
        "required_lifetime_s": required,
    }  # type: Dict[str, Any]
    missing = {}  # type: Dict[str, str]
    for key, group in (("execution_queue", "queue"), ("execution_host", "host"),
                       ("remaining_lifetime_s", "remaining"),
                       ("required_lifetime_s", "required")):
        if out[key] is None:
            missing[key] = ("no line of the launcher's stderr matched" if group not in found
                            else "not a number of seconds: {!r}".format(found[group]))
    out["missing"] = missing
    return out


def read_head(path: str, max_bytes: int = DEFAULT_HEAD_BYTES) -> str:
    """The first `max_bytes` of a file, decoded leniently (OSError if unreadable); a line cut
    at the limit is dropped so a half number is not read as a whole one."""
    with open_regular(path) as handle:  # a FIFO in its place must not hang the run
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        data = data[:max_bytes]
        cut = data.rfind(b"\n")
        data = data[:cut + 1] if cut >= 0 else b""
    return data.decode("utf-8", "replace")


def stderr_evidence(path: Optional[str], startup: Sequence["re.Pattern[str]"],
                    lifetime: Sequence["re.Pattern[str]"],
                    max_bytes: int = DEFAULT_HEAD_BYTES) -> Dict[str, Any]:
    """`parse_stderr` of the file at `path`, or every value None with why it is missing."""
    if path is None:
        problem = "no local path for the worker's stdErr URL"  # type: Optional[str]
    else:
        try:
            return parse_stderr(read_head(path, max_bytes), startup, lifetime)
        except (OSError, ValueError) as exc:  # ValueError: a path with a NUL character
            problem = "cannot read the launcher's stderr: {}: {}".format(
                type(exc).__name__, getattr(exc, "strerror", None) or exc or "unknown error")
    keys = ("execution_queue", "execution_host", "remaining_lifetime_s", "required_lifetime_s")
    out = {key: None for key in keys}  # type: Dict[str, Any]
    out["missing"] = {key: problem for key in keys}
    out["error"] = problem
    return out
