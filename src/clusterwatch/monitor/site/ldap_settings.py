"""Who may log in: local Django accounts, and site accounts through LDAP (django-auth-ldap).

`from_environ(os.environ)` gives the login settings; settings.py merges them in. Without
CLUSTERWATCH_LDAP_URI only local accounts exist (ModelBackend). With it, the LDAP backend is
asked first and local accounts still work after it (docs/monitor.md, "Logging in: LDAP and
local accounts", lists every variable with an example per directory kind).

The Django user name is the directory's `uid` (CLUSTERWATCH_LDAP_USERNAME_ATTR) as stored:
the usage reports compare it with the Slurm user of each job, so the two must be the same
name. The bind password comes from a private file or the systemd credential
`ldap-bind-password`, never from the environment itself. Every malformed value raises a
one-line SettingError that starts with the variable's name and holds no secret (exit 78).

Only python-ldap's constants and django_auth_ldap.config are imported here: settings are
read before Django's apps load, and the backend module needs them loaded.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from clusterwatch.monitor.core import prefixed_settings
from clusterwatch.monitor.core.secrets import (
    CREDENTIALS_DIRECTORY,
    SettingError,
    read_secret,
    secret_file,
)

PREFIX = "CLUSTERWATCH_LDAP_"
MODEL_BACKEND = "django.contrib.auth.backends.ModelBackend"
LDAP_BACKEND = "clusterwatch.monitor.site.ldap_backend.DirectoryBackend"
CREDENTIAL = "ldap-bind-password"  # the systemd credential read when no file is named
DEFAULT_FILTER = "(uid=%(user)s)"
DEFAULT_TIMEOUT_S = 5.0
# A gunicorn worker is killed after 60 s; one login may wait for several LDAP operations.
MAX_TIMEOUT_S = 15.0
GROUP_TYPES = ("groupOfNames", "groupOfUniqueNames", "posixGroup")
ATTRIBUTES = {  # variable suffix -> (Django user field, default LDAP attribute)
    "USERNAME_ATTR": ("username", "uid"),
    "FIRST_NAME_ATTR": ("first_name", "givenName"),
    "LAST_NAME_ATTR": ("last_name", "sn"),
    "EMAIL_ATTR": ("email", "mail"),
}
KNOWN = frozenset(PREFIX + name for name in (
    "URI", "USER_DN_TEMPLATE", "USER_SEARCH_BASE", "USER_FILTER", "BIND_DN",
    "BIND_PASSWORD_FILE", "START_TLS", "CA_FILE", "STAFF_GROUP", "OPERATORS_GROUP",
    "GROUP_TYPE", "TIMEOUT_S",
    *ATTRIBUTES))
_ATTRIBUTE = re.compile(r"[A-Za-z][A-Za-z0-9-]*\Z")
_URI = re.compile(r"(?i:ldaps?)://(?:[A-Za-z0-9._-]+|\[[0-9A-Fa-f:.]+\])"  # host or [IPv6]
                  r"(?::(?P<port>[0-9]{1,5}))?/?\Z")


def from_environ(environ: Mapping[str, str]) -> dict[str, Any]:
    """AUTHENTICATION_BACKENDS, and with CLUSTERWATCH_LDAP_URI the AUTH_LDAP_* settings."""
    values = prefixed_settings.family(environ, PREFIX, KNOWN, password=PREFIX + "BIND_PASSWORD",
                                      credential=CREDENTIAL, topic="LDAP")
    if PREFIX + "URI" not in values:
        if values:
            raise SettingError(f"{min(values)} is set but {PREFIX}URI is not: set the server's "
                             "URI, or remove the LDAP settings for local accounts only")
        return {"AUTHENTICATION_BACKENDS": [MODEL_BACKEND]}
    return _ldap_settings(values, environ.get(CREDENTIALS_DIRECTORY, ""))


def _ldap_settings(values: Mapping[str, str], credentials: str) -> dict[str, Any]:
    try:
        import ldap
        from django_auth_ldap import config
    except ImportError:
        raise SettingError(f"{PREFIX}URI is set but python-ldap or django-auth-ldap is not "
                         "installed: pip install 'clusterwatch[monitor]'") from None
    uris = _uris(values[PREFIX + "URI"])
    start_tls = prefixed_settings.flag(values, PREFIX + "START_TLS")
    if start_tls and any(uri.startswith("ldaps:") for uri in uris):
        raise SettingError(f"{PREFIX}START_TLS is for ldap:// URIs; ldaps:// is TLS already")
    timeout = prefixed_settings.seconds(values, PREFIX + "TIMEOUT_S", DEFAULT_TIMEOUT_S,
                                       most=MAX_TIMEOUT_S)
    attributes = {suffix: _attribute(values, suffix, default)
                  for suffix, (_, default) in ATTRIBUTES.items()}
    bind_dn = _dn(values, "BIND_DN") if PREFIX + "BIND_DN" in values else ""
    result: dict[str, Any] = {
        "AUTHENTICATION_BACKENDS": [LDAP_BACKEND, MODEL_BACKEND],
        "AUTH_LDAP_SERVER_URI": " ".join(uris),  # libldap tries them in order
        "AUTH_LDAP_START_TLS": start_tls,
        "AUTH_LDAP_BIND_DN": bind_dn,
        "AUTH_LDAP_BIND_PASSWORD": _bind_password(values, bind_dn, credentials),
        # Without a service account the user's own bind reads their entry and groups.
        "AUTH_LDAP_BIND_AS_AUTHENTICATING_USER": not bind_dn,
        "AUTH_LDAP_USERNAME_ATTR": attributes["USERNAME_ATTR"],
        "AUTH_LDAP_USER_ATTR_MAP": {field: attributes[suffix] for suffix, (field, _)
                                    in ATTRIBUTES.items() if field != "username"},
        "AUTH_LDAP_CONNECTION_OPTIONS": _connection_options(ldap, timeout, values),
    }
    result.update(_user_lookup(config, ldap, values))
    if PREFIX + "STAFF_GROUP" in values or PREFIX + "OPERATORS_GROUP" in values:
        result.update(_groups(config, ldap, values))
    elif PREFIX + "GROUP_TYPE" in values:
        raise SettingError(f"{PREFIX}GROUP_TYPE says what {PREFIX}STAFF_GROUP or {PREFIX}"
                         "OPERATORS_GROUP is; set one of them too")
    return result


def _uris(text: str) -> list[str]:
    uris = text.split()
    for uri in uris:
        found = _URI.match(uri)
        if found is None or int(found.group("port") or 389) > 65535:
            raise SettingError(f"{PREFIX}URI must be ldap://host[:port] or ldaps://host[:port] "
                             f"(several: separated by spaces), not {uri!r}")
    return uris


def _attribute(values: Mapping[str, str], suffix: str, default: str) -> str:
    name = values.get(PREFIX + suffix, default)
    if not _ATTRIBUTE.match(name):
        raise SettingError(f"{PREFIX}{suffix} must be an LDAP attribute name, not {name!r}")
    return name


def _dn(values: Mapping[str, str], suffix: str) -> str:
    import ldap.dn

    value = values[PREFIX + suffix]
    if not ldap.dn.is_dn(value) or not ldap.dn.str2dn(value):
        raise SettingError(f"{PREFIX}{suffix} must be a distinguished name such as "
                         f"ou=people,dc=example,dc=org, not {value!r}")
    return value


def _bind_password(values: Mapping[str, str], bind_dn: str, credentials: str) -> str:
    found = secret_file(values.get(PREFIX + "BIND_PASSWORD_FILE", ""),
                        PREFIX + "BIND_PASSWORD_FILE", credential=CREDENTIAL,
                        credentials_dir=credentials)
    if found is None:
        if bind_dn:
            raise SettingError(f"{PREFIX}BIND_DN needs its password: a mode-600 file named by "
                               f"{PREFIX}BIND_PASSWORD_FILE, or the systemd credential "
                               f"{CREDENTIAL}")
        return ""
    if not bind_dn:
        raise SettingError(f"{found.setting} is the password of {PREFIX}BIND_DN; set that too")
    return read_secret(found)


def _connection_options(ldap: Any, timeout: float, values: Mapping[str, str]) -> dict[int, Any]:
    options: dict[int, Any] = {
        ldap.OPT_NETWORK_TIMEOUT: timeout,  # connecting
        ldap.OPT_TIMEOUT: timeout,  # each answer: a server that accepts and then hangs
        # libldap 2.5 spins forever in an ldaps:// handshake with a silent server unless
        # the connect is asynchronous; with it the handshake obeys the network timeout.
        ldap.OPT_CONNECT_ASYNC: 1,
        # Active Directory answers searches from the domain root with referrals, which
        # libldap would follow anonymously; the user lookup needs none.
        ldap.OPT_REFERRALS: 0,
    }
    ca_file = values.get(PREFIX + "CA_FILE")
    if ca_file is not None:
        try:
            with open(ca_file, "rb"):
                pass
        except OSError as exc:
            raise SettingError(f"{PREFIX}CA_FILE: cannot read {ca_file}: "
                             f"{exc.strerror or type(exc).__name__}") from None
        options[ldap.OPT_X_TLS_CACERTFILE] = ca_file
        options[ldap.OPT_X_TLS_REQUIRE_CERT] = ldap.OPT_X_TLS_DEMAND
        options[ldap.OPT_X_TLS_NEWCTX] = 0  # last: makes the TLS context with the above
    return options


def _user_lookup(config: Any, ldap: Any, values: Mapping[str, str]) -> dict[str, Any]:
    template = values.get(PREFIX + "USER_DN_TEMPLATE")
    base = values.get(PREFIX + "USER_SEARCH_BASE")
    if (template is None) == (base is None):
        raise SettingError(f"{PREFIX}URI needs exactly one of {PREFIX}USER_DN_TEMPLATE (e.g. "
                         f"uid=%(user)s,ou=people,dc=example,dc=org) and {PREFIX}"
                         "USER_SEARCH_BASE")
    if template is not None:
        if PREFIX + "USER_FILTER" in values:
            raise SettingError(f"{PREFIX}USER_FILTER is for {PREFIX}USER_SEARCH_BASE, not for a "
                             "DN template")
        dn = _with_user(template, "USER_DN_TEMPLATE")
        _dn({PREFIX + "USER_DN_TEMPLATE": dn}, "USER_DN_TEMPLATE")
        return {"AUTH_LDAP_USER_DN_TEMPLATE": template}
    _dn(values, "USER_SEARCH_BASE")
    search_filter = values.get(PREFIX + "USER_FILTER", DEFAULT_FILTER)
    if not _balanced(_with_user(search_filter, "USER_FILTER")):
        raise SettingError(f"{PREFIX}USER_FILTER must be an LDAP filter in parentheses such "
                         f"as {DEFAULT_FILTER}, not {search_filter!r}")
    return {"AUTH_LDAP_USER_SEARCH": config.LDAPSearch(base, ldap.SCOPE_SUBTREE, search_filter)}


def _with_user(template: str, suffix: str) -> str:
    """The template with a sample user name; it must use %(user)s and nothing else."""
    try:
        filled = template % {"user": "someone"}
    except (KeyError, ValueError, TypeError):
        filled = template
    if "someone" not in filled or "someone" in template:
        raise SettingError(f"{PREFIX}{suffix} must hold %(user)s where the user name goes (and "
                         f"any other % doubled), not {template!r}")
    return filled


def _balanced(search_filter: str) -> bool:
    depth = 0
    for position, char in enumerate(search_filter):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth < 0 or (depth == 0 and position < len(search_filter) - 1):
            return False
    return search_filter.startswith("(") and depth == 0


def _groups(config: Any, ldap: Any, values: Mapping[str, str]) -> dict[str, Any]:
    """The staff flag and the operators group from the directory: each group is named by
    its DN, and both are of CLUSTERWATCH_LDAP_GROUP_TYPE."""
    staff = _dn(values, "STAFF_GROUP") if PREFIX + "STAFF_GROUP" in values else None
    operators = _dn(values, "OPERATORS_GROUP") if PREFIX + "OPERATORS_GROUP" in values else None
    kind = values.get(PREFIX + "GROUP_TYPE", GROUP_TYPES[0])
    types = {name.lower(): name for name in GROUP_TYPES}
    if kind.lower() not in types:
        raise SettingError(f"{PREFIX}GROUP_TYPE must be one of {', '.join(GROUP_TYPES)}, "
                         f"not {kind!r}")
    group_type = {"groupofnames": config.GroupOfNamesType,
                  "groupofuniquenames": config.GroupOfUniqueNamesType,
                  "posixgroup": config.PosixGroupType}[kind.lower()]()
    # Membership is one compare (or base search) on each group itself; the search, which
    # django-auth-ldap requires, is only its fallback.
    searches = [config.LDAPSearch(dn, ldap.SCOPE_BASE) for dn in (staff, operators) if dn]
    result: dict[str, Any] = {
        "AUTH_LDAP_GROUP_SEARCH": searches[0] if len(searches) == 1
        else config.LDAPSearchUnion(*searches),
        "AUTH_LDAP_GROUP_TYPE": group_type,
    }
    if staff is not None:
        result["AUTH_LDAP_USER_FLAGS_BY_GROUP"] = {"is_staff": staff}
    if operators is not None:
        # Read by ldap_backend.DirectoryBackend: sets the Django group `operators`.
        result["AUTH_LDAP_OPERATORS_GROUP"] = operators
    return result
