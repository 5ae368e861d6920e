"""Execute-node observations from `condor_status -af Machine LastHeardFrom`.

`LastHeardFrom` is the collector's own time (integer epoch seconds) of the last update it
received from the daemon behind an ad. A node that loses power keeps its ads until
CLASSAD_LIFETIME (900 s by default) after that update; its LastHeardFrom tells sooner that
it has gone quiet (decisions.classify_heard). Where the collector does not publish it, -af
prints `undefined`, and a condor_status that prints the machine alone gives nothing more:
such a machine is present or missing exactly as with `-af Machine`.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Optional

QUERY_ARGS = ("-af", "Machine", "LastHeardFrom")
# -af prints an attribute an ad lacks as `undefined`.
UNDEFINED = "undefined"
# LastHeardFrom is a 32- or 64-bit epoch time: no more than 12 digits is any usable time.
MAX_HEARD_DIGITS = 12

_NO_HEARD: Mapping[str, float] = MappingProxyType({})


@dataclass(frozen=True)
class NodeObservation:
    """Machines seen by one query; `error` set means the query failed: all nodes unknown.

    `heard`: for each machine every one of whose ads carries a LastHeardFrom, the newest;
    `heard_times`: every LastHeardFrom of the answer, for `collector_now`.
    """

    machines: frozenset[str] = field(default_factory=frozenset)
    error: Optional[str] = None
    heard: Mapping[str, float] = field(default_factory=lambda: _NO_HEARD)
    heard_times: tuple[float, ...] = ()


def collector_now(observation: NodeObservation, now: float) -> float:
    """The collector's clock as the answer shows it: its newest LastHeardFrom that is not
    after the poll time `now` (a pool's nodes update every few minutes, spread over the
    interval, so the newest is seconds old), or `now` when there is none.

    Measuring silences on it, a collector clock behind the watch's makes no node look
    silent, and a LastHeardFrom in the future (a clock ahead) is left out.
    """
    return max((t for t in observation.heard_times if t <= now), default=now)


def parse_machines(output: str) -> frozenset[str]:
    """One line per slot ad; a machine with many slots counts once."""
    return parse_observation(output).machines


def parse_observation(output: str) -> NodeObservation:
    """The machines of `-af Machine LastHeardFrom` output, with their LastHeardFrom.

    A line whose last word is neither a whole number nor `undefined` is the machine alone,
    as `-af Machine` prints it. A machine with one ad without a usable LastHeardFrom (the
    machine alone, `undefined`, more digits than any time) has no LastHeardFrom at all: that
    ad may be fresh, and the plain rule, present while any ad is there, is the safe one.
    """
    if " " not in output:  # no LastHeardFrom anywhere: the machines, as -af Machine gave them
        plain_machines = {line.strip() for line in output.splitlines()}
        plain_machines.discard("")
        plain_machines.discard(UNDEFINED)
        return NodeObservation(machines=frozenset(plain_machines))
    machines: set[str] = set()
    newest: dict[str, float] = {}
    plain: set[str] = set()
    times: list[float] = []
    # One line per slot ad, 200,000 in a large pool: the loop is kept to a few calls a line.
    for line in output.splitlines():
        line = line.strip()
        machine, space, word = line.rpartition(" ")
        if not space:
            machine = word  # a condor_status that prints the machine alone
        elif word == UNDEFINED:
            machine = machine.rstrip()
        elif word.isdigit() and word.isascii():  # isdigit alone takes other scripts' digits
            machine = machine.rstrip()
            if len(word) <= MAX_HEARD_DIGITS:
                heard = float(word)
                if machine and machine != UNDEFINED:
                    machines.add(machine)
                    times.append(heard)
                    if heard > newest.get(machine, -1.0):
                        newest[machine] = heard
                continue
        else:
            # the machine alone, as `-af Machine` prints it (a name with a space included:
            # discover refuses it, as before)
            machine = line
        if machine and machine != UNDEFINED:  # else an ad without a Machine attribute
            machines.add(machine)
            plain.add(machine)
    for machine in plain:
        newest.pop(machine, None)
    return NodeObservation(machines=frozenset(machines),
                           heard=MappingProxyType(newest) if newest else _NO_HEARD,
                           heard_times=tuple(times))


def query_machines(command: str, timeout_s: float) -> NodeObservation:
    """Run condor_status; a nonzero exit, a timeout or a failure to run is `unknown`.

    An empty answer from a successful query is taken as it is (every node missing); only a
    failed query is no evidence of absence.
    """
    try:
        completed = subprocess.run(
            [command, *QUERY_ARGS], capture_output=True, timeout=timeout_s, check=False,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return NodeObservation(error=f"timed out after {timeout_s:g} s")
    except OSError as exc:
        return NodeObservation(error=f"cannot run {command}: {exc.strerror or exc}")
    if completed.returncode != 0:
        stderr = completed.stderr.decode("utf-8", "replace").strip().splitlines()
        last = stderr[-1][:300] if stderr else "no message"
        return NodeObservation(error=f"exited {completed.returncode}: {last}")
    try:
        output = completed.stdout.decode("utf-8")
    except UnicodeDecodeError:
        return NodeObservation(error="printed bytes that are not UTF-8")
    return parse_observation(output)
