"""The timing reference for `bench_poll_process.py`: the pool watch as a plain script.

What a careful operator writes from the original guide, standard library only: one
`condor_status -af Machine` call, one Prometheus instant query, a dict per target run
through the spec's rules, the whole state rewritten as JSON in the original script's layout
(`{"targets": {T: {"last", "bad", "good", "first_stamp", "alerted"}}, "pending": [LINE],
"retry_after": T}`, state_original.py reads it) and one Slack batch of up to 10 lines.

It is a yardstick, not a watch: it writes the state once, after the Slack batch (the
cheapest order; the spec wants the transitions durable before any send), and it knows
no silences, no other channels and no damaged files. It keeps what costs time: the same
inputs parsed whole, every target's record read and written each poll, the file fsync'd
and renamed.

    python benchmarks/reference_poll.py CONFIG_DIR STATE_DIR PROMETHEUS_URL CONDOR_STATUS
"""

import json
import math
import os
import subprocess
import sys
import time
import urllib.parse
import urllib.request

FAIL, RECOVER, MAX_GAP, FRESH = 900.0, 600.0, 180.0, 120.0
QUERY = ('node_textfile_mtime_seconds{job="node",file=~"(.*/)?gpu_vram[.]prom"} '
         'and on (job, instance) (up{job="node"} == 1)')


def inventory(path):
    names = []
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            line = line.strip()
            if line and not line.startswith("#"):
                names.append(line)
    return names


def machines(condor_status):
    """The machines seen, or None when the query failed (every node unknown)."""
    try:
        done = subprocess.run([condor_status, "-af", "Machine"], capture_output=True,
                              timeout=15)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    return {line.strip() for line in done.stdout.decode().splitlines() if line.strip()}


def gpu_mtimes(url, now):
    """instance -> mtime (None: unknown for that worker), or None when the answer failed."""
    body = urllib.parse.urlencode({"query": QUERY, "time": f"{now:.3f}"}).encode()
    try:
        with urllib.request.urlopen(url.rstrip("/") + "/api/v1/query", body,  # noqa: S310
                                    timeout=10) as response:
            answer = json.load(response)
    except (OSError, ValueError):
        return None
    if answer.get("status") != "success" or answer.get("warnings"):
        return None
    if answer["data"]["resultType"] != "vector":
        return None
    mtimes = {}
    for row in answer["data"]["result"]:
        instance = row["metric"].get("instance")
        if not instance:
            return None
        try:
            value = float(row["value"][1])
        except (ValueError, TypeError, IndexError):
            value = None
        if instance in mtimes or (value is not None and not math.isfinite(value)):
            value = None
        mtimes[instance] = value
    return mtimes


def step(record, target, now, status, lines, mtime=None):
    """The spec's rules for one target; appends a message line on a transition."""
    last = record.get("last")
    record["last"] = now
    if status == "unknown" or (last is not None and (now < last or now - last > MAX_GAP)):
        record["bad"] = record["good"] = record["first_stamp"] = None
    if status == "unknown":
        return
    if status in ("missing", "stale"):
        record["good"] = record["first_stamp"] = None
        if record.get("alerted"):
            return
        if status == "missing" and record.get("bad") is None:
            record["bad"] = now
        if status == "stale" or now - record["bad"] >= FAIL:
            record["bad"] = None
            record["alerted"] = now
            lines.append(f"{stamp(now)} ALERT {target} ({status})")
        return
    record["bad"] = None
    if status == "aging" or not record.get("alerted"):
        record["good"] = record["first_stamp"] = None
        return
    if record.get("good") is None:
        record["good"], record["first_stamp"] = now, mtime
        return
    if now - record["good"] < RECOVER:
        return
    if status == "fresh" and not (record["first_stamp"] and mtime > record["first_stamp"]):
        return
    record["alerted"] = False
    record["good"] = record["first_stamp"] = None
    lines.append(f"{stamp(now)} RECOVER {target} ({status})")


def stamp(t):
    return time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(t))


def classify(now, mtime):
    if mtime is None or mtime <= 0 or mtime > now:
        return "unknown"
    age = now - mtime
    return "stale" if age >= FAIL else "fresh" if age <= FRESH else "aging"


def send(webhook, lines):
    body = json.dumps({"text": "\n".join(lines)}).encode()
    # The URLs are the loopback fakes' (http), as the benchmark gives them.
    request = urllib.request.Request(webhook, body,  # noqa: S310
                                     {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
            return response.status == 200 and response.read() == b"ok"
    except OSError:
        return False


def save(state_dir, state):
    path = os.path.join(state_dir, "state.json")
    temporary = path + ".tmp"
    with open(temporary, "w", encoding="utf-8") as out:
        json.dump(state, out)
        out.flush()
        os.fsync(out.fileno())
    os.replace(temporary, path)
    directory = os.open(state_dir, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def main(config_dir, state_dir, prometheus_url, condor_status):
    nodes = inventory(os.path.join(config_dir, "expected_nodes"))
    gpus = inventory(os.path.join(config_dir, "gpu_instances"))
    with open(os.path.join(config_dir, "slack_webhook"), encoding="utf-8") as secret:
        webhook = secret.read().strip()
    os.makedirs(state_dir, mode=0o700, exist_ok=True)
    try:
        with open(os.path.join(state_dir, "state.json"), encoding="utf-8") as saved:
            state = json.load(saved)
    except FileNotFoundError:
        state = {"targets": {}, "pending": [], "retry_after": None}
    now = time.time()
    seen = machines(condor_status)
    mtimes = gpu_mtimes(prometheus_url, now)
    old, targets, lines = state["targets"], {}, state["pending"]
    for name in nodes:
        target = "node:" + name
        record = old.get(target) or {}
        status = "unknown" if seen is None else "present" if name in seen else "missing"
        step(record, target, now, status, lines)
        targets[target] = record
    for instance in gpus:
        target = "gpu:" + instance
        record = old.get(target) or {}
        if mtimes is None:
            status, mtime = "unknown", None
        elif instance not in mtimes:
            status, mtime = "missing", None
        else:
            mtime = mtimes[instance]
            status = classify(now, mtime)
        step(record, target, now, status, lines, mtime)
        targets[target] = record
    state["targets"] = targets
    if lines and (state.get("retry_after") or 0) <= now and send(webhook, lines[:10]):
        del lines[:10]
    save(state_dir, state)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:5]))
