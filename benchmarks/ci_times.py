"""How long `.ci/run` took, step by step and test group by group: writes
benchmarks/results/ci.{json,md}, which the Testing page quotes (docs/gen_figures.py).

`.ci/run` times each of its steps into `.lake/ci/steps.tsv` (a name and seconds per line);
`make test` has pytest write a JUnit report per group into `.lake/test-reports/` (unit,
integration, compose), which give each group's tests, failures and seconds, and each test
module's and test's seconds (its fixtures' setup included). `python -m benchmarks.ci_times`
reads both. A fresh-clone run writes the file in the clone; copied into the repository, it
is the CI time the docs show.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path
from xml.etree import ElementTree

from benchmarks.report import RESULTS, header, machine

GROUPS = ("unit", "integration", "compose")
SLOWEST = 10


def group(report: Path) -> tuple[dict, list[dict]]:
    """A JUnit report's totals, and its tests with their module and seconds."""
    suite = ElementTree.parse(report).getroot()
    suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
    tests = [
        {
            "module": _module(case.get("classname", "")),
            "test": case.get("name"),
            "seconds": round(float(case.get("time", 0)), 1),
        }
        for case in suite.iter("testcase")
    ]
    totals = {
        "tests": int(suite.get("tests")),
        "failures": int(suite.get("failures")) + int(suite.get("errors")),
        "skipped": int(suite.get("skipped")),
        "seconds": round(float(suite.get("time")), 1),
    }
    return totals, tests


def _module(classname: str) -> str:
    """`tests.integration.test_chaos.TestX` or `tests.integration.test_chaos`: test_chaos."""
    return next((part for part in reversed(classname.split(".")) if part.startswith("test_")), classname)


def measure(steps_file: Path, reports: Path) -> dict:
    steps = {}
    for line in steps_file.read_text().splitlines():
        name, seconds = line.split("\t")
        steps[name] = int(seconds)
    groups, modules, every_test = {}, defaultdict(lambda: {"tests": 0, "seconds": 0.0}), []
    for name in GROUPS:
        report = reports / f"{name}.xml"
        if not report.exists():
            continue
        groups[name], tests = group(report)
        for test in tests:
            modules[(name, test["module"])]["tests"] += 1
            modules[(name, test["module"])]["seconds"] += test["seconds"]
            every_test.append({"group": name, **test})
    return {
        "machine": machine(),
        "total_seconds": sum(steps.values()),
        "steps": steps,
        "groups": groups,
        "modules": sorted(
            (
                {"group": g, "module": m, "tests": v["tests"], "seconds": round(v["seconds"], 1)}
                for (g, m), v in modules.items()
            ),
            key=lambda row: -row["seconds"],
        ),
        "slowest": sorted(every_test, key=lambda t: -t["seconds"])[:SLOWEST],
    }


def markdown(results: dict) -> str:
    lines = [
        *header("`.ci/run` from a fresh clone", results),
        f"In all: {results['total_seconds'] / 60:.1f} min.",
        "",
        "| step | min |",
        "|---|---:|",
        *(f"| {name} | {seconds / 60:.1f} |" for name, seconds in results["steps"].items()),
        "",
        "| test group | tests | failed | min |",
        "|---|---:|---:|---:|",
        *(
            f"| {name} | {g['tests']} | {g['failures']} | {g['seconds'] / 60:.1f} |"
            for name, g in results["groups"].items()
        ),
        "",
        "| module | tests | s |",
        "|---|---:|---:|",
        *(f"| {m['group']}/{m['module']} | {m['tests']} | {m['seconds']:,} |" for m in results["modules"]),
        "",
        f"The {SLOWEST} slowest tests:",
        "",
        "| test | s |",
        "|---|---:|",
        *(f"| {t['module']}::{t['test']} | {t['seconds']:,} |" for t in results["slowest"]),
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    state = Path(argv[0]) if argv else Path(".lake")
    results = measure(state / "ci" / "steps.tsv", state / "test-reports")
    (RESULTS / "ci.json").write_text(json.dumps(results, indent=2) + "\n")
    (RESULTS / "ci.md").write_text(markdown(results))
    print(f"CI took {results['total_seconds'] / 60:.1f} min: {RESULTS / 'ci.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
