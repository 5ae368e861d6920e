"""`python -m clusterwatch.loopback.postgres run -- COMMAND` (scripts/test's PostgreSQL pass).

The command line lives in cli.py, which imports the server from this package; running the
package (rather than a module that is also imported) keeps one copy of the server's state.
"""

import sys

from clusterwatch.loopback.postgres.cli import main

sys.exit(main())
