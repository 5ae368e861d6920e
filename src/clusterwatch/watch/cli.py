"""`clusterwatch watch ...`: argument parsing only; the work lives in the other modules."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, Optional

from clusterwatch.errors import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, UsageError

if TYPE_CHECKING:
    from clusterwatch.watch.config import WatchConfig

DESCRIPTION = """\
Check that every expected HTCondor execute node is still in the pool and that every GPU
worker's gpu_vram.prom textfile is still being written (through Prometheus). Without a
verb, run one poll: observe, decide, save the state, deliver queued messages.

Inventories (one name a line, '#' comments; both files must exist, an empty one disables
its check): CONFIG_DIR/expected_nodes (HTCondor Machine names) and CONFIG_DIR/gpu_instances
(Prometheus instance labels, port included). Optional settings: CONFIG_DIR/watch.toml.
Slack: CONFIG_DIR/slack_webhook holds the webhook URL alone, mode 600."""

EPILOG = """\
exit status: 0 poll done (also when it alerted), 1 a source failed (its targets were
'unknown' this poll), the state file was damaged (moved aside, what it held kept) or the
run failed, 2 usage error, 78 configuration error."""


def register(parser: argparse.ArgumentParser) -> None:
    parser.description = DESCRIPTION
    parser.epilog = EPILOG
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    _add_common_options(parser, argparse.SUPPRESS)
    # Given before or after the verb: the verb's copy only fills what was not given before.
    parser.set_defaults(config_dir=None, state_dir=None, prometheus_url=None,
                        condor_status=None)
    common = argparse.ArgumentParser(add_help=False)
    _add_common_options(common, argparse.SUPPRESS)
    parser.set_defaults(handler=_poll)
    verbs = parser.add_subparsers(dest="verb", metavar="[VERB]")

    verbs.add_parser("poll", help="one poll (the default)",
                     parents=[common]).set_defaults(handler=_poll)

    replay = verbs.add_parser(
        "replay", help="run the decision rules over recorded observations (JSON Lines)",
        description="Read one observation per line, e.g. {\"t\": 1700000000.0, \"target\": "
        "\"node:worker.example.org\", \"observation\": \"missing\"}, in time order, and print "
        "one JSON line per decision. Uses the same rules as the poll; records start empty.")
    replay.add_argument("file", metavar="FILE", help="JSON Lines file, or - for stdin")
    replay.set_defaults(handler=_replay)

    verbs.add_parser(
        "exercise", help="show the alert and recovery rules on simulated polls",
        description="Simulate one poll a minute for typical failures (writer stops, resumes, "
        "aging blip, node vanishes and returns, polling gap) and print what the rules decide. "
        "Contacts nothing.",
    ).set_defaults(handler=_exercise)

    verbs.add_parser(
        "discover", help="add newly observed nodes and GPU workers to the inventories",
        parents=[common],
        description="Query condor_status and Prometheus and append names not yet listed. "
        "Never removes a line: to retire a target, stop its advertisement or scrape first, "
        "then delete its line.",
    ).set_defaults(handler=_discover)

    status = verbs.add_parser("status", help="open incidents, message queues, dead letters",
                              parents=[common])
    status.add_argument("--json", action="store_true", help="print JSON")
    status.set_defaults(handler=_status)

    redeliver = verbs.add_parser(
        "redeliver", help="queue dead-lettered messages again, after fixing the channel",
        parents=[common])
    redeliver.add_argument("--channel", metavar="NAME", help="only this channel")
    redeliver.set_defaults(handler=_redeliver)

    _register_silence(verbs, common)

    demo = verbs.add_parser(
        "demo", help="local demonstration with real Prometheus and node_exporter",
        description="Start Prometheus, node_exporter and a loopback fake Slack on 127.0.0.1, "
        "write a gpu_vram.prom with the project's writer (fake nvidia-smi), run the watch "
        "against them and print what Slack received. Needs the Debian packages prometheus "
        "and prometheus-node-exporter.")
    demo.set_defaults(handler=_demo)


SILENCE_EPILOG = """\
MATCHER is KIND:PATTERN, KIND node or gpu, PATTERN a shell-style glob over the target's name
(node:wn1*, gpu:10.1.2.*:9100); matchers of one kind are alternatives, of two kinds both must
hold. A held target is still observed; only its alert waits, and goes out at the first poll
after the silence ends if the incident is still open.

exit status: 0 done, 1 the state file was damaged (moved aside, what it held kept) or the
run failed, 2 usage error (a bad matcher, duration or time, no comment, an unknown id),
78 configuration error."""


class _OneLineParser(argparse.ArgumentParser):
    """A usage error in one line, exit 2: scripts that add silences read it easily."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"clusterwatch: {self.prog}: {message} (see --help)\n")


def _register_silence(verbs: argparse._SubParsersAction[argparse.ArgumentParser],
                      common: argparse.ArgumentParser) -> None:
    silence = verbs.add_parser(
        "silence", help="hold alerts back while you work on targets (add, list, expire)",
        parents=[common], epilog=SILENCE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Silences live in the watch's state, beside its incidents.")
    silence.set_defaults(handler=_silence_usage)
    actions = silence.add_subparsers(dest="silence_action", metavar="ACTION",
                                     parser_class=_OneLineParser)
    common = _OneLineParser(add_help=False)  # the same options, after the action too
    _add_common_options(common, argparse.SUPPRESS)
    add = actions.add_parser(
        "add", parents=[common], epilog=SILENCE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        help="silence targets for a while; prints the new silence's id as its last line")
    # Checked by the handler, not by argparse: a usage error is one line, exit 2.
    add.add_argument("matchers", nargs="*", metavar="MATCHER", help="e.g. node:wn1*")
    add.add_argument("--for", dest="duration", metavar="DURATION",
                     help="how long: 90m, 2h, 3d, 1h30m")
    add.add_argument("--until", metavar="TIME",
                     help="until when: ISO 8601 with a zone, e.g. 2026-12-10T08:00:00Z")
    add.add_argument("--comment", metavar="TEXT", help="why (required)")
    add.add_argument("--author", metavar="NAME", help="who (default: your login name)")
    add.set_defaults(handler=_silence_add)
    listed = actions.add_parser("list", parents=[common],
                                help="active and recently ended silences")
    listed.add_argument("--json", action="store_true", help="print JSON")
    listed.set_defaults(handler=_silence_list)
    expire = actions.add_parser("expire", parents=[common], help="end a silence now")
    expire.add_argument("id", metavar="ID", help="the silence's id (see silence list)")
    expire.set_defaults(handler=_silence_expire)


def _add_common_options(parser: argparse.ArgumentParser, default: object) -> None:
    parser.add_argument("--config-dir", type=Path, metavar="DIR", default=default,
                        help="inventories, watch.toml and slack_webhook "
                             "(default: ~/.config/htcondor-watch)")
    parser.add_argument("--state-dir", type=Path, metavar="DIR", default=default,
                        help="state, lock and health files (default: "
                             "~/.local/state/htcondor-watch)")
    parser.add_argument("--prometheus-url", metavar="URL", default=default,
                        help="Prometheus base URL (default: http://127.0.0.1:9090)")
    parser.add_argument("--condor-status", metavar="PROGRAM", default=default,
                        help="condor_status program (default: found on PATH)")


def _config(args: argparse.Namespace) -> WatchConfig:
    from clusterwatch.watch.config import load_config

    return load_config(args.config_dir, args.state_dir, args.prometheus_url, args.condor_status)


def _poll(args: argparse.Namespace) -> int:
    from clusterwatch.watch.channels import build_channels
    from clusterwatch.watch.poll import run_poll

    config = _config(args)
    result = run_poll(config, build_channels(config))
    for event in result.events:
        print(event.line())
    failed = result.node_error or result.gpu_error or result.state_error
    return EXIT_FAILURE if failed else EXIT_OK


def _replay(args: argparse.Namespace) -> int:
    from clusterwatch.watch.replay import ReplayError, replay, write_decisions

    try:
        handle = sys.stdin if args.file == "-" else open(args.file, encoding="utf-8")  # noqa: SIM115
    except OSError as exc:
        raise UsageError(f"cannot read {args.file}: {exc.strerror}") from None
    try:
        with handle:
            write_decisions(replay(handle), sys.stdout)
    except ReplayError as exc:
        print(f"clusterwatch watch replay: {args.file}: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    except UnicodeDecodeError:
        print(f"clusterwatch watch replay: {args.file}: not UTF-8 text", file=sys.stderr)
        return EXIT_FAILURE
    return EXIT_OK


def _exercise(args: argparse.Namespace) -> int:
    from clusterwatch.watch.exercise import print_exercise

    print_exercise(sys.stdout)
    return EXIT_OK


def _discover(args: argparse.Namespace) -> int:
    from clusterwatch.watch.discover import discover

    result = discover(_config(args), time.time())
    for name in result.added_nodes:
        print(f"added node {name}")
    for name in result.added_gpus:
        print(f"added gpu {name}")
    for error in result.errors:
        print(f"clusterwatch watch discover: {error}", file=sys.stderr)
    return EXIT_FAILURE if result.errors else EXIT_OK


def _status(args: argparse.Namespace) -> int:
    from clusterwatch.errors import EXIT_CONFIG, ConfigError
    from clusterwatch.watch import state
    from clusterwatch.watch.inventory import NODES_FILE, read_inventory
    from clusterwatch.watch.status import print_status

    config = _config(args)
    # The channels' names let an original script's file show its lines queued for them.
    watch_state = state.load(config.state_dir, repair=False,
                             channel_names=[channel.name for channel in config.channels])
    # The expected nodes hold their GPU files as the poll holds them. Status still shows
    # the state when the inventory is broken, and exits 78 as the poll then does.
    node_names: Optional[list[str]]
    try:
        node_names = read_inventory(config.config_dir / NODES_FILE)
    except ConfigError as error:
        print(f"clusterwatch watch status: {error}; polls fail until it is fixed, and what "
              "holds a GPU file's alert is not known", file=sys.stderr)
        node_names = None
    print_status(watch_state, sys.stdout, as_json=args.json, windows=config.windows,
                 node_names=node_names)
    return EXIT_OK if node_names is not None else EXIT_CONFIG


def _redeliver(args: argparse.Namespace) -> int:
    from clusterwatch.watch import state

    config = _config(args)
    with state.locked(config.state_dir, config.lock_timeout_s):
        watch_state = state.load(config.state_dir,
                                 channel_names=[channel.name for channel in config.channels])
        if args.channel and args.channel not in watch_state.outbox.channels:
            raise UsageError(f"no channel named {args.channel!r} in the state")
        count = watch_state.outbox.requeue_dead(args.channel)
        state.save(config.state_dir, watch_state)
    print(f"{count} message(s) queued again; the next poll sends them")
    return EXIT_FAILURE if watch_state.damage else EXIT_OK


def _silence_usage(args: argparse.Namespace) -> int:
    raise UsageError("watch silence needs an action: add, list or expire")


def _silence_add(args: argparse.Namespace) -> int:
    from clusterwatch.watch.silence_cli import add, parse_request

    # Arguments first: a usage error needs no configuration and stores nothing.
    parse_request(args.matchers, args.duration, args.until, args.comment, time.time())
    clean = add(_config(args), args.matchers, args.duration, args.until, args.comment,
                args.author, sys.stdout)
    return EXIT_OK if clean else EXIT_FAILURE


def _silence_list(args: argparse.Namespace) -> int:
    from clusterwatch.watch import state
    from clusterwatch.watch.silence_cli import print_list

    config = _config(args)
    watch_state = state.load(config.state_dir, repair=False,
                             channel_names=[channel.name for channel in config.channels])
    print_list(watch_state.silences, sys.stdout, as_json=args.json)
    return EXIT_OK


def _silence_expire(args: argparse.Namespace) -> int:
    from clusterwatch.watch.silence_cli import expire

    return EXIT_OK if expire(_config(args), args.id, sys.stdout) else EXIT_FAILURE


def _demo(args: argparse.Namespace) -> int:
    from clusterwatch.demo.watch import run_demo  # the demo's harness loads only here

    return run_demo(sys.stdout)
