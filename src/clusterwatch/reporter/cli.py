"""`clusterwatch reporter ...`: build the zipapp, or run the reporter in place."""

import argparse
from typing import List

from clusterwatch.reporter import REPORTER_VERSION


def register(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "The harvester host reporter (standard library only, Python 3.6). Build it as one "
        "file for the harvester hosts, or run it from here with the same options as "
        "`python -m clusterwatch.reporter`.")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB")
    verbs.required = True
    build = verbs.add_parser("build", help="build the reporter as one zipapp file",
                             description="Build the reporter zipapp (e.g. "
                             "harvester-reporter.pyz) to copy to ~/.local/bin on a host.")
    build.add_argument("--output", metavar="FILE", required=True,
                       help="where to write the zipapp")
    build.add_argument("--interpreter", metavar="PATH", default="/usr/bin/env python3",
                       help="shebang line interpreter (default: %(default)s)")
    build.set_defaults(handler=_build)
    run = verbs.add_parser("run", help="one reporter run (options: see `run -- --help`)",
                           add_help=False)
    run.add_argument("options", nargs=argparse.REMAINDER)
    run.set_defaults(handler=_run)


def _build(args: argparse.Namespace) -> int:
    from clusterwatch.reporter.build import build

    path = build(args.output, args.interpreter)
    print("wrote {} (reporter {})".format(path, REPORTER_VERSION))
    return 0


def _run(args: argparse.Namespace) -> int:
    from clusterwatch.reporter.main import main

    options: List[str] = list(args.options)
    if options[:1] == ["--"]:
        options = options[1:]
    return main(options)
