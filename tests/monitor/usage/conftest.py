"""The usage reports' web fixtures (tests/monitor/usage/site.py)."""

from tests.monitor.usage.site import usage_site  # noqa: F401  (a fixture, found by name)
