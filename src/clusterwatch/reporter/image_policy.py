"""Image policy (telemetry 1.7): which images a native per-job pilot may be advertised for.

A native template names its policy file (`+EpicprodImagePolicyFile = "/path"`). The policy
says which images the site means to supply; the image allocator (run every two minutes)
writes a state file saying which of them it supplies now. The reporter advertises the
policy's images only while that state is the allocator's *active* state *for this very
policy file* (its SHA-256) and *fresh*: a stopped allocator, an edited policy it has not
picked up, or a state file from another policy must never keep authorising work for an image
nobody supplies. Both formats are the project's own (no public source defines them); see
docs/reporter.md "Pilot dispatch and image policy".

Policy file (JSON object): `policy` (a name), `images` (non-empty list of image strings),
`state_file` (the allocator's state file; relative to the policy file's directory).

State file (JSON object, replaced atomically by the allocator each run): `policy` (the
name), `policy_sha256` (of the policy file's bytes it read), `status` (`active` while it
supplies images; anything else, e.g. `stopped` or `draining`, is not), `updated_at` (UTC,
`YYYY-MM-DDTHH:MM:SSZ`), `images` (the images it supplies now).

Python 3.6 compatible, standard library only (see the package docstring). Pure: the reader
and the clock are parameters.
"""

import calendar
import hashlib
import json
import os
import time
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Tuple

DEFAULT_MAX_AGE_S = 360  # three allocator periods of two minutes
CLOCK_SKEW_S = 60  # a state dated further ahead than this says a clock is off
ReadFile = Callable[[str], bytes]


class PolicyReading(NamedTuple):
    """`images`: what may be advertised (None: nothing, see `reason`); `evidence` for the
    record."""

    images: Optional[List[str]]
    reason: str
    evidence: Dict[str, Any]


def _document(read_file: ReadFile, path: str, cannot: str,
              what: str) -> Tuple[Any, bytes, Optional[str]]:
    """The decoded JSON at `path`, its bytes, and why not (None when read)."""
    try:
        data = read_file(path)
    except (OSError, ValueError) as exc:  # ValueError: a state_file with a NUL character
        return None, b"", "{} {}: {}".format(cannot, path, getattr(exc, "strerror", None)
                                             or exc)
    try:
        return json.loads(data.decode("utf-8")), data, None
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:  # deep nesting
        return None, data, "{} {} is not JSON: {}".format(what, path, exc)


def _strings(value: Any) -> Optional[List[str]]:
    if not isinstance(value, list) or not all(isinstance(item, str) and item
                                              for item in value):
        return None
    return list(value)


def _utc(text: Any) -> Optional[float]:
    if not isinstance(text, str):
        return None
    try:
        return float(calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%SZ")))
    except ValueError:
        return None


def advertised_images(policy_path: str, read_file: ReadFile, now: float,
                      max_age_s: int = DEFAULT_MAX_AGE_S) -> PolicyReading:
    """The policy's images the allocator's matching, active, fresh state supplies."""
    evidence = {"file": policy_path, "sha256": None}  # type: Dict[str, Any]
    policy, data, why = _document(read_file, policy_path, "cannot read image policy",
                                  "image policy")
    if why is not None:
        return PolicyReading(None, why, evidence)
    evidence["sha256"] = hashlib.sha256(data).hexdigest()
    images = _strings(policy.get("images")) if isinstance(policy, dict) else None
    state_file = policy.get("state_file") if isinstance(policy, dict) else None
    name = policy.get("policy") if isinstance(policy, dict) else None
    if not images or not isinstance(state_file, str) or not state_file \
            or not isinstance(name, str):
        return PolicyReading(None, "image policy {} needs policy (a name), images (a "
                             "non-empty list of strings) and state_file".format(policy_path),
                             evidence)
    state_path = os.path.join(os.path.dirname(policy_path), state_file)
    evidence.update(policy=name, state_file=state_path, state_updated_at=None)
    state, _, why = _document(read_file, state_path, "cannot read the image allocator's "
                              "state", "allocator state")
    if why is not None:
        return PolicyReading(None, why, evidence)
    if not isinstance(state, dict):
        return PolicyReading(None, "allocator state {} is not an object".format(state_path),
                             evidence)
    if state.get("policy") != name or state.get("policy_sha256") != evidence["sha256"]:
        return PolicyReading(None, "the image allocator's state is for another policy (or "
                             "an older version of this one): not the policy in force",
                             evidence)
    updated = _utc(state.get("updated_at"))
    evidence["state_updated_at"] = state.get("updated_at") if updated is not None else None
    if state.get("status") != "active":
        return PolicyReading(None, "the image allocator's state is {}, not active".format(
            json.dumps(state.get("status"))), evidence)
    if updated is None:
        return PolicyReading(None, "the image allocator's state has no updated_at in "
                             "YYYY-MM-DDTHH:MM:SSZ form", evidence)
    age = int(now - updated)
    evidence["state_age_s"] = age
    if age < -CLOCK_SKEW_S:
        return PolicyReading(None, "the image allocator's state is dated {} s ahead of this "
                             "host's clock: a clock is off".format(-age), evidence)
    if age > max_age_s:
        return PolicyReading(None, "the image allocator's state is {} s old (more than {} "
                             "s): the allocator has stopped".format(age, max_age_s), evidence)
    supplied = _strings(state.get("images")) or []
    found = [image for image in images if image in supplied]
    if not found:
        return PolicyReading(None, "the image allocator supplies none of the policy's "
                             "images", evidence)
    return PolicyReading(found, "image policy {}: {} of its {} images supplied by the "
                         "allocator ({} s ago)".format(name, len(found), len(images), max(age, 0)),
                         evidence)
