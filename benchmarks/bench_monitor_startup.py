"""Time a monitor management command as cron and operators run it: the installed console
script, start to exit, beside the same command in a process that first imports the drawing
modules (matplotlib, reportlab, numpy: what every command imported with the URLs before the
usage views imported them only where they draw), alternating, in one run.

    python benchmarks/bench_monitor_startup.py               # list_harvesters, 10 runs each
    python benchmarks/bench_monitor_startup.py --runs 3 --command check

Each command runs on a migrated SQLite monitor in a temporary data directory. Output: the
median and minimum wall time of each way (ms) and their ratio. Progress goes to standard
error. Exit status 1 when a command fails.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Optional

from clusterwatch.loopback.monitor_server import manage, monitor_environ

CLUSTERWATCH = str(Path(sys.executable).with_name("clusterwatch"))  # the installed script
# The same command after importing what the URLs imported before (the drawing modules).
_WITH_DRAWING = ("import clusterwatch.monitor.usage.rendering.rendered\n"
                 "import sys\n"
                 "from clusterwatch.cli import main\n"
                 "sys.exit(main(sys.argv[1:]))\n")


def run_once(argv: list[str], environ: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(argv, env=environ, capture_output=True, text=True, timeout=120,
                          check=False, stdin=subprocess.DEVNULL)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:4])} exited {done.returncode}: "
                         f"{done.stderr.strip()[-500:]}")
    return seconds


def main(args: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10, help="runs of each way (default 10)")
    parser.add_argument("--command", default="list_harvesters",
                        help="the management command (default list_harvesters)")
    options = parser.parse_args(args)
    if options.runs < 1:
        parser.error("--runs must be at least 1")
    with tempfile.TemporaryDirectory(prefix="cw-bench-startup-") as folder:
        data = Path(folder) / "data"
        data.mkdir(mode=0o700)
        environ = monitor_environ(data)
        environ.pop("MPLCONFIGDIR", None)
        print("migrating a monitor database", file=sys.stderr)
        manage(environ, "migrate", "--noinput", "-v", "0")
        ways = {"console script": [CLUSTERWATCH, "monitor", options.command],
                "with the drawing modules": [sys.executable, "-c", _WITH_DRAWING, "monitor",
                                             options.command]}
        for argv in ways.values():  # warm the page cache and matplotlib's font list
            run_once(argv, environ)
        times: dict[str, list[float]] = {name: [] for name in ways}
        for run in range(options.runs):
            print(f"run {run + 1}/{options.runs}", file=sys.stderr)
            for name, argv in ways.items():
                times[name].append(run_once(argv, environ))
    print(f"clusterwatch monitor {options.command}: {options.runs} runs of each way, "
          "alternating (wall time, ms)")
    for name, values in times.items():
        print(f"  {name:26s} median {1000 * statistics.median(values):7.1f}  "
              f"min {1000 * min(values):7.1f}")
    ratio = statistics.median(times["console script"]) / statistics.median(
        times["with the drawing modules"])
    print(f"  ratio console script / with the drawing modules: {ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
