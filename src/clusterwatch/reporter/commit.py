"""A run's record and the log positions it counted, committed as one atomic step.

The record goes to the delivery buffer and the positions to the state file: two files, and
a run killed between the two writes used to leave the record buffered and the old positions
saved, so the next run counted the same lines again (three kills, every line four times).
So the state file is the commit: one atomic replace writes the new positions together with
the record, as `pending` (its buffer file name and content). Only then is the record copied
into the buffer, and the state written again without it. A run that starts and finds a
`pending` record finishes that step first: it buffers the record under its name unless the
buffer has it already. Killed anywhere, a run has either committed (positions and record
both kept) or not (neither: the next run reads the same lines into its own record).

Python 3.6 compatible, standard library only (see the package docstring).
"""

from typing import Any, Dict, Optional

from clusterwatch.reporter import state as state_module
from clusterwatch.reporter.buffer import Buffer

PENDING = "pending"


def recover(state: Dict[str, Any], buffer: Buffer) -> Optional[str]:
    """Take `pending` out of `state` and make sure its record is buffered; return its name
    (None when there was none). A damaged entry is dropped: the state loader reports it."""
    pending = state.pop(PENDING, None)
    if not isinstance(pending, dict):
        return None
    name, record = pending.get("name"), pending.get("record")
    if not isinstance(name, str) or not isinstance(record, dict):
        return None
    if name not in buffer.names():
        # Killed after the commit, before the buffer had it. (If the buffer has it, the
        # copy was made; the record has not been posted yet: delivery comes after the
        # commit's second write, which drops `pending`.)
        buffer.add(record, name)
    return name


def commit(state_dir: str, buffer: Buffer, record: Dict[str, Any],
           new_state: Dict[str, Any]) -> str:
    """Save `new_state` and buffer `record` as one step; return the record's buffer name.

    Raises OSError when the commit itself could not be written (nothing changed: the next
    run reads the same lines again), or when a later step failed (the next run's `recover`
    finishes it).
    """
    name = buffer.next_name()
    committed = dict(new_state)
    committed[PENDING] = {"name": name, "record": record}
    state_module.save(state_dir, committed)  # the one atomic step
    buffer.add(record, name)
    state_module.save(state_dir, new_state)
    return name
