"""Pilot dispatch (telemetry 1.6): which payload images a queue's pilots can run, read from
the queue's actual `submitter.templateFile` and the launcher it transfers.

Kinds (docs/reporter.md "Pilot dispatch and image policy" says each rule and marker):

- `image_bound`: one literal image bound by `+SingularityImage`, `MY.SingularityImage` or
  `container_image`: the pilot runs only jobs of that image;
- `per_job`: a known per-job launcher (ALRB) in the template or a transferred launcher: each
  job runs in its own image, nested in any bound image (then a bootstrap image);
- `unrestricted`: a native per-job template whose environment enables per-job dispatch and
  container launching and whose transferred launcher declares that it omits the
  dispatch-image filter; with an image policy, only the policy's images while the allocator's
  state is fresh (`image_policy`);
- `unknown` otherwise, with the reason. Unknown never implies compatibility.

Python 3.6 compatible, standard library only (see the package docstring). Pure: the file
reader and the clock are parameters.
"""

import hashlib
import os
import re
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from clusterwatch.reporter import image_policy, submit_template

MAX_TEMPLATE_BYTES = 1 << 20
PER_JOB_SWITCH = "EPICPROD_PER_JOB_DISPATCH"
CONTAINER_SWITCH = "EPICPROD_CONTAINER_LAUNCH"
SWITCH_ON = ("1", "true", "yes", "on")
POLICY_ATTRIBUTE = "EpicprodImagePolicyFile"
FEATURES_VARIABLE = "EPICPROD_LAUNCHER_FEATURES"
OMIT_FILTER = "omit-dispatch-image-filter"
# ALRB's container launch (setupATLAS is an alias of atlasLocalSetup.sh) and the variable the
# pilot's alrb_wrapper sets to run the payload inside it; comment lines never count.
ALRB_MARKERS = (("setupATLAS -c", re.compile(r"\bsetupATLAS[ \t]+(?:\S+[ \t]+)*?-c\b")),
                ("atlasLocalSetup.sh -c",
                 re.compile(r"atlasLocalSetup\.sh[ \t]+(?:\S+[ \t]+)*?-c\b")),
                ("ALRB_CONT_RUNPAYLOAD", re.compile(r"\bALRB_CONT_RUNPAYLOAD\b")))
# An assignment (its words) or an unset (no words), in file order: the shell keeps the last.
_FEATURES = re.compile(r"^\s*(?:(?:export\s+)?" + FEATURES_VARIABLE + r"=[\"']?([^\"'\n]*)|"
                       r"unset\s+" + FEATURES_VARIABLE + r"\s*$)", re.MULTILINE)
ReadFile = Callable[[str], bytes]


def _reading(kind: str, reason: str, template: Optional[str], sha256: Optional[str],
             images: Optional[List[str]] = None,
             bootstrap: Optional[List[str]] = None) -> Dict[str, Any]:
    return {"kind": kind, "images": images or [], "template": template, "sha256": sha256,
            "reason": reason, "bootstrap_images": bootstrap or []}


def _code_lines(text: str) -> str:
    """Shell or submit text without its comment lines."""
    return "\n".join(line for line in text.split("\n") if not line.lstrip().startswith("#"))


def _alrb_marker(text: str) -> Optional[str]:
    code = _code_lines(text)
    for name, pattern in ALRB_MARKERS:
        if pattern.search(code):
            return name
    return None


def _omits_filter(text: str) -> bool:
    words = _FEATURES.findall(_code_lines(text))
    return bool(words) and OMIT_FILTER in words[-1].replace(",", " ").split()


def _launchers(template: submit_template.Template, settings: Mapping[str, Any],
               read_file: ReadFile) -> Tuple[List[Dict[str, Any]], List[str]]:
    """Each launcher read (`path`, `sha256`, `text`), and why each other could not be."""
    submitter = settings.get("submitter")
    executable = submitter.get("executableFile") if isinstance(submitter, dict) else None
    paths, problems = submit_template.launcher_paths(
        template, executable if isinstance(executable, str) else None)
    read = []  # type: List[Dict[str, Any]]
    for path in paths:
        if not os.path.isabs(path):
            problems.append("{} is relative to the submit directory, not known here".format(
                path))
            continue
        try:
            data = read_file(path)
        except (OSError, ValueError) as exc:
            problems.append("cannot read {}: {}".format(
                path, getattr(exc, "strerror", None) or exc))
            continue
        read.append({"path": path, "sha256": hashlib.sha256(data).hexdigest(),
                     "text": data.decode("utf-8", "replace")})
    return read, problems


def _switches_off(environment: Dict[str, str]) -> List[str]:
    return ["{} is {}".format(name, "not set" if name not in environment else
                              "{!r}, not on".format(environment[name]))
            for name in (PER_JOB_SWITCH, CONTAINER_SWITCH)
            if environment.get(name, "").strip().lower() not in SWITCH_ON]


def pilot_dispatch_for(settings: Mapping[str, Any], read_file: ReadFile, now: float,
                       image_state_max_age_s: int = image_policy.DEFAULT_MAX_AGE_S
                       ) -> Dict[str, Any]:
    """The `pilot_dispatch` reading of one effective (merged) queue's `settings`."""
    submitter = settings.get("submitter")
    path = submitter.get("templateFile") if isinstance(submitter, dict) else None
    if not isinstance(path, str) or not path:
        return _reading("unknown", "no submitter.templateFile (a template chosen per CE "
                        "from CEtemplateDir is not read)", None, None)
    if not os.path.isabs(path):
        return _reading("unknown", "templateFile is relative: the harvester's working "
                        "directory is not known", path, None)
    try:
        data = read_file(path)
    except (OSError, ValueError) as exc:  # ValueError: a path with a NUL character
        return _reading("unknown", "cannot read the template: {}".format(
            getattr(exc, "strerror", None) or exc), path, None)
    sha256 = hashlib.sha256(data).hexdigest()
    try:
        if b"\0" in data:
            raise ValueError("it holds a NUL byte")
        template = submit_template.parse(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        return _reading("unknown", "template not read: {}".format(
            "not UTF-8" if isinstance(exc, UnicodeDecodeError) else exc), path, sha256)
    return _classify(template, settings, read_file, now, image_state_max_age_s, path, sha256)


def _classify(template: submit_template.Template, settings: Mapping[str, Any],
              read_file: ReadFile, now: float, max_age_s: int, path: str,
              sha256: str) -> Dict[str, Any]:
    def unknown(reason: str) -> Dict[str, Any]:
        return _reading("unknown", reason, path, sha256)

    bindings = submit_template.bindings(template)
    for binding in bindings:
        if binding.image is None:
            return unknown("{} is {}".format(binding.syntax, binding.why_unresolved))
    images = sorted(set(binding.image for binding in bindings if binding.image))
    if len(images) > 1:
        return unknown("conflicting image bindings: " + "; ".join(
            "{} {}".format(b.syntax, b.image) for b in bindings))
    bound = images[0] if images else None
    environment, env_error = submit_template.environment(template)
    policy_file, policy_error = submit_template.attribute_string(template, POLICY_ATTRIBUTE)
    launchers, launcher_problems = _launchers(template, settings, read_file)
    native = (PER_JOB_SWITCH in environment or CONTAINER_SWITCH in environment
              or policy_file is not None or policy_error is not None)
    if env_error is not None:
        return unknown(env_error)
    if native:
        return _native(environment, policy_file, policy_error, launchers, launcher_problems,
                       bound, unknown, read_file, now, max_age_s, path, sha256)
    texts = [("the template", "\n".join("{} = {}".format(key, value)
                                         for _p, key, value in template.statements))]
    texts += [(launcher["path"], launcher["text"]) for launcher in launchers]
    for where, text in texts:
        marker = _alrb_marker(text)
        if marker is not None:
            return _reading("per_job", "ALRB per-job launcher ({} in {}): each job runs in "
                            "its own image".format(marker, where), path, sha256,
                            bootstrap=[bound] if bound else None)
    if bound is not None:
        if "customSubmitAttributes" in template.placeholders:
            return unknown("{{customSubmitAttributes}} can add CRIC's +SingularityImage "
                           "after {}".format(bound))
        syntax = [b.syntax for b in bindings]
        return _reading("image_bound", "bound by {}".format(", ".join(sorted(set(syntax)))),
                        path, sha256, images=[bound])
    unread = "; launcher not read: " + "; ".join(launcher_problems) if launcher_problems else ""
    return unknown("no image binding, no known per-job launcher, not a native per-job "
                   "template" + unread)


def _native(environment: Dict[str, str], policy_file: Optional[str],
            policy_error: Optional[str], launchers: List[Dict[str, Any]],
            launcher_problems: List[str], bound: Optional[str],
            unknown: Callable[[str], Dict[str, Any]], read_file: ReadFile, now: float,
            max_age_s: int, path: str, sha256: str) -> Dict[str, Any]:
    off = _switches_off(environment)
    if off:
        return unknown("native per-job template, but " + " and ".join(off))
    declaring = [launcher for launcher in launchers if _omits_filter(launcher["text"])]
    if not declaring:
        seen = ", ".join(launcher["path"] for launcher in launchers) or "none read"
        problems = "; " + "; ".join(launcher_problems) if launcher_problems else ""
        return unknown("native per-job template, but no transferred launcher declares {} in "
                       "{} ({}{})".format(OMIT_FILTER, FEATURES_VARIABLE, seen, problems))
    if policy_error is not None:
        return unknown(policy_error)
    if policy_file is not None and not os.path.isabs(policy_file):
        return unknown("{} {} is relative: the job's directory is not known here".format(
            POLICY_ATTRIBUTE, policy_file))
    why = "native per-job dispatch and container launch on; {} omits the dispatch-image " \
          "filter".format(declaring[0]["path"])
    bootstrap = [bound] if bound else None
    if policy_file is None:
        return _reading("unrestricted", why + "; no image policy: any job's image", path,
                        sha256, bootstrap=bootstrap)
    policy = image_policy.advertised_images(policy_file, read_file, now, max_age_s)
    if policy.images is None:
        found = unknown(policy.reason)
    else:
        found = _reading("unrestricted", "{}; {}".format(why, policy.reason), path, sha256,
                         images=policy.images, bootstrap=bootstrap)
    found["policy"] = policy.evidence
    return found


def _read_once(read_file: ReadFile) -> ReadFile:
    """`read_file` reading each path once per run; a failure is remembered too, so every
    queue naming a file sees the same bytes or the same error."""
    done = {}  # type: Dict[str, Tuple[Optional[bytes], Optional[Exception]]]

    def read(path: str) -> bytes:
        if path not in done:
            try:
                done[path] = (read_file(path), None)
            except (OSError, ValueError) as exc:
                done[path] = (None, exc)
        data, error = done[path]
        if error is not None:
            raise error
        assert data is not None
        return data
    return read


def add_pilot_dispatch(section: Dict[str, Any], config_set: Any, read_file: ReadFile,
                       now: float, image_state_max_age_s: int = image_policy.DEFAULT_MAX_AGE_S
                       ) -> Dict[str, Any]:
    """`section` (a `queue_status` section) with each queue's `pilot_dispatch` added from the
    effective configuration `config_set` (a `queue_config.QueueConfigSet`)."""
    queues = section.get("queues")
    read_once = _read_once(read_file)  # queues of one template share its reading
    for name, entry in (queues.items() if isinstance(queues, dict) else ()):
        queue = config_set.queues.get(name) if config_set is not None else None
        if queue is None or not isinstance(entry, dict):
            continue
        try:
            entry["pilot_dispatch"] = pilot_dispatch_for(queue.settings, read_once, now,
                                                         image_state_max_age_s)
        except Exception as exc:  # one queue's reading must not lose the others'
            entry["pilot_dispatch"] = _reading("unknown", "reading failed: {}: {}".format(
                type(exc).__name__, exc), None, None)
    return section
