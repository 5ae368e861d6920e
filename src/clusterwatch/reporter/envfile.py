"""The reporter's environment file: monitor URL, report token and an optional CA bundle.

The file holds a secret, so it is refused when its mode lets the group or other users at
it; every error names the file (and the line), never a value.
"""



import ipaddress
import os
import re
import stat
from typing import Dict, List, Optional, Tuple
from urllib.parse import urlsplit

from clusterwatch.reporter.regular_read import NotRegularFile, open_regular

# (new name, old name): the new one wins when a file gives both.
URL_KEYS = ("CLUSTERWATCH_MONITOR_URL", "SWF_MONITOR_URL")
TOKEN_KEYS = ("CLUSTERWATCH_REPORT_TOKEN", "SWF_REPORT_TOKEN")
CA_BUNDLE_KEYS = ("CLUSTERWATCH_CA_BUNDLE", "SWF_CA_BUNDLE")

_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_TOKEN = re.compile(r"[\x21-\x7e]+\Z")
_INLINE_COMMENT = re.compile(r"\s+#")


class ConfigError(Exception):
    """The environment file is missing, unsafe or malformed; the message carries no value."""


def load_env(path: str) -> Dict[str, Optional[str]]:
    """`{"url", "token", "ca_bundle"}` from the file at `path`, None where not given.

    Raises ConfigError when the file cannot be read, is group/world accessible, has a line
    that is not `KEY=VALUE`, or gives a monitor URL that `check_monitor_url` refuses.
    """
    values = read_env_file(path)
    url = _first(values, URL_KEYS)
    if url is not None:
        try:
            check_monitor_url(url)
        except ConfigError as exc:
            raise ConfigError(f"{path}: {exc}") from None
    token = _first(values, TOKEN_KEYS)
    if token is not None:
        try:
            check_token(token)
        except ConfigError as exc:
            raise ConfigError(f"{path}: {exc}") from None
    return {"url": url, "token": token, "ca_bundle": _first(values, CA_BUNDLE_KEYS)}


def read_env_file(path: str) -> Dict[str, str]:
    """Every KEY=VALUE of the file; the file must be private to its owner (mode 600)."""
    try:
        handle = open_regular(path)  # a FIFO put in the file's place must not hang the run
    except NotRegularFile:
        raise ConfigError(f"environment file {path} is not a regular file") from None
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        raise ConfigError(f"cannot open environment file {path}: {why}") from None
    with handle:
        try:
            # fstat the open file, not the path, so the checked file is the one read.
            mode = os.fstat(handle.fileno()).st_mode
            if mode & 0o077:
                raise ConfigError(
                    f"refusing environment file {path}: mode {stat.S_IMODE(mode):04o} lets "
                    f"other users at the report token; run: chmod 600 {path}")
            text = handle.read().decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            why = type(exc).__name__
            raise ConfigError(f"cannot read environment file {path}: {why}") from None
    values = {}  # type: Dict[str, str]
    for key, value in parse_env(text, path):
        values[key] = value  # a later line wins, as when a shell sources the file
    return values


def parse_env(text: str, name: str = "environment file") -> List[Tuple[str, str]]:
    """`KEY=VALUE` pairs in order. Blank and `#` lines are skipped, `export ` is tolerated.

    A value may be single- or double-quoted (taken literally, no escapes); an unquoted value
    ends at a whitespace-preceded `#`, as in a shell.
    """
    pairs = []  # type: List[Tuple[str, str]]
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[len("export "):].lstrip()
        key, sep, value = line.partition("=")
        key = key.strip()
        if not sep or not _KEY.match(key):
            raise ConfigError(f"{name} line {number}: expected KEY=VALUE")
        pairs.append((key, _unquote(value.strip(), name, number)))
    return pairs


def check_monitor_url(url: str) -> str:
    """`url` if it is https, or http to a loopback address; ConfigError otherwise.

    Plain http would send the token in clear, so it is allowed only to this host (a local
    tunnel or test server). The message does not repeat the URL, which could hold secrets.
    """
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        raise ConfigError("the monitor URL is not a valid URL") from None
    if not host:
        raise ConfigError("the monitor URL has no host")
    if parts.username is not None or parts.password is not None:
        raise ConfigError("the monitor URL must not carry credentials; put the token in "
                          "the token setting")
    if parts.scheme == "https":
        return url
    if parts.scheme == "http" and _is_loopback(host):
        return url
    if parts.scheme == "http":
        raise ConfigError("the monitor URL must be https (plain http is allowed only to "
                          "127.0.0.1, ::1 or localhost)")
    raise ConfigError("the monitor URL must be an https:// URL")


def check_token(token: str) -> str:
    """`token` if it can travel in an HTTP header; ConfigError (without the token) otherwise.

    http.client would otherwise refuse it with an error that quotes the whole header.
    """
    if not _TOKEN.match(token):
        raise ConfigError("the report token must be printable ASCII without spaces")
    return token


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _unquote(value: str, name: str, number: int) -> str:
    if value[:1] in ("'", '"'):
        quote = value[0]
        end = value.find(quote, 1)
        if end < 0:
            raise ConfigError(f"{name} line {number}: unterminated quote")
        rest = value[end + 1:].strip()
        if rest and not rest.startswith("#"):
            raise ConfigError(f"{name} line {number}: text after the closing quote")
        return value[1:end]
    comment = _INLINE_COMMENT.search(value)
    return value[:comment.start()] if comment else value


def _first(values: Dict[str, str], keys: Tuple[str, ...]) -> Optional[str]:
    for key in keys:
        value = values.get(key)
        if value:
            return value
    return None
