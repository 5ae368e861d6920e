"""Pilot dispatch (1.6): each queue's actual template, read as the harvester renders it, gives
one exact reading; whatever is unresolved, unreadable or conflicting is unknown with why."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from clusterwatch.reporter.pilot_dispatch import (
    MAX_TEMPLATE_BYTES,
    add_pilot_dispatch,
    pilot_dispatch_for,
)
from clusterwatch.reporter.queue_config import parse_queue_config

from .pilot_dispatch_support import NOT_BOUND, NOW, expected, read


def readings(where: Path, now: float = NOW) -> dict[str, Any]:
    config = parse_queue_config(json.loads((where / "queue_config.json").read_text()))
    section = {"queues": {name: {"status": queue.status, "active": queue.active}
                          for name, queue in config.queues.items()}}
    return add_pilot_dispatch(section, config, read, now)["queues"]  # type: ignore[no-any-return]


def test_it_reads_every_fixture_queue_exactly(installed: Path) -> None:
    assert readings(installed) == expected(installed)


def test_it_hashes_the_template_bytes_as_read(installed: Path) -> None:
    found = readings(installed)["BOUND_PLUS"]["pilot_dispatch"]
    assert found["sha256"] == hashlib.sha256(
        (installed / "bound_plus.sdf").read_bytes()).hexdigest()
    with (installed / "bound_plus.sdf").open("a") as handle:
        handle.write("# edited\n")
    assert readings(installed)["BOUND_PLUS"]["pilot_dispatch"]["sha256"] != found["sha256"]


# One template written inline per case: (template text, the reading's kind, its reason).
Case = tuple[str, str, str]
INLINE: dict[str, Case] = {
    "expression": ('+SingularityImage = ifThenElse(x, "a", "b")\n', "unknown",
                   "+SingularityImage is an expression, not a quoted string"),
    "unquoted": ("+SingularityImage = eic_xl\n", "unknown",
                 "+SingularityImage is an expression, not a quoted string"),
    "macro": ('+SingularityImage = "$(image)"\n', "unknown",
              "+SingularityImage is an HTCondor macro"),
    "placeholder": ("container_image = /images/{computingSite}.sif\n", "unknown",
                    "container_image is a harvester placeholder, filled per worker"),
    "empty": ('MY.SingularityImage = ""\n', "unknown", "MY.SingularityImage is an empty string"),
    "same image twice": ('+SingularityImage = "/i.sif"\ncontainer_image = /i.sif\n',
                         "image_bound", "bound by +SingularityImage, container_image"),
    "lower-case keys": ('+singularityimage = "/i.sif"\n', "image_bound",
                        "bound by +SingularityImage"),
    "continued line": ('+SingularityImage = \\\n  "/i.sif"\n', "image_bound",
                       "bound by +SingularityImage"),
    "positional brace": ("arguments = {}\n", "unknown", "template not read: the harvester "
                         "cannot render it: {} is not one of its placeholders (format raises "
                         "IndexError)"),
    "single brace": ("arguments = }\n", "unknown", "template not read: the harvester cannot "
                     "render it: Single '}' encountered in format string"),
    "literal braces": ('environment = "A={{x}}"\n+SingularityImage = "/i.sif"\n',
                       "image_bound", "bound by +SingularityImage"),
    "CRIC attributes": ('+SingularityImage = "/i.sif"\n{customSubmitAttributes}\n', "unknown",
                        "{customSubmitAttributes} can add CRIC's +SingularityImage after /i.sif"),
    "ALRB in the template": ('arguments = "-c \'setupATLAS -c $IMG\'"\n', "per_job",
                             "ALRB per-job launcher (setupATLAS -c in the template): each job "
                             "runs in its own image"),
    "ALRB variable": ('environment = "ALRB_CONT_RUNPAYLOAD=x"\n', "per_job",
                      "ALRB per-job launcher (ALRB_CONT_RUNPAYLOAD in the template): each job "
                      "runs in its own image"),
    "bad environment": ('environment = "A=\'x"\n', "unknown",
                        "environment cannot be split: No closing quotation"),
    "old environment, switch off": (
        "environment = EPICPROD_PER_JOB_DISPATCH=1;EPICPROD_CONTAINER_LAUNCH=no\n", "unknown",
        "native per-job template, but EPICPROD_CONTAINER_LAUNCH is 'no', not on"),
    "policy only": ('+EpicprodImagePolicyFile = "/p.json"\n', "unknown",
                    "native per-job template, but EPICPROD_PER_JOB_DISPATCH is not set and "
                    "EPICPROD_CONTAINER_LAUNCH is not set"),
}


def write_queue(tmp_path: Path, text: str | bytes, **submitter: str) -> dict[str, Any]:
    path = tmp_path / "t.sdf"
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return {"submitter": dict({"templateFile": str(path)}, **submitter)}


@pytest.mark.parametrize("case", sorted(INLINE))
def test_it_reads_each_inline_case(tmp_path: Path, case: str) -> None:
    text, kind, reason = INLINE[case]
    found = pilot_dispatch_for(write_queue(tmp_path, text), read, NOW)
    assert (found["kind"], found["reason"]) == (kind, reason)
    if kind == "unknown":
        assert found["images"] == [] and found["bootstrap_images"] == []


@pytest.mark.parametrize(("data", "reason"), [
    (b'+SingularityImage = "/i.sif"\n\0', "template not read: it holds a NUL byte"),
    (b'+SingularityImage = "/\xff.sif"\n', "template not read: not UTF-8"),
    (b"#" * (MAX_TEMPLATE_BYTES + 1), f"cannot read the template: larger than "
                                      f"{MAX_TEMPLATE_BYTES} bytes"),
])
def test_it_takes_hostile_template_bytes_as_unknown(tmp_path: Path, data: bytes,
                                                    reason: str) -> None:
    found = pilot_dispatch_for(write_queue(tmp_path, data), read, NOW)
    assert (found["kind"], found["reason"]) == ("unknown", reason)


def test_it_never_blocks_on_a_fifo_in_the_templates_place(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "t.sdf")
    found = pilot_dispatch_for({"submitter": {"templateFile": str(tmp_path / "t.sdf")}},
                               read, NOW)
    assert found == {"kind": "unknown", "images": [], "template": str(tmp_path / "t.sdf"),
                     "sha256": None, "reason": "cannot read the template: not a regular file",
                     "bootstrap_images": []}


def test_it_takes_a_path_with_a_nul_character_as_unreadable(tmp_path: Path) -> None:
    found = pilot_dispatch_for({"submitter": {"templateFile": "/etc/t\0.sdf"}}, read, NOW)
    assert (found["kind"], found["reason"]) == ("unknown", "cannot read the template: "
                                                           "embedded null byte")
    launcher = pilot_dispatch_for(write_queue(
        tmp_path, 'environment = "EPICPROD_PER_JOB_DISPATCH=1 EPICPROD_CONTAINER_LAUNCH=1"\n'
                  "executable = {executableFile}\n", executableFile="/opt/run\0.sh"), read, NOW)
    assert launcher["reason"].endswith("(none read; cannot read /opt/run\0.sh: embedded null "
                                       "byte)")


def test_it_ignores_an_alrb_marker_in_a_launchers_comment(tmp_path: Path) -> None:
    launcher = tmp_path / "run.sh"
    launcher.write_text("#!/bin/sh\n# setupATLAS -c $IMG  (disabled)\nexec pilot\n")
    found = pilot_dispatch_for(write_queue(tmp_path, "executable = {executableFile}\n",
                                           executableFile=str(launcher)), read, NOW)
    assert (found["kind"], found["reason"]) == ("unknown", NOT_BOUND)


def test_it_says_why_a_native_launcher_could_not_be_read(tmp_path: Path) -> None:
    text = ('environment = "EPICPROD_PER_JOB_DISPATCH=1 EPICPROD_CONTAINER_LAUNCH=1"\n'
            f"transfer_input_files = {tmp_path}/gone.sh, launcher.sh, {{logDir}}/x.sh, "
            "https://example.org/l.sh\n")
    found = pilot_dispatch_for(write_queue(tmp_path, text), read, NOW)
    assert found["kind"] == "unknown"
    assert found["reason"] == (
        "native per-job template, but no transferred launcher declares "
        "omit-dispatch-image-filter in EPICPROD_LAUNCHER_FEATURES (none read; {logDir}/x.sh "
        "is a harvester placeholder, filled per worker; https://example.org/l.sh is a URL; "
        f"cannot read {tmp_path}/gone.sh: No such file or directory; launcher.sh is relative "
        "to the submit directory, not known here)")


def test_it_keeps_a_failing_queue_from_losing_the_others(installed: Path) -> None:
    def failing(path: str) -> bytes:
        if path.endswith("alrb.sdf"):
            raise RuntimeError("boom")
        return read(path)

    config = parse_queue_config(json.loads((installed / "queue_config.json").read_text()))
    section = {"queues": {name: {"status": "online"} for name in config.queues}}
    found = add_pilot_dispatch(section, config, failing, NOW)["queues"]
    assert found["ALRB"]["pilot_dispatch"]["reason"] == "reading failed: RuntimeError: boom"
    assert found["BOUND_PLUS"]["pilot_dispatch"]["kind"] == "image_bound"



def test_it_reads_each_file_once_for_every_queue_that_names_it(installed: Path) -> None:
    reads: list[str] = []

    def counting(path: str) -> bytes:
        reads.append(path)
        return read(path)

    document = json.loads((installed / "queue_config.json").read_text())
    for n in range(200):  # 200 more queues on the policy template, one on a missing file
        document[f"MANY_{n}"] = {"templateQueueName": "OSG_TEMPLATE", "submitter": {
            "templateFile": str(installed / "native_policy.sdf")}}
    config = parse_queue_config(document)
    section = {"queues": {name: {"status": "online"} for name in config.queues}}
    found = add_pilot_dispatch(section, config, counting, NOW)["queues"]
    assert found["MANY_199"] == found["NATIVE_POLICY"]
    assert sorted(reads) == sorted(set(reads))
    assert str(installed / "native_policy.sdf") in reads
    assert str(installed / "does-not-exist.sdf") in reads


@pytest.mark.parametrize(("text", "kind", "images", "reason"), [
    # {{tag}} renders as the literal text {tag}: the image is bound, exactly so.
    ('+SingularityImage = "/cvmfs/eic_xl:{{tag}}"\n', "image_bound", ["/cvmfs/eic_xl:{tag}"],
     "bound by +SingularityImage"),
    ("container_image = /i/{{{{x}}}}.sif\n", "image_bound", ["/i/{{x}}.sif"],
     "bound by container_image"),
    # A placeholder with a conversion, a format spec or an index is still filled per worker.
    ('+SingularityImage = "/i/{computingSite!s}.sif"\n', "unknown", [],
     "+SingularityImage is a harvester placeholder, filled per worker"),
    ("container_image = /i/{nCoreTotal:03d}.sif\n", "unknown", [],
     "container_image is a harvester placeholder, filled per worker"),
    ('+SingularityImage = "/i/{{{computingSite}}}.sif"\n', "unknown", [],
     "+SingularityImage is a harvester placeholder, filled per worker"),
])
def test_it_tells_literal_braces_from_placeholders_in_a_binding(
        tmp_path: Path, text: str, kind: str, images: list[str], reason: str) -> None:
    found = pilot_dispatch_for(write_queue(tmp_path, text), read, NOW)
    assert (found["kind"], found["images"], found["reason"]) == (kind, images, reason)


def test_it_ignores_what_is_written_after_the_queue_statement(tmp_path: Path) -> None:
    # HTCondor submits the job at `queue`: a binding after it binds no job the harvester sends.
    text = 'universe = vanilla\nQueue 1\n+SingularityImage = "/after.sif"\n'
    found = pilot_dispatch_for(write_queue(tmp_path, text), read, NOW)
    assert (found["kind"], found["images"], found["reason"]) == ("unknown", [], NOT_BOUND)
    bound = pilot_dispatch_for(write_queue(tmp_path, '+SingularityImage = "/i.sif"\nqueue\n'),
                               read, NOW)
    assert (bound["kind"], bound["images"]) == ("image_bound", ["/i.sif"])


@pytest.mark.parametrize("tail", [
    'EPICPROD_LAUNCHER_FEATURES="container-launch"\n',
    "export EPICPROD_LAUNCHER_FEATURES=\n",
    "unset EPICPROD_LAUNCHER_FEATURES\n",
])
def test_it_takes_the_launchers_last_word_on_its_features(tmp_path: Path, tail: str) -> None:
    # The shell keeps the last assignment: a launcher that withdraws the declaration later
    # does not omit the filter, so its queue must not read as unrestricted.
    launcher = tmp_path / "l.sh"
    launcher.write_text('EPICPROD_LAUNCHER_FEATURES="omit-dispatch-image-filter"\n' + tail)
    text = (f"transfer_input_files = {launcher}\n"
            'environment = "EPICPROD_PER_JOB_DISPATCH=1 EPICPROD_CONTAINER_LAUNCH=1"\n')
    found = pilot_dispatch_for(write_queue(tmp_path, text), read, NOW)
    assert found["kind"] == "unknown"
    assert "no transferred launcher declares omit-dispatch-image-filter" in found["reason"]
    launcher.write_text(tail + 'EPICPROD_LAUNCHER_FEATURES="omit-dispatch-image-filter"\n')
    assert pilot_dispatch_for(write_queue(tmp_path, text), read, NOW)["kind"] == "unrestricted"
