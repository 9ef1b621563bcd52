"""The reference pages of the documentation site, generated from the code at every build.

mkdocs-gen-files runs this script inside `mkdocs build` and `mkdocs serve` (mkdocs.yml). It
writes three pages that exist only in the built site, never in git:

- reference/tables.md: every table from its declaration (bronze/tables.py, silver/tables.py,
  gold/tables.py through medallion/tables.py), with its keys, layout, inputs, rules, the Hudi
  options it is written with, and lineage diagrams;
- reference/commands.md: the make targets as `make help` lists them, and the `--help` of
  `lakehouse` and of every subcommand, from the parser pipeline/cli/ builds;
- reference/settings.md: every setting from its one declaration in lakehouse/settings.py
  (variable, default, what it accepts, what it is for), the secrets, and the variables read
  elsewhere.

A page typed by hand drifts the day a declaration changes; these cannot. Importing the
declarations imports PySpark but starts no JVM, so the build needs no services. The site also
shows CHANGELOG.md and the dashboard's screenshots, copied in here so that each file has one
home in git.

`python docs/gen_reference.py OUT_DIR` writes the same pages to a folder, to look at them
without MkDocs.
"""

# Why one module: mkdocs-gen-files runs one script, and the three pages share its helpers
# (tables of rows, links to pages, the empty environment defaults are read in). Split, the
# pages would each import the other two's helpers.

from __future__ import annotations

import ast
import contextlib
import inspect
import os
import re
import sys
import tempfile
import textwrap
import warnings
from collections.abc import Iterator
from pathlib import Path

# kafka-python 3.0 loads its protocol schemas with importlib.resources' legacy API, and the
# declarations import it; the warning is about kafka-python, not these pages (pytest filters
# it the same way, pyproject.toml).
warnings.filterwarnings("ignore", "(read|open)_text is deprecated", DeprecationWarning)

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
# argparse wraps help to the terminal's width; a fixed width keeps the page the same on
# every machine.
HELP_WIDTH = "100"


# ---------------------------------------------------------------------------------------------
# Tables


def _code(values) -> str:
    return ", ".join(f"`{v}`" for v in values) if values else "—"


def _node(table) -> str:
    return f"{table.layer}_{table.name}"


def _topic_node(topic: str) -> str:
    return "topic_" + re.sub(r"\W", "_", topic)


def _readers(table, derived) -> list:
    return [t for t in derived if any(i.table.name == table.name for i in t.inputs)]


def _partitioning(table) -> str:
    p = table.partitioning
    if p is None:
        return "not partitioned"
    derived = f", derived as the UTC date of `{p.from_ts}`" if p.from_ts else ""
    if p.by == "none":
        return f"not partitioned (the book's partition column `{p.column}` is named{derived})"
    how = {
        "month": f"by month of `{p.column}` (folder column `{p.field}`, yyyy-MM)",
        "day": f"by day: `{p.column}`",
        "value": f"by value of `{p.column}` (folder column `{p.field}`, URL-encoded)",
    }[p.by]
    return how + derived


def _ordering(table) -> str:
    if table.merge_mode == "EVENT_TIME_ORDERING":
        return f"{_code(table.ordering)}: per key, the highest value wins (`EVENT_TIME_ORDERING`)"
    return f"the latest commit wins (`COMMIT_TIME_ORDERING`); {_code(table.ordering)} is kept as a column"


def _table_rows(rows: list[tuple[str, str]]) -> list[str]:
    return ["| | |", "|---|---|", *(f"| {k} | {v} |" for k, v in rows), ""]


def _hudi_options(table, settings) -> list[str]:
    from lakehouse.tables import hudi_options

    options = hudi_options(table, settings)
    body = "\n".join(f"{key}={value}" for key, value in sorted(options.items()))
    return [
        '??? note "Hudi write options (from `lakehouse.tables.hudi_options`, default settings)"',
        "",
        "    ```properties",
        textwrap.indent(body, "    "),
        "    ```",
        "",
    ]


def _lineage(table, derived, bronze) -> list[str]:
    """Mermaid: what the table reads and who reads it, one step each way."""
    lines = ["```mermaid", "flowchart LR"]
    me = _node(table)
    lines.append(f'    {me}["{table.qualified_name}"]')
    if table in bronze:
        lines.append(f'    {_topic_node(table.topic)}(["Kafka: {table.topic}"]) --> {me}')
    for i in getattr(table, "inputs", ()):
        lines.append(f'    {_node(i.table)}["{i.table.qualified_name}"] -- "{i.alias}" --> {me}')
    for reader in _readers(table, derived):
        lines.append(f'    {me} --> {_node(reader)}["{reader.qualified_name}"]')
    lines.append(f"    style {me} stroke-width:3px")
    return [*lines, "```", ""]


def _whole_graph(bronze, derived) -> list[str]:
    lines = ["```mermaid", "flowchart LR"]
    for topic in [t.topic for t in bronze]:
        lines.append(f'    {_topic_node(topic)}(["{topic}"])')
    layers = {"bronze": bronze} | {
        layer: [t for t in derived if t.layer == layer] for layer in ("silver", "gold")
    }
    for layer, tables in layers.items():
        lines.append(f"    subgraph {layer}")
        lines += [f'        {_node(t)}["{t.name}"]' for t in tables]
        lines.append("    end")
    lines += [f"    {_topic_node(t.topic)} --> {_node(t)}" for t in bronze]
    lines += [f"    {_node(i.table)} --> {_node(t)}" for t in derived for i in t.inputs]
    return [*lines, "```", ""]


def _argument(value) -> str:
    if isinstance(value, dict) and "$PARAMETER" in value:
        parameter = value["$PARAMETER"]
        if parameter == "now":
            return "the time of the run"
        seconds = parameter.removeprefix("fresh_since_")
        return f"the time of the run less {int(seconds):,} s"
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    return str(value)


def _rule_rows(table) -> list[str]:
    from lakehouse.rules import HELD_BACK

    lines = ["| rule | tier | checked with | on | arguments |", "|---|---|---|---|---|"]
    for rule in table.rules:
        arguments = dict(rule.arguments)
        on = rule.columns if rule.row_level or rule.columns else ()
        shown = "; ".join(
            f"{k} = {_argument(v)}"
            for k, v in arguments.items()
            if k not in ("column", "column_list") and v is not None
        )
        notes = []
        if rule.computed:
            check = rule.computed[1]
            notes.append(f"computed by `{check.__module__}.{check.__qualname__}`")
            on = (rule.computed[0],)
        if rule.waits_for:
            notes.append(f"{HELD_BACK} until input `{rule.waits_for}` brings the row")
        if rule.fails_nulls:
            notes.append("a null fails")
        elif rule.nullable:
            notes.append("a null passes")
        cells = "; ".join(filter(None, [shown, *notes])) or "—"
        lines.append(f"| {rule.name} | `{rule.tier}` | `{rule.expectation}` | {_code(on)} | {cells} |")
    return [*lines, ""]


def _sql(sql: str) -> str:
    return textwrap.dedent(sql).strip()


def _bronze_section(table, derived, settings) -> list[str]:
    from bronze.decode import lineage_columns
    from bronze.tables import DEBEZIUM

    cdc = table.envelope == DEBEZIUM
    rows = [
        ("catalog name", f"`{table.qualified_name}`"),
        ("Hudi table type", f"`{table.table_type}`, change log (CDC) {'on' if table.change_log else 'off'}"),
        (
            "lands",
            f"Kafka topic `{table.topic}`"
            + (f", Debezium's capture of `{table.source_table}`" if cdc else ", JSON events"),
        ),
        ("record key", _code(table.record_key)),
        (
            "Kafka key",
            "Debezium's: the record key"
            if cdc
            else f"{_code(table.kafka_key)}"
            + (", joined by a vertical bar" if len(table.kafka_key) > 1 else ""),
        ),
        ("ordering", _ordering(table)),
        ("partitioning", _partitioning(table)),
        ("layout", f"{table.layout.describe()}; bucket index"),
        ("quarantine", f"`{table.quarantine.qualified_name}`, keyed by {_code(table.quarantine.record_key)}"),
        ("read by", ", ".join(f"[`{r.name}`](#{r.name})" for r in _readers(table, derived)) or "—"),
    ]
    lines = [
        f"### {table.name} {{ #{table.name} }}",
        "",
        table.description,
        "",
        *_table_rows(rows),
        *_lineage(table, derived, [table]),
        "| column | type | may be null |",
        "|---|---|---|",
    ]
    for column, kind in table.columns.items():
        lines.append(f"| `{column}` | `{kind}` | {'yes' if column in table.nullable else 'no'} |")
    lines += [
        "",
        "Beside them, each row carries the columns the decoder adds "
        f"(`bronze/decode.py`): {_code(lineage_columns(table))}.",
        "",
    ]
    if table.personal:
        personal = table.personal
        lines += [
            "Personal data, overwritten by `lakehouse erase` "
            f"(the person is `{personal.subject}`; values of {_code(personal.searched)} "
            "are also searched for in free text):",
            "",
            "| column | overwritten with |",
            "|---|---|",
        ]
        lines += [f"| `{c}` | {'NULL' if v is None else f'`{v}`'} |" for c, v in personal.erased.items()]
        lines.append("")
    return [*lines, *_hudi_options(table, settings)]


def _derived_section(table, derived, settings) -> list[str]:
    path = f"{table.layer}/transforms/{table.transform}.sql"
    rows = [
        ("catalog name", f"`{table.qualified_name}`"),
        ("Hudi table type", f"`{table.table_type}`, change log (CDC) {'on' if table.change_log else 'off'}"),
        ("record key", _code(table.record_key)),
        ("ordering", _ordering(table)),
        ("partitioning", _partitioning(table)),
        ("layout", f"{table.layout.describe()}; bucket index"),
        ("transform", f"`{path}`"),
        ("fresh within", f"{table.fresh_within} behind the source (its freshness target)"),
        ("quarantine", f"`{table.quarantine.qualified_name}`"),
        ("read by", ", ".join(f"[`{r.name}`](#{r.name})" for r in _readers(table, derived)) or "—"),
    ]
    lines = [
        f"### {table.name} {{ #{table.name} }}",
        "",
        table.description,
        "",
        *_table_rows(rows),
        *_lineage(table, derived, []),
        "#### Inputs",
        "",
    ]
    for i in table.inputs:
        facts = [f"- **`{i.alias}`**: [`{i.table.qualified_name}`](#{i.table.name})"]
        if i.prune:
            window = f"from *v* - {i.reach.days} days to *v*" if i.reach else "= *v*"
            facts.append(
                f"  - pruned: output rows with `{i.prune[1]}` = *v* come only from "
                f"input rows with `{i.prune[0]}` {window}, so a run reads only the "
                f"affected values' partitions"
            )
        if i.reads:
            facts.append(
                f"  - reads only {_code(i.reads)}: a change leaving them as they were affects nothing"
            )
        if i.affects:
            facts += [
                "  - affected output rows, from the view `changed`:",
                "",
                "    ```sql",
                textwrap.indent(_sql(i.affects), "    "),
                "    ```",
            ]
        else:
            facts.append("  - affected output rows: the changed rows' own key values")
        lines += [*facts, ""]
    lines += [
        "#### Rules",
        "",
        *_rule_rows(table),
        f'??? note "Transform: `{path}`"',
        "",
        "    ```sql",
        textwrap.indent(table.transform_sql().strip(), "    "),
        "    ```",
        "",
        *_hudi_options(table, settings),
    ]
    return lines


def tables_page(settings) -> str:
    from bronze.tables import BRONZE_TABLES
    from lakehouse.tables import LAYERS, DerivedTable
    from medallion.tables import declared_tables, derived_tables

    bronze, derived = list(BRONZE_TABLES), derived_tables()
    lines = [
        "# Tables",
        "",
        "Generated from the declarations (`bronze/tables.py`, `silver/tables.py`, "
        "`gold/tables.py`) at every build of this site: what is here is what the code runs. "
        "How the declarations become jobs is in [Architecture](../architecture.md); how to add "
        "one, in the [tutorials](../tutorials/add-a-bronze-table.md).",
        "",
        "## Lineage",
        "",
        "Every Kafka topic lands in one Bronze table; every Silver and Gold table reads its "
        "declared inputs' change logs.",
        "",
        *_whole_graph(bronze, derived),
        "Run order of a pass (`lakehouse run`, a scheduled run), each table after the tables it "
        "reads and depth first: " + ", ".join(f"`{t.name}`" for t in derived) + ".",
        "",
        "The continuous pipeline (`lakehouse run --continuous`) runs no fixed pass: it runs "
        "next the table most overdue against its freshness target (`fresh within`), after "
        "the tables it reads ([Architecture](../architecture.md#continuous))."
        "",
        "| table | layer | grain |",
        "|---|---|---|",
    ]
    for t in [*bronze, *sorted(derived, key=lambda t: LAYERS.index(t.layer))]:
        grain = t.description.split(". ")[0].removeprefix("Grain: ").rstrip(".")
        lines.append(f"| [`{t.name}`](#{t.name}) | {t.layer} | {grain} |")
    lines += ["", "## Bronze", ""]
    for table in bronze:
        lines += _bronze_section(table, derived, settings)
    for layer in ("silver", "gold"):
        lines += [f"## {layer.capitalize()}", ""]
        for table in [t for t in derived if t.layer == layer]:
            lines += _derived_section(table, derived, settings)
    lines += [
        "## Quarantine and quality-result tables",
        "",
        "Declared with the tables above, not on their own.",
        "",
        "| table | record key | what it holds |",
        "|---|---|---|",
    ]
    main = {t.name for t in [*bronze, *derived]}
    for t in sorted(declared_tables(), key=lambda t: LAYERS.index(t.layer)):
        if t.name not in main and not isinstance(t, DerivedTable):
            lines.append(f"| `{t.qualified_name}` | {_code(t.record_key)} | {t.description} |")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# Commands


def make_targets() -> list[tuple[str, str]]:
    """(target, what it does) for every target with a `## ` comment, as `make help` reads them."""
    makefile = (ROOT / "Makefile").read_text()
    return re.findall(r"^([a-z-]+):.*?## (.*)$", makefile, re.M)


def commands_page() -> str:
    import argparse

    from pipeline import cli

    root = cli.parser()
    commands = next(a for a in root._actions if isinstance(a, argparse._SubParsersAction))
    summaries = {choice.dest: choice.help for choice in commands._choices_actions}
    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = HELP_WIDTH
    try:
        return _commands_page(root, commands, summaries)
    finally:
        if saved is None:
            os.environ.pop("COLUMNS")
        else:
            os.environ["COLUMNS"] = saved


def _commands_page(root, commands, summaries) -> str:
    lines = [
        "# Commands",
        "",
        "The make targets and the `--help` of `lakehouse` and of each of its commands, "
        "generated from the Makefile and from the parser in `pipeline/cli/` at every "
        "build of this site. What each exit status means is in "
        "[Operations](../operations.md#exit-statuses).",
        "",
        "## Make targets",
        "",
        "`make help` prints the same list.",
        "",
        "| target | what it does |",
        "|---|---|",
        *(f"| `make {name}` | {text} |" for name, text in make_targets()),
        "",
        "## lakehouse",
        "",
        "```text",
        root.format_help().rstrip(),
        "```",
        "",
    ]
    for name, sub in commands.choices.items():
        summary = summaries.get(name) or ""
        lines += [
            f"## lakehouse {name} {{ #{name} }}",
            "",
            f"{summary[:1].upper()}{summary[1:]}.",
            "",
            "```text",
            sub.format_help().rstrip(),
            "```",
            "",
        ]
    from benchmarks.__main__ import parser as benchmarks_parser

    lines += [
        "## make bench { #benchmarks }",
        "",
        "`make bench` runs `python -m benchmarks` with these defaults; each part writes its "
        "results to `benchmarks/results/` ([Benchmarks](../benchmarks.md)).",
        "",
        "```text",
        benchmarks_parser().format_help().rstrip(),
        "```",
        "",
    ]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Settings


def _variable_calls(node: ast.AST) -> Iterator[tuple[str, ast.Call]]:
    """(variable, the call reading it) for every call in `node` whose first argument names a
    variable, as `_require("PGPASSWORD")`."""
    for call in ast.walk(node):
        if (
            isinstance(call, ast.Call)
            and call.args
            and isinstance(call.args[0], ast.Constant)
            and isinstance(call.args[0].value, str)
            and re.fullmatch(r"[A-Z][A-Z0-9_]+", call.args[0].value)
        ):
            yield call.args[0].value, call


@contextlib.contextmanager
def _empty_environment(variables):
    """No project variable set and no `.env` in sight (a temporary folder is the working
    directory): what `load()` then returns is the defaults."""
    saved_environ, saved_cwd = dict(os.environ), Path.cwd()
    with tempfile.TemporaryDirectory() as folder:
        for name in variables:
            os.environ.pop(name, None)
        os.chdir(folder)
        try:
            yield
        finally:
            os.chdir(saved_cwd)
            os.environ.clear()
            os.environ.update(saved_environ)


def default_settings():
    """The settings every page is generated with: the defaults, whatever this shell sets."""
    from lakehouse import settings as module

    names = [s.variable for s in module.declared().values()] + list(module.SECRET_VARIABLES)
    with _empty_environment(names):
        return module.load()


def _mentions(variable: str) -> list[Path]:
    """The hand-written pages that name `variable`."""
    pattern = re.compile(rf"\b{variable}\b")
    return sorted(p for p in DOCS.rglob("*.md") if pattern.search(p.read_text()))


def _page_link(path: Path) -> str:
    relative = path.relative_to(DOCS).as_posix()
    title = (
        "Overview"
        if relative == "index.md"
        else next(
            (line[2:].strip() for line in path.read_text().splitlines() if line.startswith("# ")), relative
        )
    )
    return f"[{title}](../{relative})"


def _makefile_variables() -> list[tuple[str, str, str]]:
    """(variable, default, target) for every `$${NAME:-default}` in the Makefile."""
    found = []
    target = ""
    for line in (ROOT / "Makefile").read_text().splitlines():
        if re.match(r"^[a-z-]+:", line):
            target = line.split(":")[0]
        for name, default in re.findall(r"\$\$\{([A-Z_]+):-([^}]*)\}", line):
            found.append((name, default, target))
    return found


def _read_elsewhere() -> list[tuple[str, str]]:
    """(variable, module) for environment variables the project's packages read outside
    lakehouse/settings.py."""
    found = []
    for path in sorted(ROOT.glob("*/*.py")) + sorted(ROOT.glob("*/*/*.py")):
        relative = path.relative_to(ROOT).as_posix()
        if (
            relative.split("/")[0] in ("tests", "docs", "benchmarks")
            or ".venv" in relative
            or relative == "lakehouse/settings.py"
        ):
            continue
        for name in re.findall(r"os\.environ\.get\(\"([A-Z][A-Z0-9_]+)\"", path.read_text()):
            found.append((name, relative))
    return sorted(set(found))


def _secret_readers() -> dict[str, str]:
    """variable -> how the code reads it: the `Settings` property that requires it (with its
    docstring), or the Postgres role whose password it is."""
    from lakehouse import settings as module

    found = {
        role.password_variable: f"the password of the Postgres role `{role.name}` (`Settings.password`)"
        for role in module.PG_ROLES
    }
    for name, member in inspect.getmembers(module.Settings, lambda m: isinstance(m, property)):
        body = ast.parse(textwrap.dedent(inspect.getsource(member.fget)))
        for variable, _ in _variable_calls(body):
            doc = inspect.getdoc(member.fget)
            found[variable] = f"`Settings.{name}`" + (f": {doc}" if doc else "")
    return found


def settings_page() -> str:
    from lakehouse import settings as module

    lines = [
        "# Settings",
        "",
        "Every setting the `lakehouse` commands read, generated at every build of this site "
        "from `lakehouse/settings.py`, where each is declared once: `load()` reads and checks "
        "its variable by the same declaration. Set a variable in the environment or in "
        "`.env` (the environment wins). A value that fails its check stops every command at "
        "start, with exit status 2 and a message naming the variable.",
        "",
        "| variable | default | accepts | what | explained in |",
        "|---|---|---|---|---|",
    ]
    for declared in module.declared().values():
        default = module.render(declared.default)
        shown = f"`{default}`" if default else "empty"
        pages = ", ".join(_page_link(p) for p in _mentions(declared.variable)) or "—"
        lines.append(
            f"| `{declared.variable}` | {shown} | {declared.kind.accepts} | {declared.doc} | {pages} |"
        )
    lines += [
        "",
        "A default `${NAME}/...` is derived from the value of the variable `NAME`. A "
        "relative path is taken from the folder a command starts in, the checkout under "
        "`make`; `LAKEHOUSE_WAREHOUSE` may also be an `hdfs://` or `s3a://` URI "
        "([Scaling out](../scaling-out.md)).",
        "",
        "## Secrets",
        "",
        "No default: `make env` (`lakehouse env`) writes each with a random value to `.env`, "
        "readable by its owner only, and a command that needs one that is missing stops "
        "with a message naming it.",
        "",
        "| variable | read as | explained in |",
        "|---|---|---|",
    ]
    readers = _secret_readers()
    for name in module.SECRET_VARIABLES:
        pages = ", ".join(_page_link(p) for p in _mentions(name)) or "—"
        lines.append(f"| `{name}` | {readers.get(name, '—')} | {pages} |")
    lines += [
        "",
        "## Read elsewhere",
        "",
        "Variables read outside `lakehouse/settings.py`:",
        "",
        "| variable | read by |",
        "|---|---|",
    ]
    elsewhere: dict[str, list[str]] = {}
    for name, where in _read_elsewhere():
        elsewhere.setdefault(name, []).append(where)
    lines += [f"| `{name}` | {_code(where)} |" for name, where in elsewhere.items()]
    lines += [
        "",
        "And the Makefile's own, for its targets:",
        "",
        "| variable | default | target |",
        "|---|---|---|",
    ]
    lines += [
        f"| `{name}` | `{default}` | `make {target}` |" for name, default, target in _makefile_variables()
    ]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------


def pages() -> dict[str, str]:
    return {
        "reference/tables.md": tables_page(default_settings()),
        "reference/commands.md": commands_page(),
        "reference/settings.md": settings_page(),
    }


def _write_with_mkdocs() -> None:
    import mkdocs_gen_files

    sources = {
        "reference/tables.md": "bronze/tables.py",
        "reference/commands.md": "pipeline/cli/__init__.py",
        "reference/settings.md": "lakehouse/settings.py",
    }
    for path, text in pages().items():
        with mkdocs_gen_files.open(path, "w") as out:
            out.write(text)
        mkdocs_gen_files.set_edit_path(path, f"../{sources[path]}")
    # The changelog stays at the top of the checkout, where people look for it; the site
    # shows the same file.
    with mkdocs_gen_files.open("changelog.md", "w") as out:
        out.write((ROOT / "CHANGELOG.md").read_text())
    mkdocs_gen_files.set_edit_path("changelog.md", "../CHANGELOG.md")
    # The dashboard's screenshots live beside its code; the site shows the same files.
    for name in ("business.png", "pipeline.png"):
        with mkdocs_gen_files.open(f"images/{name}", "wb") as out:
            out.write((ROOT / "dashboard" / "screenshots" / name).read_bytes())


if __name__ == "<run_path>":  # mkdocs-gen-files runs the script under this name
    _write_with_mkdocs()
elif __name__ == "__main__":
    out_dir = Path(sys.argv[1] if len(sys.argv) > 1 else "site-reference")
    written = pages()
    for relative, text in written.items():
        (out_dir / relative).parent.mkdir(parents=True, exist_ok=True)
        (out_dir / relative).write_text(text)
    print(f"wrote {', '.join(written)} under {out_dir}")
