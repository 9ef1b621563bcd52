"""Dependencies point down (docs/architecture.md, "How the packages depend on each other"),
read from the source's import statements, those inside functions included.

The packages stand in one order, `HOUSE`, from the core at the bottom to the composition
root at the top, and every import points down it or stays in its package: no arrow between
two packages runs back up. Then:

- the core (lakehouse/) is the library every other package uses, and imports none of them;
- a layer (ingestion, bronze, silver, gold) imports the core and the layers below it;
- medallion/ (every table, the checks of what they hold, how the command is invoked) reads
  the layers, so every app reads the registry from below it;
- an app imports the apps below it: what a user reads (serving, ml) under what starts and
  watches the services (infra, monitoring), under the pages and operations over them
  (dashboard, operations, orchestration), under the benchmarks that drive them all;
- pipeline/ (the command line, the passes, the demo) may import anything, and nothing
  imports it;
- and no module imports itself through others: the graph of imports has no cycle."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HOUSE = (
    "lakehouse",
    "ingestion",
    "bronze",
    "silver",
    "gold",
    "medallion",
    "serving",
    "ml",
    "infra",
    "monitoring",
    "dashboard",
    "operations",
    "orchestration",
    "benchmarks",
    "pipeline",
)


def _modules() -> dict[str, Path]:
    """Every module of the project's packages by its dotted name (a package's, its
    __init__.py)."""
    found = {}
    for package in HOUSE:
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
    assert packages == set(HOUSE)


def test_every_import_points_down_the_house():
    def allowed(name, imported):
        return HOUSE.index(_package(imported)) <= HOUSE.index(_package(name))

    assert _breaking(allowed) == {}


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


def test_installing_the_jars_needs_no_session_builder():
    """The session builder and the installer (infra/native/jars.py) name the jars from
    lakehouse/artifacts.py, so installing them imports no Spark."""
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
