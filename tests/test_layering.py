"""The map of packages in docs/design.md is the law: every import arrow between packages
must be one it allows, no module may take part in an import cycle, and the package list
in pyproject.toml names every package that exists."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Repository folders and the import names they install as.
FOLDERS = {"chaoskube": "chaoskube", "faults": "chaoskube.faults", "experiments": "chaoskube.experiments"}


def module_files() -> dict[str, Path]:
    modules = {}
    for folder, package in FOLDERS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            name = ".".join((package, *parts))
            modules[name.removesuffix(".__init__")] = path
    return modules


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the project modules it imports, at any depth of the file (lazy imports
    inside functions and ``TYPE_CHECKING`` imports count). ``from pkg import sub`` of a
    submodule is an arrow to the submodule."""
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        arrows: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom):
                assert node.level == 0, f"{path}:{node.lineno}: relative import"
                module = node.module or ""
                submodules = [f"{module}.{alias.name}" for alias in node.names if f"{module}.{alias.name}" in modules]
                arrows.update(submodules)
                if len(submodules) < len(node.names) and module in modules:
                    arrows.add(module)
            elif isinstance(node, ast.Import):
                arrows.update(alias.name for alias in node.names if alias.name in modules)
        arrows.discard(name)
        graph[name] = arrows
    return graph


def unit(module: str) -> str:
    """The map's unit of a module: ``chaoskube`` (the root) or ``chaoskube.<first part>``."""
    parts = module.split(".")
    return ".".join(parts[:2])


def read_map() -> dict[str, set[str]]:
    """package -> the packages it may import, from the table in docs/design.md."""
    text = (ROOT / "docs" / "design.md").read_text()
    section = text.split("## The map of packages", 1)[1].split("\n## ", 1)[0]
    allowed: dict[str, set[str]] = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not cells[0].startswith("`chaoskube"):
            continue
        package = cells[0].strip("`")
        if cells[2] == "everything above":
            targets = set(allowed)
        else:
            targets = {name if name == "chaoskube" else f"chaoskube.{name}" for name in re.findall(r"`([\w.]+)`", cells[2])}
        allowed[package] = targets
    return allowed


def test_the_map_names_every_package_of_the_project():
    units = {unit(name) for name in module_files()}
    assert units == set(read_map()), "docs/design.md's map and the packages differ"


def test_every_import_arrow_is_one_the_map_allows():
    allowed = read_map()
    graph = import_graph(module_files())
    wrong = sorted(
        f"{module} imports {target}"
        for module, targets in graph.items()
        for target in targets
        if unit(target) != unit(module) and unit(target) not in allowed[unit(module)]
    )
    assert not wrong, "arrows docs/design.md's map does not allow:\n" + "\n".join(wrong)


def test_no_module_takes_part_in_an_import_cycle():
    graph = import_graph(module_files())
    cycles = strongly_connected_components(graph)
    assert not cycles, f"import cycles: {cycles}"


def test_client_and_apiserver_meet_only_in_api():
    graph = import_graph(module_files())
    for module, targets in graph.items():
        for side, other in (("chaoskube.client", "chaoskube.apiserver"), ("chaoskube.apiserver", "chaoskube.client")):
            if unit(module) == side:
                assert not {t for t in targets if unit(t) == other}, f"{module} imports {other}"


def test_the_experiment_model_imports_no_system():
    graph = import_graph(module_files())
    reached = reachable(graph, "chaoskube.experiments.model")
    assert not {m for m in reached if m.startswith(("chaoskube.experiments.systems", "chaoskube.experiments.real", "chaoskube.experiments.registry"))}


def test_pyproject_lists_every_package():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    listed = set(project["tool"]["setuptools"]["packages"])
    packages = {name for name, path in module_files().items() if path.name == "__init__.py"}
    assert listed == packages


def test_the_detector_finds_a_cycle_and_a_wrong_arrow():
    """The checks above can fail: a made-up graph with a cycle and a forbidden arrow."""
    graph = {"chaoskube.sim.a": {"chaoskube.sim.b"}, "chaoskube.sim.b": {"chaoskube.sim.a"}, "chaoskube.sim.c": set()}
    assert strongly_connected_components(graph) == [["chaoskube.sim.a", "chaoskube.sim.b"]]
    assert "chaoskube.apiserver" not in read_map()["chaoskube.client"]
    assert "chaoskube.faults" not in read_map()["chaoskube.sim"]


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for target in graph.get(todo.pop(), ()):
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def strongly_connected_components(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative; components of more than one module, sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)
