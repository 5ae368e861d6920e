"""PyMySQL connections to Slurm's accounting database, and its errors in one safe line.

Shared by `create_slurmdb_view` (as an administrator) and the slurmdb accounting source (as
the read-only user). Every connection has a connect, read and write timeout: a database that
stops answering must not hold a page, the mail poller or an administrator's shell forever.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Optional

import pymysql

MESSAGE_CHARACTERS = 300

# Server errors that mean "this configuration cannot work" rather than "try again later".
LOGIN_REFUSED = frozenset({1045, 1698})  # wrong user or password
NOT_GRANTED = frozenset({1044, 1142, 1143, 1227})  # logged in, not allowed (or no such view:
# MariaDB tells a user without rights "denied", never "missing")
MISSING = frozenset({1049, 1146})  # unknown database, table or view


def connect(*, host: str, port: int, user: Optional[str], password: Optional[str],
            timeout_s: float, unix_socket: Optional[str] = None,
            defaults_file: Optional[str] = None) -> Any:
    """An open connection (autocommit, utf8mb4). A defaults file's [client] values fill in
    what the arguments leave empty (PyMySQL's rule). Raises pymysql.MySQLError."""
    options: dict[str, Any] = {
        "host": host, "port": port, "user": user, "password": password or "",
        "charset": "utf8mb4", "autocommit": True,
        # PyMySQL wants whole seconds here, and at least 1.
        "connect_timeout": max(1, round(timeout_s)),
        "read_timeout": timeout_s, "write_timeout": timeout_s,
        "local_infile": False,
    }
    if unix_socket:
        options["unix_socket"] = unix_socket
    if defaults_file:
        options["read_default_file"] = defaults_file
    return pymysql.connect(**options)


def error_code(exc: BaseException) -> Optional[int]:
    """The server's (or client library's) error number, when the error has one."""
    args: tuple[Any, ...] = getattr(exc, "args", ())
    if args and isinstance(args[0], int):
        return args[0]
    return None


def server_message(exc: BaseException, secrets: Iterable[str] = ()) -> str:
    """The error's text on one line (the server's message, without the number), with any
    of `secrets` blanked: a message quoting a statement could otherwise quote a password."""
    args: tuple[Any, ...] = getattr(exc, "args", ())
    text = str(args[1]) if len(args) >= 2 else str(exc) or type(exc).__name__
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    line = " ".join(text.split())
    return line[:MESSAGE_CHARACTERS]
