"""Build the configured notification channels (secrets are read here, and only here)."""

from __future__ import annotations

from clusterwatch.notify.alertmanager import AlertmanagerChannel
from clusterwatch.notify.channel import Channel
from clusterwatch.notify.http import HttpPost, post
from clusterwatch.notify.slack import SlackWebhook
from clusterwatch.notify.webhook import JsonWebhook
from clusterwatch.watch.config import WatchConfig, read_secret


def build_channels(config: WatchConfig, http_post: HttpPost = post) -> list[Channel]:
    channels: list[Channel] = []
    for spec in config.channels:
        if spec.type == "slack":
            assert spec.secret_file is not None
            channels.append(SlackWebhook(spec.name, read_secret(spec.secret_file),
                                         spec.timeout_s, http_post))
        elif spec.type == "webhook":
            assert spec.secret_file is not None
            channels.append(JsonWebhook(spec.name, read_secret(spec.secret_file),
                                        spec.timeout_s, http_post))
        else:
            assert spec.url is not None
            channels.append(AlertmanagerChannel(spec.name, spec.url, spec.timeout_s,
                                                spec.labels, http_post))
    return channels
