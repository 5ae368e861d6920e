"""The monitor's settings for the tests: the real ones, read from a private data directory.

pytest-django imports this before any conftest, so this is where the environment is set.
The database is pytest-django's test database: SQLite in memory, or a `test_*` database on
the server that CLUSTERWATCH_DATABASE_URL names (scripts/test's PostgreSQL pass).
"""

import os
import tempfile

os.environ.setdefault("CLUSTERWATCH_DATA_DIR", tempfile.mkdtemp(prefix="clusterwatch-tests-"))

from clusterwatch.monitor.settings import *  # noqa: F403
