"""An email channel's settings in `[[channels]]`, and building it (its password, its CA).

    [[channels]]
    type = "email"
    name = "ops-mail"                 # default: email
    smtp_host = "smtp.example.org"
    smtp_port = 587                   # default: 587 starttls, 465 tls, 25 none
    security = "starttls"             # starttls (default) | tls | none
    username = "clusterwatch"         # optional: log in, with password_file
    password_file = "smtp_password"   # mode 600, relative to the config file's directory
    # ca_file = "site-ca.pem"         # trust this CA alone (default: the system's CAs)
    from = "Pool watch <clusterwatch@example.org>"
    to = ["pool-ops@example.org", "oncall@example.org"]
    timeout_s = 10                    # the whole exchange, connect to the end of DATA

Certificates are verified for tls and starttls, the host name included. A login over
`security = "none"` would send the password in clear, so it is refused unless the server
is on this host (localhost, 127.0.0.0/8, ::1).
"""

from __future__ import annotations

import email.utils
import ipaddress
import re
import ssl
from pathlib import Path
from typing import Any, Optional

from clusterwatch.errors import ConfigError
from clusterwatch.http_deadline import new_tls_context
from clusterwatch.notify.config_values import key_name, read_password, string
from clusterwatch.notify.email_channel import EmailChannel, EmailSettings
from clusterwatch.notify.smtp_exchange import DEFAULT_PORTS, SECURITY_MODES, SmtpSettings

EMAIL_KEYS = frozenset({"type", "name", "smtp_host", "smtp_port", "security", "username",
                        "password_file", "ca_file", "from", "to", "timeout_s"})
MAX_RECIPIENTS = 100
_HOST = re.compile(r"(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
                   r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*\.?")
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_DOMAIN = rf"(?:{_LABEL}\.)*{_LABEL}"
# ASCII addresses only: SMTPUTF8 is not asked for, so a server may refuse anything else.
_ADDRESS = re.compile(r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~.-]{1,64}@" + _DOMAIN)


def parse_email(item: dict[str, Any], where: str, base_dir: Path,
                timeout_s: float) -> EmailSettings:
    """The settings of one `type = "email"` table (its keys already checked)."""
    host = _host(item, where)
    security = item.get("security", "starttls")
    if security not in SECURITY_MODES:
        raise ConfigError(f"{key_name(where, 'security')} must be one of "
                          f"{', '.join(SECURITY_MODES)}, not {security!r}")
    port = item.get("smtp_port", DEFAULT_PORTS[security])
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise ConfigError(f"{key_name(where, 'smtp_port')} must be a port number (1-65535), "
                          f"not {port!r}")
    username = string(item, "username", where)
    if username and (not username.isprintable() or username != username.strip()):
        raise ConfigError(f"{key_name(where, 'username')} must be printable, without "
                          "leading or trailing spaces")
    password_name = string(item, "password_file", where)
    if bool(username) != bool(password_name):
        raise ConfigError(f"{where} (email): username and password_file go together")
    if username and security == "none" and not _loopback(host):
        raise ConfigError(f"{where} (email): a login with security = \"none\" would send the "
                          f"password in clear to {host}; use starttls or tls")
    ca_name = string(item, "ca_file", where)
    if ca_name and security == "none":
        raise ConfigError(f"{where} (email): ca_file needs security starttls or tls")
    sender = _address(string(item, "from", where), key_name(where, "from"))
    return EmailSettings(
        smtp=SmtpSettings(host=host, port=port, security=security, username=username,
                          timeout_s=timeout_s),
        sender=sender,
        recipients=_recipients(item.get("to"), key_name(where, "to")),
        password_file=base_dir / password_name if password_name else None,
        ca_file=base_dir / ca_name if ca_name else None,
    )


def build_email_channel(name: str, settings: EmailSettings) -> EmailChannel:
    """The channel, with its password and CA read now (ConfigError if unsafe or unreadable)."""
    password = read_password(settings.password_file) if settings.password_file else ""
    context: Optional[ssl.SSLContext] = None
    if settings.smtp.security != "none":
        context = _tls_context(settings.ca_file)
    return EmailChannel(name, settings, password, context)


def _tls_context(ca_file: Optional[Path]) -> ssl.SSLContext:
    if ca_file is None:
        return new_tls_context()
    try:
        return new_tls_context(str(ca_file))
    except FileNotFoundError:
        raise ConfigError(f"ca_file {ca_file} does not exist") from None
    except ssl.SSLError:
        raise ConfigError(f"ca_file {ca_file} holds no PEM certificate") from None
    except OSError as exc:
        raise ConfigError(f"cannot read ca_file {ca_file}: {exc.strerror}") from None


def _host(item: dict[str, Any], where: str) -> str:
    host = string(item, "smtp_host", where)
    if not host:
        raise ConfigError(f"{where} (email) needs smtp_host, the SMTP server's name")
    bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if _HOST.fullmatch(bare):
        return bare
    try:
        return str(ipaddress.ip_address(bare))
    except ValueError:
        raise ConfigError(f"{key_name(where, 'smtp_host')} must be a host name or address, "
                          f"not {host[:80]!r}") from None


def _loopback(host: str) -> bool:
    if host.lower().rstrip(".") == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _address(value: str, what: str) -> str:
    """`value` if it is one address, alone or with a display name; the header form."""
    if not value:
        raise ConfigError(f"{what} is needed: an address like clusterwatch@example.org")
    pairs = email.utils.getaddresses([value])
    address = pairs[0][1] if len(pairs) == 1 else ""
    # parseaddr mends what it cannot read ("ops team@x" gives "opsteam@x"): the value must be
    # the address itself, or a display name and the address in angle brackets.
    if ("\r" in value or "\n" in value or not _ADDRESS.fullmatch(address)
            or not (value == address or value.endswith(f"<{address}>"))):
        raise ConfigError(f"{what} must be one address like clusterwatch@example.org or "
                          f"\"Pool watch <clusterwatch@example.org>\", not {value[:80]!r}")
    return value


def _recipients(value: Any, what: str) -> tuple[str, ...]:
    if value is None:
        raise ConfigError(f"{what} is needed: a list of addresses, e.g. [\"ops@example.org\"]")
    if not isinstance(value, list) or not value:
        raise ConfigError(f"{what} must be a non-empty list of addresses, not {value!r}")
    if len(value) > MAX_RECIPIENTS:
        raise ConfigError(f"{what} lists {len(value)} addresses; at most {MAX_RECIPIENTS} "
                          "(use a mailing list)")
    recipients: list[str] = []
    for index, item in enumerate(value):
        if not isinstance(item, str):
            raise ConfigError(f"{what}[{index}] must be a string, not {item!r}")
        recipients.append(_address(item, f"{what}[{index}]"))
    seen = [email.utils.parseaddr(r)[1].lower() for r in recipients]
    if len(set(seen)) != len(seen):
        raise ConfigError(f"{what} lists an address twice")
    return tuple(recipients)
