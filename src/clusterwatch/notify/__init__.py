"""Notification channels (Slack, Alertmanager, generic JSON webhook) and the outbox rules.

Events are appended to a persistent outbox before any send; each channel keeps its own
position in it, its own back-off and its own dead letters, so one dead channel never blocks
another and nothing is dropped without being set aside where an operator can see it.

Both alert engines (the pool watch and the monitor's alarms) speak through this package, so
what they share is defined here once: the transition words and incident ids (`incident`),
what an HTTP answer means (`answers`), the channel sections of their status views
(`outbox_status`), and how their channels are configured (`channel_config`). Outbound HTTP
(`clusterwatch.http_client` with `clusterwatch.http_deadline`) and TOML reading
(`clusterwatch.toml_file`) are top-level helpers, since the monitor's features use them too.
"""
