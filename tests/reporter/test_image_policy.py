"""Image policy (1.7): a policy's images are advertised only while the allocator's matching
active state is fresh; anything else is unknown, with why."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from clusterwatch.reporter.image_policy import DEFAULT_MAX_AGE_S, advertised_images
from clusterwatch.reporter.pilot_dispatch import pilot_dispatch_for

from .pilot_dispatch_support import FIXTURES, read

STATE_AT = 1796173200.0  # 2026-12-02T01:00:00Z, the state fixture's updated_at
NIGHTLY = "/cvmfs/singularity.opensciencegrid.org/eic/eic_ci:nightly"
XL = "/cvmfs/singularity.opensciencegrid.org/eic/eic_xl:25.07-stable"


@pytest.fixture
def policy(tmp_path: Path) -> Path:
    for name in ("image-policy.json", "image-allocator-state.json"):
        shutil.copy(FIXTURES / name, tmp_path / name)
    return tmp_path / "image-policy.json"


def edit_state(policy: Path, changes: dict[str, Any]) -> None:
    path = policy.with_name("image-allocator-state.json")
    state = json.loads(path.read_text())
    state.update(changes)
    path.write_text(json.dumps(state))


def reason(policy: Path, now: float = STATE_AT + 60, max_age_s: int = DEFAULT_MAX_AGE_S) -> str:
    found = advertised_images(str(policy), read, now, max_age_s)
    assert found.images is None
    return found.reason


def test_it_advertises_the_policys_images_the_fresh_state_supplies_in_policy_order(
        policy: Path) -> None:
    found = advertised_images(str(policy), read, STATE_AT + 60)
    assert found.images == [XL, NIGHTLY]  # retired:1 is not the policy's: never advertised
    assert found.evidence == {
        "file": str(policy), "sha256": hashlib.sha256(policy.read_bytes()).hexdigest(),
        "policy": "epic-osg", "state_file": str(policy.with_name("image-allocator-state.json")),
        "state_updated_at": "2026-12-02T01:00:00Z", "state_age_s": 60}


def test_it_takes_three_allocator_periods_as_fresh_by_default(policy: Path) -> None:
    assert DEFAULT_MAX_AGE_S == 3 * 120
    assert advertised_images(str(policy), read, STATE_AT + 360).images == [XL, NIGHTLY]
    assert reason(policy, STATE_AT + 361) == ("the image allocator's state is 361 s old (more "
                                              "than 360 s): the allocator has stopped")


def test_it_takes_the_threshold_as_given(policy: Path) -> None:
    assert reason(policy, STATE_AT + 200, max_age_s=120).startswith(
        "the image allocator's state is 200 s old (more than 120 s)")
    assert advertised_images(str(policy), read, STATE_AT + 900, 1000).images == [XL, NIGHTLY]


def test_it_says_a_clock_is_off_for_a_state_dated_ahead(policy: Path) -> None:
    assert advertised_images(str(policy), read, STATE_AT - 30).images == [XL, NIGHTLY]
    assert reason(policy, STATE_AT - 61) == ("the image allocator's state is dated 61 s ahead "
                                             "of this host's clock: a clock is off")


def test_it_refuses_a_state_of_an_edited_policy(policy: Path) -> None:
    document = json.loads(policy.read_text())
    document["images"].append("/cvmfs/new.sif")
    policy.write_text(json.dumps(document))
    assert reason(policy).startswith("the image allocator's state is for another policy")


@pytest.mark.parametrize(("changes", "why"), [
    ({"policy": "other"}, "the image allocator's state is for another policy (or an older "
                          "version of this one): not the policy in force"),
    ({"status": "stopped"}, "the image allocator's state is \"stopped\", not active"),
    ({"status": None}, "the image allocator's state is null, not active"),
    ({"updated_at": "2026-12-02 01:00:00"}, "the image allocator's state has no updated_at in "
                                            "YYYY-MM-DDTHH:MM:SSZ form"),
    ({"images": []}, "the image allocator supplies none of the policy's images"),
    ({"images": "eic_xl"}, "the image allocator supplies none of the policy's images"),
])
def test_it_takes_a_state_that_does_not_match_as_unknown(policy: Path, changes: dict[str, Any],
                                                         why: str) -> None:
    edit_state(policy, changes)
    assert reason(policy) == why


def test_it_says_which_file_cannot_be_read(policy: Path) -> None:
    state = policy.with_name("image-allocator-state.json")
    state.write_bytes(b'{"policy": "epic-osg", "status": "act')
    assert reason(policy).startswith(f"allocator state {state} is not JSON: ")
    state.unlink()
    assert reason(policy) == (f"cannot read the image allocator's state {state}: No such "
                              "file or directory")
    policy.write_bytes(b"\xff\xfe")
    assert reason(policy).startswith(f"image policy {policy} is not JSON: ")
    policy.unlink()
    assert reason(policy) == f"cannot read image policy {policy}: No such file or directory"


@pytest.mark.parametrize("document", [
    [], {"policy": "p", "images": [], "state_file": "s.json"},
    {"policy": "p", "images": ["a", ""], "state_file": "s.json"},
    {"policy": "p", "images": ["a"]}, {"images": ["a"], "state_file": "s.json"},
])
def test_it_names_the_fields_a_policy_needs(policy: Path, document: Any) -> None:
    policy.write_text(json.dumps(document))
    assert reason(policy) == (f"image policy {policy} needs policy (a name), images (a "
                              "non-empty list of strings) and state_file")


def test_it_makes_a_native_template_unknown_once_the_allocator_stops(tmp_path: Path,
                                                                     policy: Path) -> None:
    launcher = tmp_path / "l.sh"
    launcher.write_text('EPICPROD_LAUNCHER_FEATURES="omit-dispatch-image-filter"\n')
    template = tmp_path / "t.sdf"
    template.write_text(
        f"transfer_input_files = {launcher}\n"
        'environment = "EPICPROD_PER_JOB_DISPATCH=on EPICPROD_CONTAINER_LAUNCH=YES"\n'
        f'MY.EpicprodImagePolicyFile = "{policy}"\n')
    queue = {"submitter": {"templateFile": str(template)}}
    assert pilot_dispatch_for(queue, read, STATE_AT + 100)["images"] == [XL, NIGHTLY]
    stopped = pilot_dispatch_for(queue, read, STATE_AT + 400)
    assert (stopped["kind"], stopped["images"], stopped["reason"]) == (
        "unknown", [], "the image allocator's state is 400 s old (more than 360 s): the "
                       "allocator has stopped")
    assert stopped["policy"]["state_age_s"] == 400


def test_it_refuses_a_relative_or_unresolved_policy_file(tmp_path: Path) -> None:
    launcher = tmp_path / "l.sh"
    launcher.write_text("EPICPROD_LAUNCHER_FEATURES=omit-dispatch-image-filter\n")
    base = (f"transfer_input_files = {launcher}\n"
            "environment = EPICPROD_PER_JOB_DISPATCH=1;EPICPROD_CONTAINER_LAUNCH=1\n")
    template = tmp_path / "t.sdf"
    for line, why in [
        ('+EpicprodImagePolicyFile = "policy.json"', "EpicprodImagePolicyFile policy.json is "
                                                     "relative: the job's directory is not "
                                                     "known here"),
        ('+EpicprodImagePolicyFile = "/p/{computingSite}.json"',
         "EpicprodImagePolicyFile is a harvester placeholder, filled per worker"),
        ("+EpicprodImagePolicyFile = /p.json", "EpicprodImagePolicyFile is not a quoted "
                                               "string"),
    ]:
        template.write_text(base + line + "\n")
        found = pilot_dispatch_for({"submitter": {"templateFile": str(template)}}, read,
                                   STATE_AT)
        assert (found["kind"], found["reason"]) == ("unknown", why)


@pytest.mark.parametrize("document, why", [
    ('{"policy": "p", "images": ["/i"], "state_file": "s\\u0000x.json"}', "embedded null byte"),
    ("[" * 100000 + "]" * 100000, "is not JSON"),
])
def test_it_keeps_the_template_and_its_hash_for_a_policy_that_cannot_be_followed(
        tmp_path: Path, policy: Path, document: str, why: str) -> None:
    # JSON allows a NUL in state_file, and a deeply nested policy exhausts json's recursion:
    # each is this policy's reason, not a failed reading that loses the template's identity.
    policy.write_text(document)
    launcher = tmp_path / "l.sh"
    launcher.write_text("EPICPROD_LAUNCHER_FEATURES=omit-dispatch-image-filter\n")
    template = tmp_path / "t.sdf"
    template.write_text(f"transfer_input_files = {launcher}\n"
                        "environment = EPICPROD_PER_JOB_DISPATCH=1;EPICPROD_CONTAINER_LAUNCH=1\n"
                        f'+EpicprodImagePolicyFile = "{policy}"\n')
    found = pilot_dispatch_for({"submitter": {"templateFile": str(template)}}, read, STATE_AT)
    assert (found["kind"], found["template"], found["sha256"]) == (
        "unknown", str(template), hashlib.sha256(template.read_bytes()).hexdigest())
    assert why in found["reason"] and "reading failed" not in found["reason"]
