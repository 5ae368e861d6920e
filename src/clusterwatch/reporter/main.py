"""One reporter run: options, state, collection, then printing or delivery.

Python 3.6 compatible, standard library only (see the package docstring).
"""

import argparse
import json
import os
import re
import socket
import sys
import time
from typing import Any, Dict, List, Optional

from clusterwatch.reporter import record as record_module
from clusterwatch.reporter import state as state_module
from clusterwatch.reporter.image_policy import DEFAULT_MAX_AGE_S

EXIT_OK = 0
EXIT_BUFFERED = 1  # delivery failed; the record waits in the buffer
EXIT_NOT_CONFIGURED = 2  # no monitor URL or token; the record waits in the buffer
EXIT_USAGE = 64  # EX_USAGE

DEFAULT_LOG_DIR = "/var/log/harvester"
DEFAULT_HARVESTER_CFG = "/opt/harvester/etc/panda/panda_harvester.cfg"
DEFAULT_QUEUE_CONFIG = "/opt/harvester/etc/panda/panda_queueconfig.json"
DEFAULT_VOLUMES = "/,/var,/data,/tmp"
DEFAULT_ENV = "~/.swf-harvester-reporter.env"
DEFAULT_INTERVAL_S = 300
MAX_INTERVAL_S = 86400  # a reporter run less than daily is no monitoring


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    """argparse exits 2 on bad usage; the reporter's usage status is 64 (sysexits)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        sys.stderr.write("{}: error: {}\n".format(self.prog, message))
        sys.exit(EXIT_USAGE)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="harvester-reporter",
        description="Collect what only this PanDA Harvester host knows (its logs since the "
        "last run, its database, condor event logs, processes, disks) into one record and "
        "deliver it to the clusterwatch monitor; run from cron every five minutes.",
        epilog="Exit status: 0 record (and backlog) delivered, or printed; 1 delivery failed "
        "and the record was buffered; 2 no monitor URL or token configured, record buffered; "
        "64 usage error.",
    )
    parser.add_argument("--print", action="store_true", dest="print_only",
                        help="collect and print the record as indented JSON; store nothing, "
                             "post nothing")
    parser.add_argument("--report-as", metavar="KEY",
                        help="report key (default: the short hostname)")
    parser.add_argument("--env", metavar="FILE", default=DEFAULT_ENV,
                        help="environment file with the monitor URL and token, mode 600 "
                             "(default: %(default)s)")
    parser.add_argument("--state", metavar="DIR",
                        help="state and buffer directory (default: ~/.swf-harvester-"
                             "reporter-KEY/, or ~/.swf-harvester-reporter/ for the one key "
                             "that owns it; see docs/reporter.md)")
    parser.add_argument("--log-dir", metavar="DIR", default=DEFAULT_LOG_DIR,
                        help="harvester log directory (default: %(default)s)")
    parser.add_argument("--harvester-cfg", metavar="FILE", default=DEFAULT_HARVESTER_CFG,
                        help="panda_harvester.cfg (default: %(default)s)")
    parser.add_argument("--queue-config", metavar="FILE", default=DEFAULT_QUEUE_CONFIG,
                        help="panda_queueconfig.json (default: %(default)s)")
    parser.add_argument("--volumes", metavar="LIST", default=DEFAULT_VOLUMES,
                        help="comma-separated mount points to report (default: %(default)s)")
    parser.add_argument("--image-state-max-age-s", metavar="N", type=int,
                        default=DEFAULT_MAX_AGE_S,
                        help="the image allocator's state older than this is expired: a "
                             "native template's image policy is then not advertised (pilot "
                             "dispatch unknown); the allocator runs every 120 s (default: "
                             "%(default)s)")
    parser.add_argument("--interval-s", metavar="N", type=int, default=DEFAULT_INTERVAL_S,
                        help="seconds between runs as cron starts them, stated in the record "
                             "so the monitor's staleness follows it; 1 to {} (default: "
                             "%(default)s)".format(MAX_INTERVAL_S))
    parser.add_argument("--refusal-exit-codes", metavar="LIST", default="73",
                        help="comma-separated native exit codes that are the site launcher's "
                             "pre-job refusals in the admission section (default: %(default)s)")
    parser.add_argument("--startup-pattern", metavar="REGEX", action="append",
                        help="regular expression for the launcher's startup line in a "
                             "worker's stderr, with (?P<queue>...) and/or (?P<host>...); "
                             "repeatable (default: the line format in docs/reporter.md)")
    parser.add_argument("--lifetime-pattern", metavar="REGEX", action="append",
                        help="the same for its lifetime line, with (?P<remaining>...) and/or "
                             "(?P<required>...) in seconds; repeatable")
    parser.add_argument("--mysql", metavar="PROGRAM", default="mysql",
                        help="the mysql client (default: found on PATH)")
    return parser


def short_hostname() -> str:
    return socket.gethostname().split(".")[0]


def default_state_dir(key: str, log_dir: str, claim: bool = True) -> str:
    """The key's own directory on a home other hosts may share (see state_dir)."""
    from clusterwatch.reporter import state_dir

    return state_dir.choose(os.path.expanduser("~"), key, log_dir, claim)


def main(argv: Optional[List[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    key = args.report_as or short_hostname()
    if not key or "/" in key or key.startswith("."):
        sys.stderr.write("harvester-reporter: --report-as must be a plain name\n")
        return EXIT_USAGE
    volumes = [v.strip() for v in args.volumes.split(",") if v.strip()]
    if not volumes:
        sys.stderr.write("harvester-reporter: --volumes needs at least one mount point\n")
        return EXIT_USAGE
    if args.image_state_max_age_s < 1:
        sys.stderr.write("harvester-reporter: --image-state-max-age-s must be at least 1\n")
        return EXIT_USAGE
    if not 1 <= args.interval_s <= MAX_INTERVAL_S:
        sys.stderr.write("harvester-reporter: --interval-s must be 1 to {}\n".format(
            MAX_INTERVAL_S))
        return EXIT_USAGE
    try:
        state_dir = os.path.expanduser(args.state) if args.state else default_state_dir(
            key, args.log_dir, claim=not args.print_only)
    except OSError as exc:
        sys.stderr.write("harvester-reporter: cannot choose the state directory: {}\n".format(
            exc))
        return EXIT_BUFFERED
    sources = record_module.Sources(
        log_dir=args.log_dir, harvester_cfg=args.harvester_cfg,
        queue_config=args.queue_config, volumes=volumes, mysql=args.mysql,
        environ=dict(os.environ), interval_s=args.interval_s,
    )
    sources.image_state_max_age_s = args.image_state_max_age_s
    try:
        sources.admission = _admission_settings(args)
    except ValueError as exc:
        sys.stderr.write("harvester-reporter: {}\n".format(exc))
        return EXIT_USAGE
    if args.print_only:
        previous, damage = state_module.load(state_dir, keep_damaged=False)
        _say_damage(damage)
        record, _ = record_module.collect(key, sources, previous, time.time(),
                                          state_damage=damage)
        json.dump(record, sys.stdout, indent=2, sort_keys=True)
        sys.stdout.write("\n")
        return EXIT_OK
    try:
        return _run_and_deliver(key, sources, state_dir, os.path.expanduser(args.env))
    except (state_module.StateError, OSError) as exc:
        # Nothing was collected or nothing could be kept: say so; cron mails stderr.
        sys.stderr.write("harvester-reporter: {}\n".format(exc))
        return EXIT_BUFFERED


def _admission_settings(args: Any) -> Any:
    """The admission options; ValueError (a usage error) names a bad one."""
    from clusterwatch.reporter import launcher_stderr
    from clusterwatch.reporter.admission_collect import AdmissionSettings

    codes = [c.strip() for c in args.refusal_exit_codes.split(",") if c.strip()]
    # A native exit code is 0-255; str.isdigit would also take other scripts' digits.
    if not codes or not all(re.match(r"[0-9]{1,3}\Z", c) and int(c) <= 255 for c in codes):
        raise ValueError("--refusal-exit-codes must be comma-separated exit codes, 0 to 255")
    return AdmissionSettings(
        [int(c) for c in codes],
        args.startup_pattern or [launcher_stderr.DEFAULT_STARTUP_PATTERN],
        args.lifetime_pattern or [launcher_stderr.DEFAULT_LIFETIME_PATTERN])


def _say_damage(damage: Optional[Dict[str, Any]]) -> None:
    # Cron mails stderr: a damaged state costs counted lines, so an operator must hear of it.
    if damage is not None:
        sys.stderr.write("harvester-reporter: {}\n".format(
            state_module.describe_damage(damage)))


def _run_and_deliver(key: str, sources: Any, state_dir: str, env_path: str) -> int:
    from clusterwatch.reporter import commit, delivery, envfile
    from clusterwatch.reporter.buffer import Buffer

    state_module.prepare(state_dir)
    with state_module.locked(state_dir):
        previous, damage = state_module.load(state_dir)
        _say_damage(damage)
        buffer = Buffer(state_dir)
        commit.recover(previous, buffer)  # a run killed after its commit: finish it
        record, new_state = record_module.collect(key, sources, previous, time.time(),
                                                  buffer=buffer, state_damage=damage)
        commit.commit(state_dir, buffer, record, new_state)
        try:
            settings = envfile.load_env(env_path)
        except envfile.ConfigError as exc:
            sys.stderr.write("harvester-reporter: {}; the record is buffered\n".format(exc))
            return EXIT_NOT_CONFIGURED
        url, token = settings.get("url"), settings.get("token")
        if not url or not token:
            sys.stderr.write("harvester-reporter: no monitor URL or token in {}; the record "
                             "is buffered\n".format(env_path))
            return EXIT_NOT_CONFIGURED
        outcome = delivery.deliver(buffer, url, token, ca_bundle=settings.get("ca_bundle"))
    if outcome.get("delivered_all"):
        return EXIT_OK
    sys.stderr.write("harvester-reporter: delivery failed ({}); {} record(s) buffered\n".format(
        outcome.get("last_error", "unknown error"), outcome.get("backlog", 0)))
    return EXIT_BUFFERED
