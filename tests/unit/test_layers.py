"""Dependencies point down (docs/architecture.md, "How the packages depend on each other"),
read from the source's import statements, those inside functions included:

- the core (lakehouse/) is the library every other package uses, and imports none of them;
- a layer (ingestion, bronze, silver, gold) imports the core and the layers below it;
- an app (serving, dashboard, monitoring, orchestration, operations, infra, benchmarks, ml)
  imports the core, the layers, other apps, and of the composition root (pipeline/) only
  its leaves: the list of every table, how a `lakehouse` command is run, the checks of what
  the tables hold; the leaves import no app;
- the rest of pipeline/ (the command line, the passes, the demo) may import anything, and
  nothing but pipeline/ imports it;
- and no module imports itself through others: the graph of imports has no cycle."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORE = "lakehouse"
LAYERS = ("ingestion", "bronze", "silver", "gold")  # each above the ones before it
APPS = {"serving", "dashboard", "monitoring", "orchestration", "operations", "infra", "benchmarks", "ml"}
COMPOSITION_ROOT = "pipeline"
LEAVES = {"pipeline", "pipeline.tables", "pipeline.commands", "pipeline.verify"}


def _modules() -> dict[str, Path]:
    """Every module of the project's packages by its dotted name (a package's, its
    __init__.py)."""
    found = {}
    for package in (CORE, *LAYERS, *APPS, COMPOSITION_ROOT):
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """The project modules `name` imports: `from package import module` imports the module,
    `from module import name` the module."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = name.split(".")[: None if path.name == "__init__.py" else -1]
                base = ".".join([*package[: len(package) - node.level + 1], *filter(None, [base])])
            found |= {
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names
            }
    return {module for module in found if module in MODULES and module != name}


IMPORTS = {name: _imports(name, path) for name, path in MODULES.items()}


def _package(module: str) -> str:
    return module.split(".")[0]


def _breaking(allowed) -> dict[str, list[str]]:
    """Per module, the imports `allowed(module, imported)` refuses."""
    found = {name: sorted(m for m in imported if not allowed(name, m)) for name, imported in IMPORTS.items()}
    return {name: refused for name, refused in found.items() if refused}


def test_every_package_has_its_place():
    packages = {path.parent.name for path in ROOT.glob("*/__init__.py")} - {"tests"}
    assert packages == {CORE, *LAYERS, *APPS, COMPOSITION_ROOT}


def test_the_core_imports_no_other_package():
    assert _breaking(lambda name, m: _package(name) != CORE or _package(m) == CORE) == {}


def test_a_layer_imports_only_the_core_and_the_layers_below_it():
    def allowed(name, imported):
        if _package(name) not in LAYERS:
            return True
        return _package(imported) == CORE or (
            _package(imported) in LAYERS and LAYERS.index(_package(imported)) <= LAYERS.index(_package(name))
        )

    assert _breaking(allowed) == {}


def test_an_app_imports_only_the_leaves_of_the_composition_root():
    def allowed(name, imported):
        return _package(name) not in APPS or _package(imported) != COMPOSITION_ROOT or imported in LEAVES

    assert _breaking(allowed) == {}


def test_the_leaves_of_the_composition_root_import_no_app_and_nothing_else_of_it():
    def allowed(name, imported):
        if name not in LEAVES:
            return True
        return _package(imported) in (CORE, *LAYERS) or imported in LEAVES

    assert _breaking(allowed) == {}
    assert IMPORTS["pipeline"] == set(), "importing a leaf runs pipeline/__init__.py first"


def test_no_module_imports_itself_through_others():
    """Depth first from every module; a module met again on the current path closes a cycle."""
    done: set[str] = set()

    def cycle_from(module: str, path: list[str]) -> list[str] | None:
        if module in path:
            return path[path.index(module) :] + [module]
        if module in done:
            return None
        for imported in sorted(IMPORTS[module]):
            if found := cycle_from(imported, [*path, module]):
                return found
        done.add(module)
        return None

    cycles = [found for module in sorted(MODULES) if (found := cycle_from(module, []))]
    assert not cycles, "an import cycle: " + " -> ".join(cycles[0])


def test_building_a_session_needs_nothing_above_the_core():
    """The session builder names its jars from lakehouse/artifacts.py, which the installer
    (infra/native/jars.py) imports too, and only checks the catalog: no circle through
    infra/."""
    assert {_package(m) for m in IMPORTS["lakehouse.spark"]} <= {CORE}
    assert "lakehouse.spark" not in IMPORTS["infra.native.jars"]


def test_declaring_the_tables_imports_neither_pyspark_nor_great_expectations():
    """Rules are plain data (lakehouse/rules.py), so whatever only reads the declarations
    (the scheduler's graph, the reference pages, the JVM-free path) stays light."""
    import subprocess
    import sys

    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, bronze.tables, silver.tables, gold.tables; "
            "print(sorted({'pyspark', 'great_expectations'} & set(sys.modules)))",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert loaded == "[]"
