"""A harvester submit template read as the harvester renders it and HTCondor reads it.

Facts (HSF/harvester d561b72f, `harvestersubmitter/htcondor_submitter.py`; HTCondor's
submit-description manual): the harvester drops every line that *starts* with `#`, then fills
the rest with Python's `str.format`, so `{{`/`}}` are literal braces and a `{name}` that is
not one of its placeholders raises KeyError (no pilot is submitted). HTCondor then ignores a
line whose first non-blank character is `#`, joins a line ending in a backslash to the next,
and takes keys case-insensitively. `+Attr = v` is `MY.Attr = v`.

Rendering here leaves each placeholder as `{name}` (its value is per worker) and keeps a
literal brace doubled, so rendered text is still format text and a literal `{{tag}}` is never
taken for a placeholder; `text` gives a value's literal text. What a binding names is literal
text or, when it holds a placeholder or a `$(macro)`, unresolved.

Python 3.6 compatible, standard library only (see the package docstring). Pure: text in,
readings out.
"""

import re
import shlex
import string
from typing import Dict, List, NamedTuple, Optional, Tuple

# make_a_jdl's placeholder map, verbatim keys.
PLACEHOLDERS = frozenset(("sdfPath", "executableFile", "jobSpecFileName", "nCorePerNode",
    "nCoreTotal", "nNode", "nCoreFactor", "requestRam", "requestRamBytes", "requestRamPerCore",
    "requestRamBytesPerCore", "requestDisk", "requestWalltime", "requestWalltimeMinute",
    "requestCputime", "requestCputimeMinute", "accessPoint", "harvesterID", "workerID",
    "computingSite", "pandaQueueName", "x509UserProxy", "ceEndpoint", "ceHostname", "ceFlavour",
    "ceJobmanager", "ceQueueName", "ceVersion", "logDir", "logSubdir", "prodSourceLabel",
    "jobType", "resourceType", "pilotResourceTypeOption", "ioIntensity", "pilotType",
    "pilotUrlOption", "pilotVersion", "pilotPythonOption", "pilotDebugOption", "pilotArgs",
    "submissionHost", "submissionHostShort", "ceARCGridType", "tokenDir", "tokenFilename",
    "tokenPath", "pandaTokenFilename", "pandaTokenPath", "pandaTokenKeyFilename",
    "pandaTokenKeyPath", "pilotJobLabel", "pilotJobType", "requestGpus", "requireGpus",
    "customSubmitAttributes", "cricPandaSite", "gtag"))
# The attribute-style bindings (job ad attribute SingularityImage) and the container universe.
IMAGE_ATTRIBUTE = "singularityimage"
CONTAINER_IMAGE = "container_image"
_KEY = re.compile(r"^\s*(\+|my\.)?([A-Za-z_][A-Za-z0-9_.]*)\s*=\s?(.*)$", re.IGNORECASE)
_STRING = re.compile(r'^"([^"\\]*)"$')
_QUEUE = re.compile(r"^\s*queue(\s|$)", re.IGNORECASE)


class TemplateError(ValueError):
    """The harvester could not render this template: no pilot would be submitted with it."""


class Binding(NamedTuple):
    """One line binding an image: `syntax` as written, `image` None when not literal."""

    syntax: str
    image: Optional[str]
    why_unresolved: Optional[str]


class Template(NamedTuple):
    """A rendered template's statements, `(prefix, key lower case, value)`: prefix `+` or
    `MY.` for a job ad attribute, empty for a submit command."""

    statements: Tuple[Tuple[str, str, str], ...]
    placeholders: Tuple[str, ...]  # the harvester placeholders the template uses

    def values(self, key: str, plus: bool = False) -> List[str]:
        return [value for prefix, name, value in self.statements
                if name == key.lower() and bool(prefix) == plus]


def render(text: str) -> Tuple[str, Tuple[str, ...]]:
    """`text` as the harvester renders it, each placeholder kept as `{name}`; and the
    placeholders it uses."""
    fields = set()
    kept = "\n".join(line for line in text.split("\n") if not line.startswith("#"))
    out = []  # type: List[str]
    try:
        for literal, field, _spec, _conversion in string.Formatter().parse(kept):
            out.append(literal.replace("{", "{{").replace("}", "}}"))  # kept literal
            if field is None:
                continue
            name = re.split(r"[.\[]", field, maxsplit=1)[0]
            if name not in PLACEHOLDERS:
                raise TemplateError(
                    "the harvester cannot render it: {{{}}} is not one of its placeholders "
                    "(format raises {})".format(field, "IndexError" if not name else "KeyError"))
            out.append("{" + field + "}")
            fields.add(name)
    except ValueError as exc:
        if isinstance(exc, TemplateError):
            raise
        raise TemplateError("the harvester cannot render it: {}".format(exc)) from None
    return "".join(out), tuple(sorted(fields))


def parse(text: str) -> Template:
    """The statements HTCondor reads from the rendered `text`."""
    rendered, placeholders = render(text)
    lines = []  # type: List[str]
    pending = ""
    for line in rendered.split("\n"):
        line = line.rstrip("\r")
        if line.endswith("\\"):
            pending += line[:-1]
            continue
        lines.append(pending + line)
        pending = ""
    lines.append(pending)
    statements = []  # type: List[Tuple[str, str, str]]
    for line in lines:
        if line.lstrip().startswith("#"):
            continue
        if _QUEUE.match(line):  # the job is submitted here: later lines bind no job of it
            break
        found = _KEY.match(line)
        if found:
            prefix = (found.group(1) or "").upper()
            statements.append((prefix, found.group(2).lower(), found.group(3).strip()))
    return Template(tuple(statements), placeholders)


def _has_placeholder(value: str) -> bool:
    try:
        return any(field is not None for _l, field, _s, _c in string.Formatter().parse(value))
    except ValueError:  # not from render (which keeps braces paired): not literal either
        return True


def text(value: str) -> str:
    """A rendered value as the harvester writes it: literal braces single, each placeholder
    as `{name}`."""
    if _has_placeholder(value):
        return value
    return value.replace("{{", "{").replace("}}", "}")


def _unresolved(value: str) -> Optional[str]:
    if "$(" in text(value):
        return "an HTCondor macro"
    if _has_placeholder(value):
        return "a harvester placeholder, filled per worker"
    return None


def bindings(template: Template) -> List[Binding]:
    """Every image binding of `template`, in file order."""
    found = []  # type: List[Binding]
    for prefix, key, value in template.statements:
        if key == IMAGE_ATTRIBUTE and prefix:
            literal = _STRING.match(value)
            why = _unresolved(value) or (None if literal else
                                         "an expression, not a quoted string")
            image = text(literal.group(1)) if literal and why is None else None
            found.append(Binding(prefix + "SingularityImage", image or None,
                                 why or (None if image else "an empty string")))
        elif key == CONTAINER_IMAGE and not prefix:
            why = _unresolved(value) or (None if value else "empty")
            found.append(Binding(CONTAINER_IMAGE, None if why else text(value.strip('"')), why))
    return found


def environment(template: Template) -> Tuple[Dict[str, str], Optional[str]]:
    """The job's `environment` (HTCondor's quoted form, or the old `A=1;B=2` form), and an
    error text when it cannot be split. Later statements replace earlier ones, as in
    HTCondor."""
    values = template.values("environment")
    if not values:
        return {}, None
    value = values[-1]
    if value.startswith('"') and value.endswith('"') and len(value) >= 2:
        try:
            words = shlex.split(value[1:-1].replace('""', '\\"'))
        except ValueError as exc:
            return {}, "environment cannot be split: {}".format(exc)
    else:
        words = [word for word in value.split(";") if word]
    found = {}  # type: Dict[str, str]
    for word in words:
        name, _, setting = word.partition("=")
        found[text(name.strip())] = text(setting)
    return found, None


def attribute_string(template: Template, name: str) -> Tuple[Optional[str], Optional[str]]:
    """The literal string of job ad attribute `name` (`+name` or `MY.name`, the last one
    written) and why it is not one, when it is set otherwise."""
    values = template.values(name, plus=True)
    if not values:
        return None, None
    literal = _STRING.match(values[-1])
    why = _unresolved(values[-1])
    if why is not None or not literal:
        return None, "{} is {}".format(name, why or "not a quoted string")
    return text(literal.group(1)), None


def launcher_paths(template: Template, executable_file: Optional[str]
                   ) -> Tuple[List[str], List[str]]:
    """The files HTCondor transfers as the launcher (`executable` and
    `transfer_input_files`), `{executableFile}` filled from the queue's
    `submitter.executableFile`; and why each other one cannot be read here."""
    paths = []  # type: List[str]
    skipped = []  # type: List[str]
    listed = template.values("executable")[-1:]
    for value in template.values("transfer_input_files")[-1:]:
        listed.extend(part.strip() for part in value.split(","))
    for path in listed:
        if not path:
            continue
        if executable_file is not None:  # its braces kept doubled, as render keeps them
            path = path.replace("{executableFile}",
                                executable_file.replace("{", "{{").replace("}", "}}"))
        why = _unresolved(path)
        path = text(path)
        if why is None and re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", path):
            why = "a URL"
        if why is not None:
            skipped.append("{} is {}".format(path, why))
        elif path not in paths:
            paths.append(path)
    return paths, skipped
