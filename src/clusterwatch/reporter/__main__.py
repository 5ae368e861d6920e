"""`python -m clusterwatch.reporter` and the zipapp's entry point."""

import sys

from clusterwatch.reporter.main import main

sys.exit(main())
