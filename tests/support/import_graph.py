"""The package's import graph, read from its source with :mod:`ast`: the architecture test
checks its directions, and other tests ask who imports a module.

Every ``import`` and ``from ... import`` in ``src/clusterwatch`` counts (also those inside
functions: a lazy import is still a dependency), except imports under ``if TYPE_CHECKING:``,
which never run.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGE = "clusterwatch"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking_guard(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST, module: str, is_package: bool) -> Iterator[tuple[str, bool]]:
    """(imported module, imported at module level) for every import that can run."""

    def walk(node: ast.AST, top_level: bool) -> Iterator[tuple[str, bool]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking_guard(child):
                for other in child.orelse:
                    yield from walk(other, top_level)
                continue
            if isinstance(child, ast.Import):
                for alias in child.names:
                    yield alias.name, top_level
            elif isinstance(child, ast.ImportFrom):
                base = _resolve(child, module, is_package)
                yield base, top_level
                for alias in child.names:
                    # "from package import module" imports the submodule.
                    yield f"{base}.{alias.name}", top_level
            else:
                nested = isinstance(
                    child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
                )
                yield from walk(child, top_level and not nested)

    yield from walk(tree, True)


def _resolve(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    package = module.split(".") if is_package else module.split(".")[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


@lru_cache(maxsize=1)
def import_graph() -> dict[str, list[tuple[str, bool]]]:
    """Every module of the package -> the modules (of any package) it imports."""
    graph: dict[str, list[tuple[str, bool]]] = {}
    for path in sorted((SRC / PACKAGE).rglob("*.py")):
        module = module_name(path)
        tree = ast.parse(path.read_bytes(), filename=str(path))
        graph[module] = list(_imports(tree, module, path.name == "__init__.py"))
    return graph
