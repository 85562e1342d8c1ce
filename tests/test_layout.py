"""The architecture the folders promise: layers import downwards only, no import loops, the
pure core imports no gRPC, and no folder grows past fifteen modules side by side.

Read from the source with ``ast`` (top-level imports, the ones that run at import time), so a
new module is checked without being listed here.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

from tests.support import ROOT

PACKAGES = ("optimizer", "southbound", "emulation", "controller", "benchmarks")
#: A module may import its own layer and those below it (optimizer is the floor).
LAYER = {"optimizer": 0, "southbound": 1, "emulation": 2, "controller": 2, "benchmarks": 3}
#: Besides their own layer: the CLI starts the emulator (``heliostat emulate``, ``demo``),
#: through one module.
ALLOWED_ACROSS = {("controller.commands.emulator", "emulation")}
#: Arrows inside ``controller/`` that would run back up (checked on every import, those inside
#: functions too): (importer, imported) prefixes; a module of the first may not import the second.
CONTROLLER_UPWARDS = (
    ("controller.decision", "controller."),  # the pure rules import only the optimizer
    ("controller.northbound", "controller.config"),  # the config builds the servers
    ("controller.reconfig", "controller.config"),  # ... and the executor
    ("controller.sensing", "controller.config"),
    ("controller.te_loop", "controller.config"),
    ("controller.commands", "controller.cli"),  # the CLI registers its commands
    ("controller.", "emulation"),  # the emulation only through controller.commands.emulator
)
#: Controller modules that decide without doing I/O: tested without servers, they may not
#: reach a gRPC client, the drivers or grpc itself, even through another module.
PURE_CONTROLLER = (
    "controller.decision",
    "controller.device_view",
    "controller.sensing.estimation",
    "controller.sensing.tomogravity",
    "controller.sensing.inferred_matrix",
    "controller.sensing.observe",
    "controller.te_loop.transition",
    "controller.reconfig.stage_plan",
    "controller.reconfig.toe_run",
)
IMPURE = ("grpc", "controller.drivers", "southbound.grpc_native", "southbound.registry",
          "controller.northbound.proto")
MAX_MODULES = 15


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _sources() -> dict[str, Path]:
    out = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if "gen" in path.relative_to(ROOT).parts:  # generated stubs
                continue
            out[_module_name(path)] = path
    return out


def _top_level_imports(path: Path, module: str) -> set[str]:
    """Modules imported when ``module`` is imported (not inside functions)."""
    tree = ast.parse(path.read_text(), str(path))
    found: set[str] = set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in tree.body:
        nodes = [node]
        if isinstance(node, ast.If | ast.Try):  # `if TYPE_CHECKING:` is not run
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            nodes = list(ast.walk(node))
        for n in nodes:
            if isinstance(n, ast.Import):
                found.update(a.name for a in n.names)
            elif isinstance(n, ast.ImportFrom):
                base = n.module or ""
                if n.level:
                    anchor = package.split(".")[: len(package.split(".")) - (n.level - 1)]
                    base = ".".join([*anchor, base] if base else anchor)
                found.add(base)
                found.update(f"{base}.{a.name}" for a in n.names)
    return found


def _every_import(path: Path, module: str) -> set[str]:
    """Every module ``module`` names in an import, wherever the import stands."""
    tree = ast.parse(path.read_text(), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            found.update(a.name for a in n.names)
        elif isinstance(n, ast.ImportFrom):
            base = n.module or ""
            if n.level:
                anchor = package.split(".")[: len(package.split(".")) - (n.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
    return found


SOURCES = _sources()
GRAPH = {m: _top_level_imports(p, m) for m, p in SOURCES.items()}


def _internal(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    return {m: {d for d in deps if d in SOURCES and d != m} for m, deps in graph.items()}


def test_layers_import_downwards_only() -> None:
    wrong = []
    for module, deps in GRAPH.items():
        top = module.split(".")[0]
        for dep in deps:
            dep_top = dep.split(".")[0]
            if dep_top not in LAYER or dep_top == top:
                continue
            across = any(module.startswith(m) and dep_top == d for m, d in ALLOWED_ACROSS)
            if LAYER[dep_top] > LAYER[top] or (LAYER[dep_top] == LAYER[top] and not across):
                wrong.append(f"{module} imports {dep}")
    assert not wrong, "imports that run up (or across) a layer:\n" + "\n".join(sorted(wrong))


def test_no_import_loops() -> None:
    graph = _internal(GRAPH)
    # A package imports its submodules through its face: drop edges from a module into its
    # own package's __init__ (Python resolves those without a loop once the face is loaded).
    state: dict[str, int] = defaultdict(int)  # 0 new, 1 on the stack, 2 done
    loops = []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        stack.append(node)
        for dep in sorted(graph.get(node, ())):
            if node.startswith(dep + "."):  # a submodule naming its own package
                continue
            if state[dep] == 1:
                loops.append(" -> ".join([*stack[stack.index(dep):], dep]))
            elif state[dep] == 0:
                visit(dep, stack)
        stack.pop()
        state[node] = 2

    for module in sorted(graph):
        if state[module] == 0:
            visit(module, [])
    assert not loops, "import loops:\n" + "\n".join(loops)


@pytest.mark.parametrize("module", PURE_CONTROLLER + tuple(m for m in SOURCES if m.startswith("optimizer")))
def test_the_pure_core_reaches_no_grpc(module: str) -> None:
    graph = _internal(GRAPH)
    seen, todo = {module}, [module]
    while todo:
        for dep in graph.get(todo.pop(), ()):
            if dep not in seen:
                seen.add(dep)
                todo.append(dep)
    reached = {d for m in seen for d in GRAPH[m]}
    impure = sorted(d for d in reached if any(d == i or d.startswith(i + ".") for i in IMPURE))
    assert not impure, f"{module} reaches {impure}"


def test_no_folder_holds_more_than_fifteen_modules() -> None:
    crowded = {}
    for folder in {p.parent for p in SOURCES.values()} | {ROOT / "tests"}:
        modules = [p for p in folder.glob("*.py") if p.name != "__init__.py"]
        if len(modules) > MAX_MODULES:
            crowded[str(folder.relative_to(ROOT))] = len(modules)
    assert not crowded, f"folders past {MAX_MODULES} modules: {crowded}"


def _under(name: str, prefix: str) -> bool:
    if prefix.endswith("."):
        return name.startswith(prefix)
    return name == prefix or name.startswith(prefix + ".")


def test_controller_arrows_point_down() -> None:
    wrong = []
    for module, path in SOURCES.items():
        if not module.startswith("controller.") or module == "controller.commands.emulator":
            continue
        for dep in _every_import(path, module):
            for importer, imported in CONTROLLER_UPWARDS:
                if _under(module, importer) and _under(dep, imported) and not _under(dep, importer):
                    wrong.append(f"{module} imports {dep}")
    assert not wrong, "imports that run back up inside controller/:\n" + "\n".join(sorted(wrong))


def test_api_modules_live_in_northbound() -> None:
    assert "controller.northbound.api" in SOURCES and "controller.northbound.daemon_api" in SOURCES
    assert "controller.api" not in SOURCES and "controller.daemon_api" not in SOURCES
