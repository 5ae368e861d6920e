"""Build the configured notification channels (secrets are read here, and only here)."""

from __future__ import annotations

from clusterwatch.http_client import HttpPost, post
from clusterwatch.notify import channel_config
from clusterwatch.notify.channel import Channel
from clusterwatch.watch.config import WatchConfig


def build_channels(config: WatchConfig, http_post: HttpPost = post) -> list[Channel]:
    return channel_config.build_channels(config.channels, http_post)
