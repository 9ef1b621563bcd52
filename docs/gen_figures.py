"""The measured figures of every page, filled in from benchmarks/results/*.json at every build
of the site, as the plots are (docs/gen_plots.py).

A page names a figure by its file and its place in it, and the build writes the value:

    {{ run: incremental.seconds }}                          76.0
    {{ derived: sizes[sales_lines=10000000].speedup }}      2.8
    {{ ci: total_seconds as min }}                          64.2

The file is `benchmarks/results/<file>.json`; the place is keys joined by dots, where
`[key=value]` picks the item of a list whose `key` is `value` (`[a=1][b=2]`: both). After
`as`, a format: `min` (seconds as minutes, one decimal), `MiB` (bytes as MiB) or a Python
format spec (`,.0f`). Without one, the value is written as the file holds it, thousands
separated. (Not after `|`, which would break the tables the figures sit in, on GitHub.)

A page can also take a part's whole results page, the tables `make bench` writes beside
the file (`benchmarks/results/<file>.md`), under a line saying when and on what it was
measured:

    {{ results: freshness }}

A figure whose file is missing (a clone need not hold every result) reads "not measured";
a figure whose place is not in its file fails the build, as a page would otherwise show a
number nothing measured. tests/unit/test_docs.py fails on a measured figure typed into a
page instead.
"""

# A script of its own beside gen_plots.py, not a part of it: mkdocs-gen-files runs each
# script alone, with no package between them to share, and the two write different files.

from __future__ import annotations

import json
import logging
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
RESULTS = ROOT / "benchmarks" / "results"
FIGURE = re.compile(r"\{\{\s*([a-z_]+):\s*([^}]+?)(?:\s+as\s+([^}]+?))?\s*\}\}")
STEP = re.compile(r"([^.\[]+)((?:\[[^\]=]+=[^\]]+\])*)")
NAMED_FORMATS = {"min": (60, ".1f"), "MiB": (2**20, ".1f")}

log = logging.getLogger("mkdocs.plugins.gen_figures")


class FigureError(ValueError):
    """A page names a figure its results file does not hold."""


def _place(value, place: str, name: str):
    for key, picks in STEP.findall(place):
        try:
            value = value[key]
        except (KeyError, TypeError):
            raise FigureError(f"{name}.json has no {key!r} on the way to {place!r}") from None
        if wanted := re.findall(r"\[([^\]=]+)=([^\]]+)\]", picks):
            found = [item for item in value if all(str(item.get(k)) == v for k, v in wanted)]
            if len(found) != 1:
                raise FigureError(f"{name}.json: {len(found)} items of {key!r} match {picks}")
            value = found[0]
    return value


def _formatted(value, spec: str | None) -> str:
    if spec is None:
        return f"{value:,}" if isinstance(value, int | float) and not isinstance(value, bool) else str(value)
    divisor, spec = NAMED_FORMATS.get(spec, (1, spec))
    return format(value / divisor if divisor != 1 else value, spec)


def figure(name: str, place: str, spec: str | None = None, results_dir: Path = RESULTS) -> str:
    path = results_dir / f"{name}.json"
    if not path.exists():
        log.info("gen_figures: %s is missing; its figures read 'not measured'", path)
        return "not measured"
    return _formatted(_place(json.loads(path.read_text()), place, name), spec)


RESULTS_PAGE = re.compile(r"^\{\{\s*results:\s*([a-z_]+)\s*\}\}$", re.M)


def results_page(name: str, results_dir: Path = RESULTS) -> str:
    """The body of a part's results page (its title and machine line as one sentence), its
    headings under the page's own."""
    path = results_dir / f"{name}.md"
    if not path.exists():
        return f"Not measured in this clone: `python -m benchmarks --only {name}` writes `{path.name}`."
    title, _, machine, _, *body = path.read_text().splitlines()
    when = title.lstrip("# ")
    lines = [f"*From `benchmarks/results/{path.name}`: {when}. {machine}.*", ""]
    return "\n".join(lines + [f"##{line}" if line.startswith("#") else line for line in body])


def fill(text: str, results_dir: Path = RESULTS) -> str:
    """`text` with every results page and figure it names written in."""
    text = RESULTS_PAGE.sub(lambda m: results_page(m[1], results_dir), text)
    return FIGURE.sub(lambda m: figure(m[1], m[2], m[3], results_dir), text)


def pages() -> dict[str, str]:
    """Every page of docs/ that names a figure, by its path under docs/, filled in."""
    return {
        page.relative_to(DOCS).as_posix(): fill(text)
        for page in sorted(DOCS.rglob("*.md"))
        if FIGURE.search(text := page.read_text()) or RESULTS_PAGE.search(text)
    }


def _write_with_mkdocs() -> None:
    import mkdocs_gen_files

    for path, text in pages().items():
        with mkdocs_gen_files.open(path, "w") as page:
            page.write(text)


if __name__ == "<run_path>":  # mkdocs-gen-files runs the script under this name
    _write_with_mkdocs()
elif __name__ == "__main__":
    # `python docs/gen_figures.py PAGE` prints one page filled in, e.g. benchmarks.md.
    print(fill((DOCS / sys.argv[1]).read_text()))
