"""Writes the observations of the replay recordings in this folder (never their decisions).

    python tests/watch/recordings/generate.py

Each `NAME.jsonl` is one poll a minute of a small pool, in `clusterwatch watch replay`'s
format; `NAME.decisions.jsonl` is what `clusterwatch watch replay NAME.jsonl` printed when the
recording was made, and tests/watch/test_recordings.py holds every later version of the
watch to it. Only the observations are generated here: the decisions are the record of what
the watch decided, so a change of rules shows as a failing test, not as a regenerated file.

- `pool_day.jsonl`: two hours of 6 nodes and 4 GPU workers with the events the rules are
  about (a node that goes and comes back, a condor_status that fails, a 4-minute gap, a
  clock stepping back, a writer that stops and resumes, bad rows), in the plain format.
- `node_power_loss.jsonl`: worker03 loses power at 14:03:00; its last update reached the
  collector at 14:00:00 (UPDATE_INTERVAL 300 s) and the collector keeps its ads until
  CLASSAD_LIFETIME (900 s) after that, to 14:15:00; power is back at 14:50:00. The plain
  format: what `condor_status -af Machine` shows.
- `node_power_loss_last_heard.jsonl`: the same polls as `condor_status -af Machine
  LastHeardFrom` shows them: each present node's `last_heard`, and the poll's
  `newest_heard` (the newest LastHeardFrom of the whole answer: the collector's clock).
"""

from __future__ import annotations

import calendar
import json
import random
from pathlib import Path
from typing import Any, Optional

HERE = Path(__file__).resolve().parent
T0 = float(calendar.timegm((2026, 10, 2, 13, 50, 0)))  # the first poll of every recording
UPDATE_INTERVAL_S = 300
CLASSAD_LIFETIME_S = 900


def _write(name: str, lines: list[dict[str, Any]]) -> None:
    with (HERE / name).open("w", encoding="utf-8") as out:
        for line in lines:
            out.write(json.dumps(line) + "\n")


def pool_day() -> list[dict[str, Any]]:
    rnd = random.Random(21)
    nodes = [f"node:worker{n:02d}.example.org" for n in range(1, 7)]
    gpus = [f"gpu:192.0.2.{10 + n}:9100" for n in range(4)]
    lines: list[dict[str, Any]] = []
    clock = T0
    for minute in range(120):
        if 40 <= minute < 44:
            clock += 60
            continue  # the watch host stopped: a gap of more than 180 s
        t = clock + (-90 if minute == 80 else 0)  # the clock steps back once
        condor_failed = minute in (20, 21)
        for n, node in enumerate(nodes):
            if condor_failed:
                word = "unknown"
            elif n == 1 and 10 <= minute < 60:
                word = "missing"  # worker02 gone for 50 minutes
            elif n == 4 and minute % 17 == 0 and minute:
                word = "missing"  # worker05 drops out of one answer now and then
            elif n == 5 and 70 <= minute < 82:
                word = "missing"  # worker06: 12 minutes, across the clock step
            else:
                word = "present"
            lines.append({"t": t, "target": node, "observation": word})
        for n, gpu in enumerate(gpus):
            observation: Any
            if minute == 90:
                observation = "unknown"  # Prometheus failed
            elif n == 0 and 30 <= minute < 70:
                observation = T0 + 30 * 60 - 5  # the writer stopped at minute 30
            elif n == 1 and minute in (15, 16):
                observation = "invalid"
            elif n == 2 and 50 <= minute < 75:
                observation = "missing"
            elif n == 3 and minute == 100:
                observation = t + 3600.0  # a future mtime
            else:
                observation = round(t - rnd.uniform(0, 30), 3)
            lines.append({"t": t, "target": gpu, "observation": observation})
        clock += 60
    return lines


def _power_loss(last_heard: bool) -> list[dict[str, Any]]:
    """Nine healthy nodes and worker03, which loses power at 14:03:00 and is back at 14:50."""
    nodes = [f"worker{n:02d}.example.org" for n in range(1, 11)]
    # UPDATE_OFFSET spreads the nodes' updates over the interval: node n updates at
    # second 30 * n of every 300 s (worker03 at :00, :05, ...).
    offsets = {name: (30 * n) % UPDATE_INTERVAL_S for n, name in enumerate(nodes, start=-2)}
    lost, back = T0 + 13 * 60, T0 + 60 * 60  # 14:03:00, 14:50:00
    lines: list[dict[str, Any]] = []
    for minute in range(90):
        t = T0 + minute * 60
        heard: dict[str, Optional[float]] = {}
        for name in nodes:
            updates_since = t - offsets[name]
            last = updates_since - updates_since % UPDATE_INTERVAL_S + offsets[name]
            if name == "worker03.example.org":
                last_before_loss = lost - (lost - offsets[name]) % UPDATE_INTERVAL_S
                if lost <= t < back:
                    last = last_before_loss
                elif t >= back:
                    last = max(back, last)  # the startd updates when it starts
            ad_alive = t - last < CLASSAD_LIFETIME_S
            heard[name] = last if ad_alive else None
        newest = max(value for value in heard.values() if value is not None)
        for name in nodes:
            line: dict[str, Any] = {"t": t, "target": "node:" + name,
                                    "observation": "missing" if heard[name] is None
                                    else "present"}
            if last_heard and heard[name] is not None:
                line["last_heard"] = heard[name]
                line["newest_heard"] = newest
            lines.append(line)
    return lines


def main() -> None:
    _write("pool_day.jsonl", pool_day())
    _write("node_power_loss.jsonl", _power_loss(last_heard=False))
    _write("node_power_loss_last_heard.jsonl", _power_loss(last_heard=True))


if __name__ == "__main__":
    main()
