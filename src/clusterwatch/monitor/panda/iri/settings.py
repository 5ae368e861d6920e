"""What the IRI client takes from configuration, checked before any request: the token file,
the API's base URL and the file to read. Every problem is a SettingError (a ConfigError:
exit 78 for a command), in one line that names the setting and never quotes the token or
the URL.
"""

from __future__ import annotations

import urllib.parse
from typing import Optional

from clusterwatch.http_client import url_problem
from clusterwatch.monitor.core.secrets import SettingError, read_secret_file

TOKEN_SETTING = "--iri-token-file"  # noqa: S105 (the option naming the file, no secret)
URL_SETTING = "--iri-url"


def read_token_file(path: str, setting: str = TOKEN_SETTING) -> str:
    """The bearer token alone on the file's one line. The file must be private (mode 600, or
    a systemd credential), as the monitor's password files are; it is read at each use, so
    whatever refreshes it (NERSC's tokens live about ten minutes) needs no restart here."""
    token = read_secret_file(path, setting)
    problem = token_problem(token)
    if problem:
        raise SettingError(f"{setting}: {path} {problem}")
    return token


def token_problem(token: str) -> Optional[str]:
    """Why `token` cannot go into an Authorization header, or None. Never quotes it."""
    if not token:
        return "holds no token"
    if any(ch.isspace() or not ch.isprintable() or not ch.isascii() for ch in token):
        # A header value with a line break would be a second header; a space means the file
        # holds something else than one token (a "Bearer " prefix, a key: value file).
        return "must hold the token alone: printable ASCII without spaces"
    return None


def base_url_problem(url: str) -> Optional[str]:
    """Why `url` cannot be the API's base URL (https://api.iri.nersc.gov/api/v1), or None.

    HTTPS only: every request carries the token. No user, query or fragment: the base is
    joined with the API's paths, and whatever else a URL holds would travel or be lost.
    """
    problem = url_problem(url)
    if problem:
        return problem
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "https":
        return "the URL must be https:// (the token goes with every request)"
    if parts.username is not None or parts.password is not None:
        return "the URL must not hold a user or password (the token file is the credential)"
    if parts.query or parts.fragment or url.endswith(("?", "#")):
        return "the URL must not hold a query or fragment"
    return None


def check_view_settings(base_url: str, resource_id: str, path: str, token: str) -> None:
    """Raise SettingError for the first setting that no view request could be made with."""
    check_view_target(base_url, resource_id, path)
    problem = token_problem(token)
    if problem:
        raise SettingError(f"{TOKEN_SETTING}: the token {problem}")


def check_view_target(base_url: str, resource_id: str, path: str) -> None:
    """check_view_settings without the token: what register_harvester can check up front."""
    problem = base_url_problem(base_url)
    if problem:
        raise SettingError(f"{URL_SETTING}: {problem}")
    if not resource_id.strip() or not resource_id.isprintable():
        raise SettingError("--iri-resource: give the resource's id (e.g. a UUID or 'cfs')")
    if not path.startswith("/") or not path.isprintable():
        raise SettingError("--iri-path: give the file's absolute path at NERSC")
