"""`clusterwatch <part> <verb>`: one entry point, each part registers its own verbs.

Each part's `cli` module only builds its argument parser; it imports its working modules
inside the handlers, so `clusterwatch textfile ...` on a GPU worker loads nothing of the watch
and a part whose optional dependencies are missing fails only when it is used.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from collections.abc import Sequence
from typing import Callable, Optional

from clusterwatch import __version__
from clusterwatch.errors import (
    EXIT_CONFIG,
    EXIT_FAILURE,
    EXIT_OK,
    EXIT_USAGE,
    ConfigError,
    RunError,
    UsageError,
)

# part name -> (module with `register(subparsers)`, one-line help)
PARTS = {
    "watch": ("clusterwatch.watch.cli", "pool watch: HTCondor execute nodes and GPU VRAM files"),
    "textfile": ("clusterwatch.textfile.cli", "writers for node_exporter's textfile collector"),
    "reporter": ("clusterwatch.reporter.cli", "harvester host reporter: build the zipapp, run"),
    "jobs": ("clusterwatch.jobs.cli",
             "per-job exporter: metrics from cgroups and /proc for Prometheus"),
    "monitor": ("clusterwatch.monitor.site.cli", "the central web app: Django management commands"),
    "usage": ("clusterwatch.monitor.usage.terminal.cli",
              "your jobs' usage reports in the terminal (asked vs used, arrays, advice)"),
}

Handler = Callable[[argparse.Namespace], int]


def configure_logging(verbose: int) -> None:
    level = logging.DEBUG if verbose > 1 else logging.INFO if verbose else logging.WARNING
    if os.environ.get("JOURNAL_STREAM") or os.environ.get("INVOCATION_ID"):
        # Under systemd, journald reads "<N>" prefixes as syslog priorities.
        fmt = "<%(syslog_priority)s>%(name)s: %(message)s"
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter(fmt))
        handler.addFilter(_add_syslog_priority)
    else:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)


def _add_syslog_priority(record: logging.LogRecord) -> bool:
    record.syslog_priority = {
        logging.DEBUG: 7, logging.INFO: 6, logging.WARNING: 4, logging.ERROR: 3,
        logging.CRITICAL: 2,
    }.get(record.levelno, 6)
    return True


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="clusterwatch",
        description="Monitoring toolkit for research-computing batch pools.",
        epilog="Exit status: 0 ok (also when an alert was raised), 1 failure, 2 usage error, "
        "78 configuration error.",
    )
    parser.add_argument("--version", action="version", version=f"clusterwatch {__version__}")
    parser.add_argument(
        "-v", "--verbose", action="count", default=0,
        help="log more to stderr (-v info, -vv debug); warnings and errors are always logged",
    )
    parts = parser.add_subparsers(dest="part", metavar="PART")
    parts.required = True
    for name, (module_name, help_text) in PARTS.items():
        part_parser = parts.add_parser(name, help=help_text, description=help_text)
        module = importlib.import_module(module_name)
        module.register(part_parser)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    try:
        status = _run(argv)
    except SystemExit:
        # argparse printed --help, --version or a usage error: flush that here as well, so
        # `clusterwatch --help | head -1` does not end in a BrokenPipeError at exit.
        _flush_stdout()
        raise
    # Output is block-buffered on a pipe: a reader that went away (`... | head`) shows up
    # only at this flush, which would otherwise happen at interpreter exit, print
    # "Exception ignored ... BrokenPipeError" and turn the exit status into 120.
    _flush_stdout()
    return status


def _run(argv: Optional[Sequence[str]]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    configure_logging(args.verbose)
    handler: Optional[Handler] = getattr(args, "handler", None)
    if handler is None:
        parser.parse_args([*(argv if argv is not None else sys.argv[1:]), "--help"])
        return EXIT_USAGE
    try:
        return handler(args)
    except UsageError as exc:
        print(f"clusterwatch: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except ConfigError as exc:
        print(f"clusterwatch: configuration error: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except RunError as exc:
        print(f"clusterwatch: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`... | head`): not an error worth a traceback.
        _silence_stdout()
        return EXIT_OK


def _flush_stdout() -> None:
    if sys.stdout is None:  # started with stdout closed: print() discards, so may we
        return
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _silence_stdout()


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so the flush at interpreter exit has nowhere to fail."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


if __name__ == "__main__":
    sys.exit(main())
