"""`clusterwatch jobs <verb>`: serve, collect, push. Working modules load inside the handlers."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import sys
import threading
import time
from typing import TYPE_CHECKING

from clusterwatch.errors import EXIT_FAILURE, EXIT_OK, RunError, UsageError

if TYPE_CHECKING:
    from clusterwatch.jobs.exporter import JobsCollector
    from clusterwatch.jobs.push import Pusher

log = logging.getLogger(__name__)

DEFAULT_LISTEN = ":9306"

_DESCRIPTION = """\
Per-job metrics of the batch jobs running on this node, for Prometheus. Jobs are found from
their cgroup directories (Slurm cgroup v1 and v2 including SLUID directories, HTCondor slot
cgroups), their processes from every cgroup.procs below the job, and each process from
/proc: CPU seconds, memory (rss, cache, shmem, usage, peak, limit), processes, threads,
open files, I/O bytes and operations, scratch use, GPUs. Every series is labelled with
jobid and user; jobs_info carries account, partition and the cgroup path.
Run as root: other users' /proc/<pid>/io and environ are unreadable otherwise."""

_EPILOG = """\
Exit status: 0 ok (serve and push --interval: stopped by SIGTERM or SIGINT), 1 failure
(address in use, gateway unreachable), 2 usage error. Metric names: docs/jobs.md."""


def register(parser: argparse.ArgumentParser) -> None:
    parser.description = _DESCRIPTION
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    verbs = parser.add_subparsers(dest="verb", metavar="VERB")
    verbs.required = True

    serve = _verb(verbs, "serve", "serve /metrics over HTTP for Prometheus to scrape",
                  "Serve /metrics over HTTP, computed at each scrape, until SIGTERM/SIGINT.")
    serve.add_argument(
        "--listen", default=DEFAULT_LISTEN, metavar="HOST:PORT",
        help="address to listen on: HOST:PORT, :PORT for every IPv4 address, [IPV6]:PORT "
        "(default: %(default)s)")
    serve.set_defaults(handler=_serve)

    collect = _verb(verbs, "collect", "print one collection in the text exposition format",
                    "Collect once and print the metrics in Prometheus' text format on stdout.")
    collect.set_defaults(handler=_collect)

    push = _verb(verbs, "push", "push to a Pushgateway, one group per job (original setup)",
                 "Push every job's metrics to a Pushgateway as the group job=<job>, "
                 "instance=<node>, jobid=<id>, and delete the groups of jobs that ended. "
                 "Scrape the gateway with honor_labels: true.")
    push.add_argument("--gateway", required=True, metavar="URL",
                      help="the Pushgateway's base URL, e.g. http://127.0.0.1:9091")
    push.add_argument("--interval", type=_seconds, default=None, metavar="SECONDS",
                      help="push every SECONDS until SIGTERM/SIGINT (default: push once)")
    push.add_argument("--instance", default=socket.gethostname(), metavar="NAME",
                      help="the instance label of the groups (default: this host's name, "
                      "%(default)s)")
    push.add_argument("--job", default="jobs_exporter", metavar="NAME",
                      help="the job label of the groups (default: %(default)s)")
    push.set_defaults(handler=_push)


def _verb(verbs: argparse._SubParsersAction[argparse.ArgumentParser], name: str,
          help_text: str, description: str) -> argparse.ArgumentParser:
    parser = verbs.add_parser(name, help=help_text, description=description, epilog=_EPILOG)
    parser.add_argument("--cgroup-root", default="/sys/fs/cgroup", metavar="DIR",
                        help="where the cgroup hierarchies are mounted (default: %(default)s)")
    parser.add_argument("--proc-root", default="/proc", metavar="DIR",
                        help="the proc filesystem (default: %(default)s)")
    parser.add_argument("--scratch", action="append", default=[], metavar="PATH",
                        help="a scratch filesystem's absolute path, for jobs_uses_scratch; "
                        "repeat for several (default: none, and no jobs_uses_scratch)")
    parser.add_argument("--scheduler", choices=("auto", "slurm", "htcondor"), default="auto",
                        help="which schedulers' cgroup layouts to look for (default: "
                        "%(default)s, every layout)")
    return parser


def _seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 < seconds < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds: {text!r}")
    return seconds


def _collector(args: argparse.Namespace) -> JobsCollector:
    from clusterwatch.jobs.exporter import JobsCollector
    from clusterwatch.jobs.file_reader import raise_open_files_limit

    for option, path in (("--cgroup-root", args.cgroup_root), ("--proc-root", args.proc_root)):
        if not os.path.isdir(path):
            raise UsageError(f"{option} {path}: not a directory")
    for path in args.scratch:
        if not os.path.isabs(path):
            raise UsageError(f"--scratch {path}: give an absolute path")
    # Files read at every collection stay open between collections (about four per job
    # process): allow what the hard limit allows.
    raise_open_files_limit()
    return JobsCollector(args.cgroup_root, args.proc_root, args.scratch, args.scheduler)


def _collect(args: argparse.Namespace) -> int:
    from clusterwatch.jobs.exposition import TEXT

    sys.stdout.write(_collector(args).exposition(TEXT).decode("utf-8"))
    return EXIT_OK


def _serve(args: argparse.Namespace) -> int:
    from clusterwatch.jobs import serve

    try:
        host, port = serve.parse_listen(args.listen)
    except ValueError as exc:
        raise UsageError(f"--listen: {exc}") from None
    collector = _collector(args)
    try:
        server = serve.bind(collector, host, port)
    except OSError as exc:
        raise RunError(f"cannot listen on {args.listen}: {exc.strerror or exc}") from None
    log.info("serving job metrics on %s port %d, path /metrics", host or "every IPv4 address",
             server.server_port)
    serve.serve_until_signalled(server)
    return EXIT_OK


def _push(args: argparse.Namespace) -> int:
    from clusterwatch.jobs import push

    collector = _collector(args)
    try:
        pusher = push.Pusher(collector, args.gateway, args.instance, args.job)
    except ValueError as exc:
        raise UsageError(f"--gateway: {exc}") from None
    if args.interval is None:
        try:
            pushed, deleted = pusher.push_once()
        except push.PushError as exc:
            log.error("%s", exc)
            return EXIT_FAILURE
        log.info("pushed %d job(s), deleted %d ended job group(s)", pushed, deleted)
        return EXIT_OK
    return _push_forever(pusher, args.interval)


def _push_forever(pusher: Pusher, interval: float) -> int:
    from clusterwatch.jobs.push import PushError

    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set())
                for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        while not stop.is_set():
            started = time.monotonic()
            try:
                pusher.push_once()
            except PushError as exc:
                log.error("%s; next try in %g s", exc, interval)
            stop.wait(max(0.0, interval - (time.monotonic() - started)))
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return EXIT_OK
