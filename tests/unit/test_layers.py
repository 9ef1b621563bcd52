"""Dependencies point down: the core package (lakehouse/) is the library every layer uses,
so it imports none of them. Read from the source's import statements, those inside
functions included."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROJECT_PACKAGES = {"ingestion", "bronze", "silver", "gold", "serving", "monitoring",
                    "dashboard", "operations", "orchestration", "infra", "benchmarks"}
# Where the core still composes the layers: the list of every table, the command line, the
# demo and the verification of Bronze against Postgres. They are to move to a package of
# their own above the layers; until then no other core module may join them.
COMPOSING = {"catalog.py", "cli.py", "demo.py", "verify.py"}


def _imported_modules(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found |= {node.module, *(f"{node.module}.{alias.name}" for alias in node.names)}
    return found


def _imported_packages(path: Path) -> set[str]:
    return {module.split(".")[0] for module in _imported_modules(path)}


def test_the_core_imports_no_layer_service_or_app():
    above = {path.name: sorted(_imported_packages(path) & PROJECT_PACKAGES)
             for path in sorted((ROOT / "lakehouse").glob("*.py")) if path.name not in COMPOSING}
    assert {name: packages for name, packages in above.items() if packages} == {}


def test_building_a_session_needs_nothing_above_the_core():
    """The session builder names its jars from lakehouse/artifacts.py, which the installer
    (infra/native/jars.py) imports too, and only checks the catalog: no circle through
    infra/."""
    assert "infra" not in _imported_packages(ROOT / "lakehouse" / "spark.py")
    assert "lakehouse.spark" not in _imported_modules(ROOT / "infra" / "native" / "jars.py")
