"""What the pilot-dispatch tests share: the fixture templates (queue configuration, submit
templates, launchers, the image policy and the allocator's state), the reporter's bounded read,
and the exact reading expected of every fixture queue once the templates are installed in
`where` (tests/reporter/conftest.py: `installed`)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from clusterwatch.reporter.pilot_dispatch import MAX_TEMPLATE_BYTES
from clusterwatch.reporter.regular_read import read_regular

FIXTURES = Path(__file__).with_name("templates")
# The allocator state fixture is dated 2026-12-02T01:00:00Z; two minutes after it.
NOW = 1796173200.0 + 120
EL9 = "/cvmfs/singularity.opensciencegrid.org/opensciencegrid/osgvo-el9:latest"
XL = "/cvmfs/singularity.opensciencegrid.org/eic/eic_xl:{}-stable"
NOT_BOUND = "no image binding, no known per-job launcher, not a native per-job template"


def read(path: str) -> bytes:
    return read_regular(path, MAX_TEMPLATE_BYTES)


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def expected(where: Path) -> dict[str, Any]:
    def entry(status: str, kind: str, reason: str, template: str | None,
              images: tuple[str, ...] = (), bootstrap: tuple[str, ...] = (),
              hashed: bool = True) -> dict[str, Any]:
        path = str(where / template) if template and "/" not in template else template
        return {"status": status, "active": status != "offline", "pilot_dispatch": {
            "kind": kind, "images": list(images), "template": path,
            "sha256": sha(where / template) if hashed and template else None,
            "reason": reason, "bootstrap_images": list(bootstrap)}}

    native = (f"native per-job dispatch and container launch on; {where}/native-launcher.sh "
              "omits the dispatch-image filter")
    policy = entry("online", "unrestricted", native + "; image policy epic-osg: 2 of its 3 "
                   "images supplied by the allocator (120 s ago)", "native_policy.sdf",
                   images=(XL.format("25.07"),
                           "/cvmfs/singularity.opensciencegrid.org/eic/eic_ci:nightly"))
    policy["pilot_dispatch"]["policy"] = {
        "file": f"{where}/image-policy.json", "sha256": sha(where / "image-policy.json"),
        "policy": "epic-osg", "state_file": f"{where}/image-allocator-state.json",
        "state_updated_at": "2026-12-02T01:00:00Z", "state_age_s": 120}
    return {
        "ALRB": entry("online", "per_job", "ALRB per-job launcher (setupATLAS -c in "
                      f"{where}/alrb-launcher.sh): each job runs in its own image",
                      "alrb.sdf", bootstrap=(EL9,)),
        "BOUND_COMMENTED": entry("online", "unknown", NOT_BOUND, "bound_commented.sdf"),
        "BOUND_CONTAINER": entry("online", "image_bound", "bound by container_image",
                                 "bound_container.sdf",
                                 images=("docker://eicweb/eic_xl:25.07-stable",)),
        "BOUND_MY": entry("brokeroff", "image_bound", "bound by MY.SingularityImage",
                          "bound_my.sdf", images=(XL.format("25.06"),)),
        "BOUND_PLUS": entry("online", "image_bound", "bound by +SingularityImage",
                            "bound_plus.sdf", images=(XL.format("25.07"),)),
        "CONFLICTING": entry("offline", "unknown", "conflicting image bindings: "
                             f"+SingularityImage {XL.format('25.07')}; container_image "
                             f"{XL.format('25.06')}", "conflicting.sdf"),
        "MISSING": entry("online", "unknown", "cannot read the template: No such file or "
                         "directory", "does-not-exist.sdf", hashed=False),
        "NATIVE": entry("online", "unrestricted", native + "; no image policy: any job's image",
                        "native.sdf", bootstrap=(EL9,)),
        "NATIVE_NO_CONTAINER": entry("online", "unknown", "native per-job template, but "
                                     "EPICPROD_CONTAINER_LAUNCH is '0', not on",
                                     "native_no_container.sdf"),
        "NATIVE_NO_PER_JOB": entry("online", "unknown", "native per-job template, but "
                                   "EPICPROD_PER_JOB_DISPATCH is not set",
                                   "native_no_per_job.sdf"),
        "NATIVE_OLD_LAUNCHER": entry(
            "online", "unknown", "native per-job template, but no transferred launcher "
            "declares omit-dispatch-image-filter in EPICPROD_LAUNCHER_FEATURES "
            f"({where}/runpilot3-wrapper.sh, {where}/native-launcher-old.sh)",
            "native_old_launcher.sdf"),
        "NATIVE_POLICY": policy,
        "NOT_A_FILE": entry("online", "unknown", "cannot read the template: not a regular "
                            "file", "a-directory.sdf", hashed=False),
        "NO_TEMPLATE_FILE": entry("online", "unknown", "no submitter.templateFile (a template "
                                  "chosen per CE from CEtemplateDir is not read)", None),
        "RELATIVE": entry("online", "unknown", "templateFile is relative: the harvester's "
                          "working directory is not known", "templates/bound_plus.sdf",
                          hashed=False),
        "UNKNOWN_PLACEHOLDER": entry(
            "online", "unknown", "template not read: the harvester cannot render it: "
            "{imageTag} is not one of its placeholders (format raises KeyError)",
            "unknown_placeholder.sdf"),
    }
