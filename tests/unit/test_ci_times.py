"""What `.ci/run` writes for the docs: its steps' times and, from pytest's own JUnit reports,
each group's tests and failures and where the time went."""

from __future__ import annotations

import subprocess
import sys

from benchmarks import ci_times


def test_the_ci_times_add_up_from_the_steps_and_the_groups_reports(tmp_path):
    reports = tmp_path / "test-reports"
    reports.mkdir()
    (tmp_path / "steps.tsv").write_text("install\t90\ntest\t1200\n")
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_fast.py").write_text("def test_a():\n    pass\n\ndef test_b():\n    pass\n")
    (tests / "test_slow.py").write_text("import time\n\ndef test_c():\n    time.sleep(0.3)\n")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:randomly",
            f"--junitxml={reports / 'unit.xml'}",
            str(tests),
        ],
        cwd=tmp_path,
        capture_output=True,
        check=True,
    )

    results = ci_times.measure(tmp_path / "steps.tsv", reports)

    assert results["total_seconds"] == 1290
    assert results["steps"] == {"install": 90, "test": 1200}
    assert results["groups"]["unit"]["tests"] == 3 and results["groups"]["unit"]["failures"] == 0
    assert [(m["module"], m["tests"]) for m in results["modules"]] == [("test_slow", 1), ("test_fast", 2)]
    assert results["slowest"][0]["test"] == "test_c" and results["slowest"][0]["seconds"] >= 0.3
    assert "| unit | 3 | 0 |" in ci_times.markdown(results)
