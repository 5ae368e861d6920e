"""What the loopback slapd serves: its slapd.conf and the directory it starts with (LDIF).

Kept apart from the process handling in slapd.py. The layout is a typical site's:

    dc=example,dc=org
      ou=people    uid=alice, uid=bob, ...  inetOrgPerson + posixAccount (gidNumber 10000)
      ou=services  cn=monitor               the account the monitor may bind as
      ou=groups    cn=staff                 groupOfNames, member: the staff users' DNs
                   cn=operators             posixGroup (gidNumber 10100), memberUid: the same
"""

from __future__ import annotations

import base64
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from clusterwatch.loopback.slapd import TlsFiles

BASE = "dc=example,dc=org"
PEOPLE = f"ou=people,{BASE}"
GROUPS = f"ou=groups,{BASE}"
SERVICE_DN = f"cn=monitor,ou=services,{BASE}"
USERS_GID = 10000
OPERATORS_GID = 10100
SCHEMAS = ("core", "cosine", "nis", "inetorgperson")
# Debian and Ubuntu first, then Fedora/RHEL's openldap-servers.
_SCHEMA_DIRS = ("/etc/ldap/schema", "/etc/openldap/schema")
_MODULE_DIRS = ("/usr/lib/ldap", "/usr/lib64/openldap", "/usr/lib/openldap")


@dataclass(frozen=True)
class DirectoryUser:
    """A person in ou=people; `mail` None leaves the attribute out."""

    uid: str
    password: str
    given_name: str
    surname: str
    mail: Optional[str]
    staff: bool = False


def default_users() -> tuple[DirectoryUser, ...]:
    """alice (staff), bob, and zoe (a name outside ASCII, no mail), fresh random passwords."""
    return (
        DirectoryUser("alice", secrets.token_urlsafe(12), "Alice", "Archer",
                      "alice@example.org", staff=True),
        DirectoryUser("bob", secrets.token_urlsafe(12), "Bob", "Baker", "bob@example.org"),
        DirectoryUser("zoe", secrets.token_urlsafe(12), "Zoë", "Ångström", None),
    )


def slapd_conf(workdir: Path, tls: Optional[TlsFiles]) -> str:
    """slapd.conf for one mdb database under `workdir`/data."""
    schema_dir = next((d for d in _SCHEMA_DIRS if Path(d, "core.schema").is_file()),
                      _SCHEMA_DIRS[0])
    lines = [f"include {schema_dir}/{name}.schema" for name in SCHEMAS]
    module_dir = next((d for d in _MODULE_DIRS if list(Path(d).glob("back_mdb*"))), None)
    if module_dir is not None:  # else mdb is built into slapd
        lines += [f"modulepath {module_dir}", "moduleload back_mdb"]
    lines += [f"pidfile {workdir / 'slapd.pid'}", f"argsfile {workdir / 'slapd.args'}"]
    if tls is not None:
        lines += [f"TLSCertificateFile {tls.cert}", f"TLSCertificateKeyFile {tls.key}"]
    lines += [
        "database mdb",
        "maxsize 16777216",
        f'suffix "{BASE}"',
        f"directory {workdir / 'data'}",
        # Anonymous clients may only bind; authenticated ones read all but passwords.
        "access to attrs=userPassword by anonymous auth by * none",
        "access to * by users read by * none",
    ]
    return "\n".join(lines) + "\n"


def directory_ldif(users: Sequence[DirectoryUser], hashes: Mapping[str, str],
                   service_hash: str) -> str:
    """The whole directory; `hashes`: uid -> slappasswd hash of that user's password."""
    staff = [user for user in users if user.staff]
    entries: list[list[tuple[str, str]]] = [
        [("dn", BASE), ("objectClass", "dcObject"), ("objectClass", "organization"),
         ("o", "Example"), ("dc", "example")],
        *([("dn", f"ou={ou},{BASE}"), ("objectClass", "organizationalUnit"), ("ou", ou)]
          for ou in ("people", "services", "groups")),
        [("dn", SERVICE_DN), ("objectClass", "organizationalRole"),
         ("objectClass", "simpleSecurityObject"), ("cn", "monitor"),
         ("userPassword", service_hash)],
    ]
    for number, user in enumerate(users, start=USERS_GID + 1):
        entry = [("dn", f"uid={user.uid},{PEOPLE}"), ("objectClass", "inetOrgPerson"),
                 ("objectClass", "posixAccount"), ("uid", user.uid),
                 ("cn", f"{user.given_name} {user.surname}"), ("givenName", user.given_name),
                 ("sn", user.surname), ("uidNumber", str(number)),
                 ("gidNumber", str(USERS_GID)), ("homeDirectory", f"/home/{user.uid}"),
                 ("userPassword", hashes[user.uid])]
        if user.mail is not None:
            entry.append(("mail", user.mail))
        entries.append(entry)
    # groupOfNames needs a member; the service account stands in when nobody is staff.
    members = [f"uid={user.uid},{PEOPLE}" for user in staff] or [SERVICE_DN]
    entries.append([("dn", f"cn=staff,{GROUPS}"), ("objectClass", "groupOfNames"),
                    ("cn", "staff"), *(("member", dn) for dn in members)])
    entries.append([("dn", f"cn=operators,{GROUPS}"), ("objectClass", "posixGroup"),
                    ("cn", "operators"), ("gidNumber", str(OPERATORS_GID)),
                    *(("memberUid", user.uid) for user in staff)])
    return "\n".join("".join(_line(name, value) for name, value in entry)
                     for entry in entries)


def _line(name: str, value: str) -> str:
    """`name: value`, or `name:: base64` when LDIF cannot hold the value as it is."""
    plain = value.isascii() and value.isprintable() and not value.startswith((" ", ":", "<"))
    if plain and not value.endswith(" "):
        return f"{name}: {value}\n"
    return f"{name}:: {base64.b64encode(value.encode()).decode()}\n"
