"""Channels as configured in TOML (`[[channels]]`), their secret files, and building them.

Shared by the pool watch (`watch.toml`) and the monitor's alarms (`alarms.toml`), so both
take the same syntax:

    [[channels]]
    type = "slack"            # slack | webhook | alertmanager | email
    name = "ops"              # default: the type
    webhook_file = "slack_webhook"   # slack: a mode-600 file holding the webhook URL
    # url_file = "hook_url"   # webhook: a mode-600 file holding the URL (it may hold a token)
    # url = "http://127.0.0.1:9093"  # alertmanager: the base URL (not a secret)
    timeout_s = 10
    labels = { team = "ops" }  # alertmanager: extra labels

An email channel has keys of its own (smtp_host, from, to, ...: `email_config`). Secret
files (and an email channel's CA file) are named relative to the configuration file's
directory and read only when the channels are built, never logged or quoted in an error.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from clusterwatch.errors import ConfigError
from clusterwatch.http_client import HttpPost, post, url_problem
from clusterwatch.notify.alertmanager import ALERTNAME, AlertmanagerChannel
from clusterwatch.notify.channel import Channel
from clusterwatch.notify.config_values import MAX_SECONDS as MAX_SECONDS
from clusterwatch.notify.config_values import key_name as key_name
from clusterwatch.notify.config_values import positive, read_secret_text, reject_unknown, string
from clusterwatch.notify.email_channel import EmailSettings
from clusterwatch.notify.email_config import EMAIL_KEYS, build_email_channel, parse_email
from clusterwatch.notify.slack import SlackWebhook
from clusterwatch.notify.webhook import JsonWebhook

__all__ = ["CHANNEL_TYPES", "MAX_SECONDS", "MAX_TIMEOUT_S", "ChannelConfig", "build_channels",
           "check_url", "key_name", "parse_channels", "positive", "read_secret",
           "reject_unknown", "string"]

CHANNEL_TYPES = ("slack", "alertmanager", "webhook", "email")
# The keys of the HTTP channels (an email channel takes EMAIL_KEYS instead).
CHANNEL_KEYS = frozenset({"type", "name", "webhook_file", "url_file", "url", "timeout_s",
                          "labels"})
SECRET_KEYS = {"slack": "webhook_file", "webhook": "url_file"}
MAX_TIMEOUT_S = 3600.0  # a request or a command run by a poll a minute


@dataclass(frozen=True)
class ChannelConfig:
    type: str
    name: str
    secret_file: Optional[Path] = None  # slack: webhook URL; webhook: URL (may hold a token)
    url: Optional[str] = None  # alertmanager base URL (not a secret)
    timeout_s: float = 10.0
    labels: dict[str, str] = field(default_factory=dict)  # alertmanager extra labels
    email: Optional[EmailSettings] = None  # the email channel's settings


def parse_channels(raw: Any, base_dir: Path) -> tuple[ChannelConfig, ...]:
    """The `[[channels]]` array of a parsed TOML document; secret files from `base_dir`."""
    if not isinstance(raw, list):
        raise ConfigError("channels must be an array of tables ([[channels]])")
    channels: list[ChannelConfig] = []
    for index, item in enumerate(raw):
        where = f"channels[{index}]"
        if not isinstance(item, dict):
            raise ConfigError(f"{where} must be a table")
        kind = item.get("type")
        if kind not in CHANNEL_TYPES:
            raise ConfigError(f"{where}.type must be one of {', '.join(CHANNEL_TYPES)}")
        reject_unknown(item, set(EMAIL_KEYS if kind == "email" else CHANNEL_KEYS), where)
        name = string(item, "name", where, kind)
        if any(c.name == name for c in channels):
            raise ConfigError(f"{where}: two channels are named {name!r}")
        timeout_s = positive(item, "timeout_s", 10.0, where, MAX_TIMEOUT_S)
        if kind == "email":
            channels.append(ChannelConfig(type=kind, name=name, timeout_s=timeout_s,
                                          email=parse_email(item, where, base_dir, timeout_s)))
            continue
        secret_key = SECRET_KEYS.get(kind)
        secret_file = None
        if secret_key is not None:
            if secret_key not in item:
                raise ConfigError(f"{where} ({kind}) needs {secret_key}, a file holding the URL")
            secret_file = base_dir / string(item, secret_key, where)
        url = string(item, "url", where)
        if kind == "alertmanager" and not url:
            raise ConfigError(f"{where} (alertmanager) needs url, e.g. http://127.0.0.1:9093")
        if url:
            check_url(url, f"{where}.url {url!r}")
        labels = item.get("labels", {})
        if not isinstance(labels, dict) or not all(
            isinstance(value, str) for value in labels.values()
        ):
            raise ConfigError(f"{where}.labels must be a table of strings")
        channels.append(ChannelConfig(
            type=kind, name=name, secret_file=secret_file, url=str(url) if url else None,
            timeout_s=timeout_s,
            labels={str(k): str(v) for k, v in labels.items()},
        ))
    return tuple(channels)


def build_channels(
    specs: Sequence[ChannelConfig], http_post: HttpPost = post, alertname: str = ALERTNAME
) -> list[Channel]:
    """The channels themselves; secrets are read here, and only here (ConfigError if unsafe)."""
    channels: list[Channel] = []
    for spec in specs:
        if spec.type == "slack":
            assert spec.secret_file is not None
            channels.append(SlackWebhook(spec.name, read_secret(spec.secret_file),
                                         spec.timeout_s, http_post))
        elif spec.type == "webhook":
            assert spec.secret_file is not None
            channels.append(JsonWebhook(spec.name, read_secret(spec.secret_file),
                                        spec.timeout_s, http_post))
        elif spec.type == "email":
            assert spec.email is not None
            channels.append(build_email_channel(spec.name, spec.email))
        else:
            assert spec.url is not None
            channels.append(AlertmanagerChannel(spec.name, spec.url, spec.timeout_s,
                                                spec.labels, http_post, alertname))
    return channels


def read_secret(path: Path) -> str:
    """The URL a secret file holds, refusing a file that others can read (as ssh does)."""
    value = read_secret_text(path).strip()
    if not value or any(ch.isspace() for ch in value):
        raise ConfigError(f"secret file {path} must hold the URL alone, on one line")
    if not value.lower().startswith(("https://", "http://")):
        # Caught here rather than as a delivery error retried every minute; the message
        # must not quote the value.
        raise ConfigError(f"secret file {path} must hold an https:// (or http://) URL")
    check_url(value, f"secret file {path}")  # names the file, never quotes the URL
    return value


def check_url(url: str, what: str) -> None:
    """Refuse a URL that no request could use (a port out of range, a broken host)."""
    problem = url_problem(url)
    if problem is not None:
        raise ConfigError(f"{what}: {problem}")
