"""The usage reports' web fixtures (tests/monitor/usage/site.py)."""

from tests.monitor.usage.mail_support import mail_site, smtp  # noqa: F401  (fixtures)
from tests.monitor.usage.site import usage_site  # noqa: F401  (a fixture, found by name)
