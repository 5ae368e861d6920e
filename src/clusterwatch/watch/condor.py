"""Execute-node observations from `condor_status -af Machine`."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from typing import Optional

QUERY_ARGS = ("-af", "Machine")


@dataclass(frozen=True)
class NodeObservation:
    """Machines seen by one query; `error` set means the query failed: all nodes unknown."""

    machines: frozenset[str] = field(default_factory=frozenset)
    error: Optional[str] = None


def parse_machines(output: str) -> frozenset[str]:
    """One line per slot ad; a machine with many slots counts once."""
    machines = {line.strip() for line in output.splitlines()}
    machines.discard("")
    machines.discard("undefined")  # what -af prints for an ad without a Machine attribute
    return frozenset(machines)


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
    return NodeObservation(machines=parse_machines(output))
