"""The import directions ARCHITECTURE.md forbids, checked over the source tree.

Every ``import`` and ``from ... import`` in ``src/clusterwatch`` is read with :mod:`ast`
(also those inside functions: a lazy import is still a dependency), except imports under
``if TYPE_CHECKING:``, which never run. A failure names the importing module and what it
imports, so the fix is obvious.
"""

from __future__ import annotations

import pytest

from tests.support.import_graph import PACKAGE, SRC, import_graph, module_name

# The harness that demos, tests and benchmarks share, and the demos themselves. No production
# module imports them; the demo verbs below load the demos, and only inside the verb.
HARNESS_PACKAGES = ("clusterwatch.loopback", "clusterwatch.demo")
DEMO_VERBS = {
    "clusterwatch.watch.cli": "clusterwatch.demo",
    "clusterwatch.monitor.site.cli": "clusterwatch.demo",
}


def _internal(name: str, graph: dict[str, list[tuple[str, bool]]]) -> str | None:
    """The package module an import names (a name imported from a module maps to it)."""
    while name:
        if name in graph:
            return name
        name = name.rpartition(".")[0]
    return None


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def _violations(importer_prefix: str, forbidden: tuple[str, ...]) -> list[str]:
    found = set()
    for module, imports in import_graph().items():
        if not _within(module, importer_prefix):
            continue
        for imported, _top in imports:
            if any(_within(imported, bad) for bad in forbidden):
                found.add(f"{module} imports {imported}")
    return sorted(found)


def test_the_graph_sees_the_whole_package() -> None:
    graph = import_graph()
    assert "clusterwatch.reporter.main" in graph
    assert "clusterwatch.monitor.ingest.views" in graph
    # A known edge, so an empty graph cannot pass every rule below.
    assert any(
        _within(name, "clusterwatch.notify") for name, _ in graph["clusterwatch.watch.poll"]
    )


def test_the_reporter_imports_nothing_outside_itself() -> None:
    found = set()
    for module, imports in import_graph().items():
        if not _within(module, "clusterwatch.reporter"):
            continue
        for imported, _top in imports:
            if _within(imported, PACKAGE) and not _within(imported, "clusterwatch.reporter"):
                found.add(f"{module} imports {imported}")
    # The `clusterwatch reporter` verbs build and describe the zipapp; they are not in it.
    found = {line for line in found if not line.startswith("clusterwatch.reporter.cli ")}
    assert sorted(found) == []


NODE_SIDE_PARTS = ["clusterwatch.jobs", "clusterwatch.watch", "clusterwatch.textfile",
                   "clusterwatch.notify"]


@pytest.mark.parametrize("part", NODE_SIDE_PARTS)
def test_node_side_parts_never_import_the_monitor_or_django(part: str) -> None:
    assert _violations(part, ("clusterwatch.monitor", "django")) == []


@pytest.mark.parametrize("room", ["clusterwatch.monitor.ingest", "clusterwatch.monitor.alarms"])
def test_ingest_and_alarms_never_import_the_pages(room: str) -> None:
    assert _violations(room, ("clusterwatch.monitor.pages",)) == []


def test_production_modules_never_import_the_harness_or_the_demos() -> None:
    found = set()
    for module, imports in import_graph().items():
        if any(_within(module, harness) for harness in HARNESS_PACKAGES):
            continue
        for imported, top_level in imports:
            harness = next((h for h in HARNESS_PACKAGES if _within(imported, h)), None)
            if harness is None:
                continue
            if DEMO_VERBS.get(module) == harness and not top_level:
                continue  # the demo verb loads its demo when it runs, never at import
            found.add(f"{module} imports {imported}")
    assert sorted(found) == []


def test_the_harness_never_reaches_outside_the_package() -> None:
    """Demos run from an installed wheel: nothing under src/ may read the repository's tests/."""
    found = []
    for path in sorted((SRC / PACKAGE).rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if "parents[" in text and '"tests"' in text:
            found.append(module_name(path))
    assert found == []


def _cycles(graph: dict[str, list[tuple[str, bool]]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    edges = {
        module: sorted(
            {
                target
                for imported, _top in imports
                if (target := _internal(imported, graph)) is not None
                and target != module
                # A package's __init__ importing its own modules is how packages work,
                # and a module importing its parent package only runs that __init__.
                and not _within(module, target)
                and not _within(target, module)
            }
        )
        for module, imports in graph.items()
    }
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(edges[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges[child])))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(sorted(component))
    return sorted(components)


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": [("b", True)], "b": [("c", False)], "c": [("a", True)], "d": [("a", True)]}
    assert _cycles(graph) == [["a", "b", "c"]]


def test_no_import_cycle_between_modules() -> None:
    assert _cycles(import_graph()) == []
