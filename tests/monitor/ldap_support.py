"""What the LDAP login tests share: a real slapd, the monitor configured for it through
the same `from_environ` that settings.py uses, and a login through the real form."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Optional

from django.contrib.auth import SESSION_KEY
from django.http import HttpResponse
from django.test import Client

from clusterwatch.loopback.services import MissingComponent
from clusterwatch.loopback.slapd import (
    DirectoryUser,
    Slapd,
    TlsFiles,
    find_binary,
    slapd_server,
)
from clusterwatch.monitor.site.ldap_settings import from_environ
from tests.components import unavailable

LOGIN = "/accounts/login/"


@contextlib.contextmanager
def running_directory(workdir: Path, tls: Optional[TlsFiles] = None,
                      users: Optional[Sequence[DirectoryUser]] = None) -> Iterator[Slapd]:
    """The loopback slapd; a missing slapd fails under CI=true and skips elsewhere."""
    try:
        for name in ("slapd", "slapadd", "slappasswd"):
            find_binary(name)
    except MissingComponent as missing:
        unavailable(missing)
    with slapd_server(workdir, tls=tls, users=users) as server:
        yield server


def ldap_environ(directory: Slapd, **variables: Optional[str]) -> dict[str, str]:
    """CLUSTERWATCH_LDAP_* for `directory`: a DN template and the groupOfNames staff group,
    changed by `variables` (short names: URI=..., STAFF_GROUP=None removes one)."""
    environ: dict[str, Optional[str]] = {
        "URI": directory.uri,
        "USER_DN_TEMPLATE": f"uid=%(user)s,{directory.people}",
        "STAFF_GROUP": directory.staff_group,
        **variables,
    }
    return {f"CLUSTERWATCH_LDAP_{name}": value for name, value in environ.items()
            if value is not None}


def configure(settings: Any, directory: Slapd, **variables: Optional[str]) -> None:
    """pytest-django's `settings` set as settings.py would set them from `ldap_environ`."""
    for name, value in from_environ(ldap_environ(directory, **variables)).items():
        setattr(settings, name, value)


def password_file(directory: Path, password: str) -> str:
    path = directory / "ldap-bind-password"
    path.write_text(password + "\n")
    path.chmod(0o600)
    return str(path)


def login(client: Client, username: str, password: str) -> tuple[HttpResponse, float]:
    """POSTs the login form; the answer and how many seconds it took."""
    started = time.monotonic()
    response = client.post(LOGIN, {"username": username, "password": password})
    return response, time.monotonic() - started


def logged_in_as(client: Client) -> Optional[str]:
    """The user name the client's session belongs to, or None."""
    from django.contrib.auth import get_user_model

    user_id = client.session.get(SESSION_KEY)
    if user_id is None:
        return None
    return str(get_user_model().objects.get(pk=user_id).get_username())


def refused(response: HttpResponse) -> bool:
    """The form answered again (200) with the invalid-login error: nobody logged in."""
    return response.status_code == 200 and b"correct username and password" in response.content
