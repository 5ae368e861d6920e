"""Every CLUSTERWATCH_* variable that docs/usage.md and docs/monitor.md name is read by the
code, and every one the monitor reads (its Python code, the settings families read through a
prefix, the MailProg wrapper) is in them; deploy/monitor.env.example sets only such ones.

"Read by the code" is a string constant of the production code (docstrings and comments do
not count; the demo and the loopback harnesses are not production), a name of a settings
family (CLUSTERWATCH_EMAIL_*, CLUSTERWATCH_LDAP_*: their KNOWN sets, and the password
variable each refuses), or a variable the wrapper script assigns."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

from clusterwatch.monitor.site import ldap_settings
from clusterwatch.monitor.usage.mail import settings as mail_settings

ROOT = Path(__file__).resolve().parents[3]
DOCS = (ROOT / "docs" / "usage.md", ROOT / "docs" / "monitor.md")
NAME = re.compile(r"CLUSTERWATCH_[A-Z0-9_]*[A-Z0-9](?![A-Z0-9_]*\*)")  # not `..._*` families
WRAPPER = ROOT / "deploy" / "slurm" / "clusterwatch-mailprog"
NOT_PRODUCTION = ("demo", "loopback")


def documented() -> set[str]:
    return {name for path in DOCS for name in NAME.findall(path.read_text(encoding="utf-8"))}


def constants(path: Path) -> set[str]:
    """CLUSTERWATCH_* string constants of a module, its docstrings left out."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                       ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr)
                  and isinstance(node.body[0].value, ast.Constant)}
    return {node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and id(node) not in docstrings and NAME.fullmatch(node.value)}


def families() -> set[str]:
    return {*mail_settings.KNOWN, *ldap_settings.KNOWN, mail_settings.PREFIX + "PASSWORD",
            ldap_settings.PREFIX + "BIND_PASSWORD"}


def wrapper_names() -> set[str]:
    return set(re.findall(r"^(CLUSTERWATCH_\w+)=", WRAPPER.read_text(), re.MULTILINE))


@cache
def read_by(package: str) -> frozenset[str]:
    base = ROOT / "src" / "clusterwatch"
    names: set[str] = set()
    for path in (base / package).rglob("*.py"):
        if not set(path.relative_to(base).parts) & set(NOT_PRODUCTION):
            names |= constants(path)
    return frozenset(names | families() | wrapper_names())


def test_every_documented_variable_is_read_by_the_code() -> None:
    assert sorted(documented() - read_by("")) == []


def test_every_variable_the_monitor_reads_is_documented() -> None:
    assert sorted(read_by("monitor") - documented()) == []


def test_the_example_environment_file_sets_only_documented_variables_the_code_reads() -> None:
    example = ROOT / "deploy" / "monitor.env.example"
    names = set(NAME.findall(example.read_text(encoding="utf-8")))
    assert names, "the example names no variable"
    assert sorted(names - documented()) == [] and sorted(names - read_by("")) == []


def test_the_check_sees_through_docstrings_and_families(tmp_path: Path) -> None:
    module = tmp_path / "module.py"
    module.write_text('"""CLUSTERWATCH_IN_A_DOCSTRING"""\nX = "CLUSTERWATCH_READ"\n')
    assert constants(module) == {"CLUSTERWATCH_READ"}
    assert NAME.findall("`CLUSTERWATCH_EMAIL_*` and `CLUSTERWATCH_EMAIL_FROM`") == [
        "CLUSTERWATCH_EMAIL_FROM"]
    assert "CLUSTERWATCH_EMAIL_JOBS" in families()
