"""Notification channels (Slack, Alertmanager, generic JSON webhook) and the outbox rules.

Events are appended to a persistent outbox before any send; each channel keeps its own
position in it, its own back-off and its own dead letters, so one dead channel never blocks
another and nothing is dropped without being set aside where an operator can see it.
"""
