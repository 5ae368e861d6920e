"""The monitor's settings for the tests: the real ones, read from a private data directory.

pytest-django imports this before any conftest, so this is where the environment is set.
The database is pytest-django's test database: SQLite in memory, or a `test_*` database on
the server that CLUSTERWATCH_DATABASE_URL names (scripts/test's PostgreSQL pass).
"""

import atexit
import os
import shutil
import tempfile

if "CLUSTERWATCH_DATA_DIR" not in os.environ:
    # Made by the first process to import this (pytest-xdist's workers inherit it) and removed
    # when that process ends: a run left one directory behind in /tmp before.
    _DATA_DIR = tempfile.mkdtemp(prefix="clusterwatch-tests-")
    os.environ["CLUSTERWATCH_DATA_DIR"] = _DATA_DIR
    atexit.register(shutil.rmtree, _DATA_DIR, ignore_errors=True)

from clusterwatch.monitor.site.settings import *  # noqa: F403

# In-process test logins hash with MD5: PBKDF2's 1,000,000 iterations cost about 0.6 s a
# password, hundreds of times a run. The production settings above keep PBKDF2, and so does
# every monitor the tests start as a process (gunicorn, the demo, the browser tests): they
# read clusterwatch.monitor.site.settings, not this module.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
