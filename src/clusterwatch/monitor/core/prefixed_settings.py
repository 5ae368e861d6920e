"""One family of settings, CLUSTERWATCH_<FAMILY>_*, read as a whole from the environment.

A family (the LDAP login's CLUSTERWATCH_LDAP_*, the usage email's CLUSTERWATCH_EMAIL_*) is
validated together: a variable the family does not know is an error, since a typo would
otherwise drop a setting silently (the staff group, TLS), and a variable meant to hold the
family's password is refused outright, because the environment of every process is no place
for one. Messages are one line, start with the variable's name and never hold its value
when that could be a secret. Every refusal is a SettingError (core.secrets).

`flag` and `seconds` also serve single settings: the one reading of a flag and of a number of
seconds, whatever the family.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping

from clusterwatch.monitor.core.secrets import SettingError

TRUE = ("1", "true", "yes", "on")
FALSE = ("0", "false", "no", "off")


def family(environ: Mapping[str, str], prefix: str, known: Collection[str], *,
           password: str, credential: str, topic: str) -> dict[str, str]:
    """The family's non-empty values, stripped, by full variable name.

    `password`: the variable that must never be set (its value is never repeated); the
    message points at `password`_FILE and the systemd credential `credential`. `topic`
    names the family in the message about an unknown variable ("the LDAP ones are ...").
    """
    values = {name: value.strip() for name, value in environ.items()
              if name.startswith(prefix) and value.strip()}
    if password in values:
        raise SettingError(f"{password} is not read: the environment is no place for a "
                         f"password; put it in a mode-600 file named by {password}_FILE "
                         f"(or the systemd credential {credential})")
    for name in sorted(values):
        if name not in known:
            raise SettingError(f"{name} is not a setting; the {topic} ones are "
                             f"{', '.join(sorted(known))}")
    return values


def flag(values: Mapping[str, str], name: str) -> bool:
    """`name`'s value as a flag: 1/true/yes/on or 0/false/no/off; absent is off."""
    text = values.get(name, "").lower()
    if text and text not in TRUE + FALSE:
        raise SettingError(f"{name} must be one of {', '.join(TRUE + FALSE)}, not {text[:40]!r}")
    return text in TRUE


def seconds(values: Mapping[str, str], name: str, default: float, most: float) -> float:
    """`name`'s value as a number of seconds in (0, `most`]; `default` when absent or empty."""
    text = values.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or not 0 < value <= most:
        raise SettingError(f"{name} must be a number of seconds above 0 and at most {most:g}, "
                           f"not {text[:40]!r}")
    return value
