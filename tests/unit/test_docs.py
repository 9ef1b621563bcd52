"""The README stays a front door, its links land, the docs speak for themselves, the
reference pages can be generated from the code, and the benchmark plots from the results.

`make docs-build` (CI) checks every link inside the site with `mkdocs build --strict`; these
checks are the ones it cannot make, and they run in a second with `make test-unit`."""

from __future__ import annotations

import json
import re
import runpy
import shutil
import subprocess
from pathlib import Path
from xml.etree import ElementTree

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
RESULTS = ROOT / "benchmarks" / "results"
SVG = "{http://www.w3.org/2000/svg}"
# A relative Markdown link or image: ](target) or ](target "title").
LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)\s]*)?(?:\s+\"[^\"]*\")?\)")
# Spelled in two halves so that this file does not name what it looks for.
OUTSIDE_REFERENCES = ("DESIGN" + ".md", "../" + "shared")
CHECKED_SUFFIXES = (".py", ".md", ".sql", ".ipynb", ".toml", ".yml", ".yaml", ".properties")


def _project_files() -> list[Path]:
    """Tracked files, and new ones git does not ignore, outside the virtualenv."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        listed = [str(p.relative_to(ROOT)) for p in ROOT.rglob("*") if p.is_file()]
    return [
        ROOT / name
        for name in listed
        if not name.startswith((".venv/", ".git/", ".lake/", "site/"))
        and (name.endswith(CHECKED_SUFFIXES) or Path(name).name == "Makefile")
        and (ROOT / name).is_file()
    ]


def test_the_readme_is_a_front_door_of_at_most_200_lines():
    lines = README.read_text().splitlines()
    assert len(lines) <= 200, (
        f"README.md has {len(lines)} lines: move the detail to a page under docs/ and link it"
    )


def test_the_readmes_port_table_has_every_port_with_its_default_and_setting():
    """Every port setting's default, those inside a host:port or URL setting too, and the
    Spark UIs' fixed ports, in the README's table beside the variable that moves it."""
    from infra.workers import SPARK_UI_PORTS
    from lakehouse import settings

    rows = {
        port: cells[1]
        for cells in (
            [c.strip() for c in line.strip("|").split("|")] for line in README.read_text().splitlines()
        )
        if len(cells) == 3 and re.fullmatch(r"[0-9, ]+", cells[0])
        for port in re.findall(r"[0-9]+", cells[0])
    }
    missing = []
    for setting in settings.declared().values():
        default = str(setting.default)
        if setting.kind is settings.PORT or re.search(r"localhost:[0-9]+$", default):
            port = default.rsplit(":", 1)[-1]
            if setting.variable not in rows.get(port, ""):
                missing.append(f"{port} {setting.variable}")
    missing += [str(port) for port in SPARK_UI_PORTS if str(port) not in rows]
    assert missing == []


def test_every_relative_link_of_the_readme_resolves():
    targets = [t for t in LINK.findall(README.read_text()) if "://" not in t]
    assert any(t.startswith("docs/") for t in targets), "the README links no docs page"
    missing = [t for t in targets if not (ROOT / t).exists()]
    assert not missing, f"README.md links files that do not exist: {missing}"


def test_no_file_points_outside_the_repository():
    found = [
        f"{path.relative_to(ROOT)}: {needle}"
        for path in _project_files()
        for needle in OUTSIDE_REFERENCES
        if needle in path.read_text(errors="replace")
    ]
    assert not found, (
        "these name a blueprint people who clone the project do not have; "
        f"say it in our own words in docs/ instead: {found}"
    )


@pytest.fixture(scope="module")
def reference():
    """The generated pages, as `mkdocs build` makes them (no JVM, no services)."""
    generator = runpy.run_path(str(ROOT / "docs" / "gen_reference.py"), run_name="gen_reference")
    return generator["pages"]()


def test_the_reference_pages_cover_every_table_command_and_setting(reference):
    from bronze.tables import BRONZE_TABLES
    from lakehouse import settings
    from medallion.tables import derived_tables
    from pipeline import cli

    tables = reference["reference/tables.md"]
    for table in [*BRONZE_TABLES, *derived_tables()]:
        assert f"### {table.name} {{ #{table.name} }}" in tables
    commands = reference["reference/commands.md"]
    subcommands = next(a for a in cli.parser()._actions if a.dest == "command").choices
    for name in subcommands:
        assert f"## lakehouse {name} {{ #{name} }}" in commands
        assert f"usage: lakehouse {name}" in commands
    page = reference["reference/settings.md"]
    for variable in [*settings.load().environment(), *settings.SECRET_VARIABLES]:
        assert f"| `{variable}` |" in page, variable


def test_the_settings_page_shows_the_defaults_not_this_shell(reference, monkeypatch):
    monkeypatch.setenv("DASHBOARD_PORT", "1234")
    generator = runpy.run_path(str(ROOT / "docs" / "gen_reference.py"), run_name="gen_reference")
    page = generator["pages"]()["reference/settings.md"]
    assert "| `DASHBOARD_PORT` | `8501` |" in page
    assert page == reference["reference/settings.md"]


def test_every_docs_page_is_in_the_site_navigation():
    nav = (ROOT / "mkdocs.yml").read_text()
    pages = [p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md")]
    assert pages and not [p for p in pages if f": {p}" not in nav]


@pytest.fixture(scope="module")
def plotter():
    """docs/gen_plots.py's functions, as `mkdocs build` runs them (no services)."""
    return runpy.run_path(str(ROOT / "docs" / "gen_plots.py"), run_name="gen_plots")


def _labels(svg: str) -> tuple[str, list[str], list[str]]:
    """A plot's title, the texts it shows, and the values its points carry (their <title>)."""
    root = ElementTree.fromstring(svg)  # also: the SVG is well-formed
    assert root.get("role") == "img" and root.get("aria-labelledby") == "title desc"
    shown = [t.text for t in root.iter(f"{SVG}text")]
    points = [t.text for c in root.iter(f"{SVG}circle") for t in c.iter(f"{SVG}title")]
    return root.find(f"{SVG}title").text, shown, points


def test_every_benchmark_plot_is_drawn_from_its_results_file(plotter):
    run, freshness, bronze, derived = (
        json.loads((RESULTS / f"{name}.json").read_text())
        for name in ("run", "freshness", "bronze", "derived")
    )
    plots = {path.rsplit("/", 1)[1]: _labels(svg) for path, svg in plotter["plots"]().items()}
    assert not [name for name, (title, _, _) in plots.items() if title.startswith("No plot")]
    incremental = run["incremental"]
    latency = [bronze["latency"]["all"], *bronze["latency"]["tables"].values()]
    expected = {
        "scheduled-run.svg": [
            incremental["bronze_seconds"],
            incremental["derived_seconds"],
            incremental["other_seconds"],
            *(t["seconds"] for t in incremental["tables"].values()),
        ],
        "bronze-throughput.svg": [
            p[f"{half}_events_per_second"]
            for p in bronze["throughput"]["phases"]
            for half in ("capture", "landing")
        ],
        "bronze-latency.svg": [t[f"{k}_seconds"] for t in latency for k in ("p50", "p95", "max")],
        "derived.svg": [
            s[mode]["seconds"] for s in derived["sizes"] for mode in ("incremental", "full_refresh")
        ],
    }
    for name, values in expected.items():
        _, shown, _ = plots[name]
        assert not [v for v in values if f"{v:,}" not in shown], name
    _, shown, points = plots["freshness.svg"]
    assert len(points) == 3 * len(freshness["per_probe"])
    for probe, p in enumerate(freshness["per_probe"], start=1):
        for layer, label in (("bronze", "Bronze"), ("silver", "Silver"), ("gold", "Gold")):
            assert any(t.startswith(label) and t.endswith(f" at {probe}: {p[layer]}") for t in points)
    gold = freshness["probe_latency"]["gold"]
    assert any(f"p50 {gold['p50_seconds']} s, p95 {gold['p95_seconds']} s" in t for t in shown)


def test_a_benchmark_plot_follows_its_file_and_a_missing_file_is_said_in_its_place(plotter, tmp_path):
    bronze = json.loads((RESULTS / "bronze.json").read_text())
    bronze["throughput"]["phases"][0]["landing_events_per_second"] = 12_345
    (tmp_path / "bronze.json").write_text(json.dumps(bronze))
    shutil.copy(RESULTS / "derived.json", tmp_path)
    plots = plotter["plots"](tmp_path)
    assert "12,345" in _labels(plots["images/benchmarks/bronze-throughput.svg"])[1]
    title, _, _ = _labels(plots["images/benchmarks/scheduled-run.svg"])
    assert title == "No plot: benchmarks/results/run.json is not in this checkout"
    assert _labels(plots["images/benchmarks/freshness.svg"])[0].startswith("No plot")
    assert not _labels(plots["images/benchmarks/derived.svg"])[0].startswith("No plot")


def test_the_benchmarks_page_shows_every_plot_the_build_draws(plotter):
    page = (ROOT / "docs" / "benchmarks.md").read_text()
    shown = set(re.findall(r"!\[[^\]]+\]\((images/benchmarks/[^)]+\.svg)\)", page))
    assert shown == set(plotter["plots"]())


def test_the_derived_table_tutorial_declares_a_table_that_keeps_every_other():
    """The tutorial's transform, saved where it says, and its declaration, run where it says
    to put it (gold/tables.py), declare a valid table and keep every Gold table in the tuple."""
    import gold.tables

    page = (ROOT / "docs" / "tutorials" / "add-a-derived-table.md").read_text()
    [sql] = re.findall(r"```sql\n(.*?)```", page, re.S)
    [declaration] = [b for b in re.findall(r"```python\n(.*?)```", page, re.S) if "GOLD_TABLES" in b]
    transform = ROOT / "gold" / "transforms" / "channel_daily_sales.sql"
    transform.write_text(sql)
    try:
        module = dict(vars(gold.tables))
        exec(declaration, module)
    finally:
        transform.unlink()
    assert module["GOLD_TABLES"] == (*gold.tables.GOLD_TABLES, module["CHANNEL_DAILY_SALES"])


@pytest.fixture(scope="module")
def figures():
    return runpy.run_path(str(ROOT / "docs" / "gen_figures.py"), run_name="gen_figures")


def test_every_figure_a_page_names_is_in_its_results_file(figures):
    """The build writes each named figure from its file: a name whose file is here but
    whose place in it is not would fail `make docs-build`."""
    filled = figures["pages"]()
    assert {"benchmarks.md", "testing.md"} <= set(filled)
    assert all(not figures["FIGURE"].search(text) for text in filled.values())


def test_a_figure_is_written_as_its_file_holds_it_and_a_wrong_place_fails(figures, tmp_path):
    (tmp_path / "ci.json").write_text(
        json.dumps({"total_seconds": 3852, "modules": [{"module": "test_chaos", "seconds": 255.4}]})
    )
    fill = figures["fill"]
    assert fill("{{ ci: total_seconds as min }} min", tmp_path) == "64.2 min"
    assert fill("{{ ci: total_seconds }} s", tmp_path) == "3,852 s"
    assert fill("| {{ ci: modules[module=test_chaos].seconds as .0f }} |", tmp_path) == "| 255 |"
    assert fill("{{ run: incremental.seconds }}", tmp_path) == "not measured"
    with pytest.raises(figures["FigureError"], match="ci.json has no 'totl_seconds'"):
        fill("{{ ci: totl_seconds }}", tmp_path)


# A measured figure as the pages write one: a decimal with its unit (`57.0 s`, `1.8 MiB`,
# `2.8x`), or a decimal alone in a table's cell. A limit or a target is written whole, or
# after `≤` or `≥`, and a setting's value whole (`1 GiB heap`, `every 10 s`).
TYPED_FIGURE = re.compile(
    r"(?<![\w.$/≤≥-])(?<!≤ )(?<!≥ )\d[\d,]*\.\d+\s?(?:s|min|ms|MiB|GiB|KiB|MB|GB|x|%)(?![\w/])"
)
TYPED_CELL = re.compile(r"\**\d[\d,]*\.\d+\**(?: ?[a-zA-Z%/]+)?")


def test_no_page_types_a_measured_figure(figures):
    """Every measured figure in the README and the pages is written in at build from its
    results file, so none can drift from what was measured. The changelog, which keeps the
    figures from before each change, is the exception."""
    pages = [README, *(p for p in (ROOT / "docs").rglob("*.md"))]
    typed = {}
    for page in pages:
        text = figures["RESULTS_PAGE"].sub("", figures["FIGURE"].sub("", page.read_text()))
        text = re.sub(r"`[^`]*`", "", re.sub(r"```.*?```", "", text, flags=re.S))
        cells = [c.strip() for row in re.findall(r"^\|.*\|$", text, re.M) for c in row.strip("|").split("|")]
        found = TYPED_FIGURE.findall(text) + [c for c in cells if TYPED_CELL.fullmatch(c)]
        if found:
            typed[page.relative_to(ROOT).as_posix()] = found
    assert typed == {}, "name these as {{ <results file>: <place> }} (docs/gen_figures.py): " + str(typed)
