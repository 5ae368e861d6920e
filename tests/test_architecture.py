"""The import directions docs/architecture.md forbids, checked over the source tree.

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


# The monitor's rooms. The shell sits on top and nothing imports it; the kernel below every
# feature imports no feature but `record`, the typed host record, which is pure (standard
# library only) and so sits below the kernel too; features import the kernel, `record`, and
# each other only along FEATURE_EDGES (written in docs/architecture.md, which a test below
# keeps equal to this list).
MONITOR = "clusterwatch.monitor"
SHELL = "site"
KERNEL = "core"
RECORD = "record"
FEATURES = ("record", "ingest", "alarms", "pages", "panda", "usage")
FEATURE_EDGES = frozenset({
    ("pages", "alarms"),  # the alarms page reads the alarm table and the lease
    ("pages", "panda"),  # the job page shows PanDA jobs; the PanDA pages hang under pages' URLs
    ("panda", "ingest"),  # a remote record is stored through ingest's checks, as a posted one
    ("pages", "usage"),  # a researcher refused an operator page gets the usage pages' refusal
})
REPORTER = "clusterwatch.reporter"
REPORTER_SURFACE = "clusterwatch.reporter.monitor_surface"

Graph = dict[str, list[tuple[str, bool]]]


def _room(module: str) -> str | None:
    """The monitor room a module is in ("usage" for clusterwatch.monitor.usage.web.access)."""
    parts = module.split(".")
    if module.startswith(MONITOR + ".") and len(parts) > 2:
        return parts[2]
    return None


# The dispatcher sits in the package's top folder beside the helpers every part imports; it is
# the top of the graph and they the bottom, so it counts as a package of its own.
COMMAND_LINE = ("clusterwatch.cli", "clusterwatch.__main__")


def _package(module: str, graph: Graph) -> str:
    """The folder a module sits in; a package's __init__ is its folder."""
    if module in COMMAND_LINE:
        return "clusterwatch (the command line)"
    is_package = any(other.startswith(module + ".") for other in graph)
    return module if is_package else module.rpartition(".")[0]


def _package_graph(graph: Graph) -> Graph:
    """Package -> the packages its modules import (an import of a package's own modules, or of
    one of its sub-packages from its __init__, is how packages work and not an arrow)."""
    arrows: dict[str, set[str]] = {}
    for module, imports in graph.items():
        source = _package(module, graph)
        for imported, top_level in imports:
            target = _internal(imported, graph)
            if target is None:
                continue
            if not top_level and any(_within(target, demo)
                                     for demo in DEMO_VERBS.get(module, "").split()):
                continue  # a demo verb loads its demo when it runs (see above)
            target_package = _package(target, graph)
            if target_package == source:
                continue
            if module == source and _within(target_package, source):
                continue  # an __init__ re-exporting from its own sub-packages
            arrows.setdefault(source, set()).add(target_package)
    packages = {_package(module, graph) for module in graph}
    return {package: [(t, True) for t in sorted(arrows.get(package, ()))]
            for package in sorted(packages)}


def _package_cycles(graph: Graph) -> list[list[str]]:
    packages = _package_graph(graph)
    edges = {package: sorted({t for t, _ in imports}) for package, imports in packages.items()}
    # _cycles drops arrows between a package and its parent; between folders those are real
    # (usage.web importing usage.config while usage imports usage.web is a cycle), so the
    # package graph is handed over under names that are no prefix of each other.
    alias = {package: f"p{n}" for n, package in enumerate(edges)}
    back = {v: k for k, v in alias.items()}
    aliased = {alias[p]: [(alias[t], True) for t in targets if t in alias]
               for p, targets in edges.items()}
    return sorted(sorted(back[m] for m in component) for component in _cycles(aliased))


def _room_violations(graph: Graph) -> list[str]:
    """Imports between the monitor's rooms that the shell/kernel/feature rules forbid."""
    found = set()
    for module, imports in graph.items():
        for imported, _top in imports:
            target = _internal(imported, graph)
            if target is None or not _within(target, MONITOR):
                continue
            source_room, target_room = _room(module), _room(target)
            if source_room == target_room or target_room is None:
                continue
            if target_room == SHELL:
                rule = "nothing imports the shell"
            elif source_room is None or source_room == SHELL:
                continue
            elif source_room == RECORD:
                rule = "the record imports nothing of the monitor"
            elif source_room == KERNEL and target_room != RECORD:
                rule = "the kernel imports no feature but the record"
            elif (source_room in FEATURES and target_room in FEATURES
                  and target_room != RECORD
                  and (source_room, target_room) not in FEATURE_EDGES):
                rule = "a feature-to-feature import not in FEATURE_EDGES"
            else:
                continue
            found.add(f"{module} imports {target}: {rule}")
    return sorted(found)


def _reporter_violations(graph: Graph) -> list[str]:
    """Monitor imports of the reporter that do not go through its surface module."""
    found = set()
    for module, imports in graph.items():
        if not _within(module, MONITOR):
            continue
        names = {imported for imported, _top in imports}
        for imported in names:
            if not _within(imported, REPORTER) or _within(imported, REPORTER_SURFACE):
                continue
            if imported == REPORTER and REPORTER_SURFACE in names:
                continue  # `from clusterwatch.reporter import monitor_surface`
            found.add(f"{module} imports {imported}")
    return sorted(found)


def _planted(graph: Graph, importer: str, imported: str) -> Graph:
    planted = {module: list(imports) for module, imports in graph.items()}
    planted.setdefault(importer, []).append((imported, True))
    planted.setdefault(imported, [])
    return planted


def test_no_import_cycle_between_packages() -> None:
    assert _package_cycles(import_graph()) == []


def test_a_planted_package_cycle_is_found() -> None:
    # usage.rendering imports usage.analysis; the reverse arrow closes a cycle of two
    # packages while no module cycle exists.
    graph = _planted(import_graph(), "clusterwatch.monitor.usage.analysis.rules",
                     "clusterwatch.monitor.usage.rendering.plot_units")
    assert _cycles(graph) == []
    pair = {"clusterwatch.monitor.usage.analysis", "clusterwatch.monitor.usage.rendering"}
    assert any(pair <= set(component) for component in _package_cycles(graph))


def test_a_package_and_its_parent_can_form_a_cycle() -> None:
    graph = {"a.b.__x": [], "a.b": [], "a.b.m": [("a.c", True)], "a.c": [("a.b.m", True)],
             "a": []}
    assert _package_cycles(graph) == [["a", "a.b"]]


def test_the_monitor_rooms_keep_their_order() -> None:
    assert _room_violations(import_graph()) == []


@pytest.mark.parametrize(("importer", "imported", "rule"), [
    ("clusterwatch.monitor.pages.views", "clusterwatch.monitor.site.settings",
     "nothing imports the shell"),
    ("clusterwatch.monitor.core.models", "clusterwatch.monitor.pages.views",
     "the kernel imports no feature"),
    ("clusterwatch.monitor.record.host_record", "clusterwatch.monitor.core.models",
     "the record imports nothing"),
    ("clusterwatch.monitor.ingest.store", "clusterwatch.monitor.usage.config",
     "not in FEATURE_EDGES"),
    ("clusterwatch.monitor.alarms.run", "clusterwatch.monitor.pages.views",
     "not in FEATURE_EDGES"),
])
def test_a_planted_room_violation_is_found(importer: str, imported: str, rule: str) -> None:
    found = _room_violations(_planted(import_graph(), importer, imported))
    assert [line for line in found if line.startswith(f"{importer} imports {imported}:")
            and rule in line]


def test_the_listed_feature_edges_are_the_documented_ones() -> None:
    text = (SRC.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    documented = set()
    for line in text.splitlines():
        # "- `pages -> alarms`: why" in the section on feature edges
        if line.startswith("- `") and " -> " in line.split("`")[1]:
            source, _, target = line.split("`")[1].partition(" -> ")
            documented.add((source, target))
    assert documented == set(FEATURE_EDGES)


def test_the_monitor_reads_the_reporter_only_through_its_surface() -> None:
    assert _reporter_violations(import_graph()) == []


def test_a_planted_reporter_import_is_found() -> None:
    graph = _planted(import_graph(), "clusterwatch.monitor.panda.remote.builder",
                     "clusterwatch.reporter.harvester_db")
    assert _reporter_violations(graph) == [
        "clusterwatch.monitor.panda.remote.builder imports clusterwatch.reporter.harvester_db"]
