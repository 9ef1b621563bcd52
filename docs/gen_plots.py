"""The Benchmarks page's plots, drawn from benchmarks/results/*.json at every build of the site.

mkdocs-gen-files runs this script inside `mkdocs build` and `mkdocs serve` (mkdocs.yml). It
writes images/benchmarks/*.svg, which docs/benchmarks.md shows and which exist only in the
built site: a plot drawn once drifts the day `make bench` writes new results; these cannot.

Plain SVG written here, not matplotlib (pinned for the notebooks): the same text on every
machine, labels that stay text (selectable, read by screen readers), nothing to install.

A clone need not hold every result (`python -m benchmarks --only ...` writes one part): a
missing file draws a note saying so in its plot's place, so the page's links still land. A
file of another shape fails the build, as the page's numbers would be as wrong as the plot.

`python docs/gen_plots.py OUT_DIR` writes the same files to a folder, to look at them alone.
"""

# Why one module: mkdocs-gen-files runs each script on its own, so the two chart functions and
# the five plots drawn with them share no importable package; split, they would need docs/ on
# sys.path.

from __future__ import annotations

import html
import json
import logging
import math
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
WIDTH, MARGIN, FONT = 720, 16, 12
# No font metrics without a renderer: an average character of a sans-serif face at FONT px,
# enough to leave room for the longest label.
CHAR = 0.6 * FONT
# Okabe and Ito's palette stays distinct under the common colour blindnesses; line plots also
# dash each series differently, for print in grey.
COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7")
DASHES = ("", "6 3", "2 3", "8 3 2 3")

log = logging.getLogger("mkdocs.plugins.gen_plots")


def _text(x, y, content, **attributes) -> str:
    extra = "".join(f' {k.replace("_", "-")}="{v}"' for k, v in attributes.items())
    return f'<text x="{x:.1f}" y="{y:.1f}"{extra}>{html.escape(str(content))}</text>'


def _number(value: float) -> str:
    """An axis step: thousands separated, no trailing zeros (0.6, not 0.6000000000000001)."""
    return f"{value:,.3f}".rstrip("0").rstrip(".")


def _value(value: float) -> str:
    """A measured value as its results file holds it (11.0 stays 11.0), thousands separated."""
    return f"{value:,}"


def _ticks(top: float) -> list[float]:
    """About five round steps (1, 2 or 5 times a power of ten) from 0 past top."""
    raw = (top or 1) / 5
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    return [i * step for i in range(math.ceil(top / step - 1e-9) + 1)]


def _svg(title: str, subtitle: str, height: float, body: list[str]) -> str:
    """The frame every plot shares: a title that screen readers announce, and a white ground
    so that the plot reads the same in either colour scheme of the theme."""
    frame = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height:.0f}" '
        f'viewBox="0 0 {WIDTH} {height:.0f}" role="img" aria-labelledby="title desc" '
        f'font-family="sans-serif" font-size="{FONT}">',
        f'<title id="title">{html.escape(title)}</title>',
        f'<desc id="desc">{html.escape(subtitle)}</desc>',
        '<rect width="100%" height="100%" fill="white"/>',
        _text(MARGIN, 22, title, font_size=15, font_weight="bold"),
        _text(MARGIN, 40, subtitle, fill="#555"),
    ]
    return "\n".join([*frame, *body, "</svg>", ""])


def _legend(names: list[str], y: float, dashed: bool = False) -> tuple[list[str], float]:
    """A swatch and a name per series, left to right, wrapping; returns them and the last row's y."""
    parts, x = [], MARGIN
    for i, name in enumerate(names):
        width = 30 + len(name) * CHAR
        if x > MARGIN and x + width > WIDTH - MARGIN:
            x, y = MARGIN, y + 18
        colour = COLOURS[i % len(COLOURS)]
        if dashed:
            parts.append(
                f'<line x1="{x}" y1="{y - 4}" x2="{x + 18}" y2="{y - 4}" stroke="{colour}" '
                f'stroke-width="2" stroke-dasharray="{DASHES[i % len(DASHES)]}"/>'
            )
        else:
            parts.append(f'<rect x="{x}" y="{y - 10}" width="12" height="12" fill="{colour}"/>')
        parts.append(_text(x + 24, y, name))
        x += width
    return parts, y


def bar_chart(title, subtitle, axis_label, categories, series) -> str:
    """Horizontal bars, a group per category and a bar per series, each labelled with its value.

    series: [(name, [value per category])]. Bars start at zero, so their lengths compare."""
    left = MARGIN + max(len(c) for c in categories) * CHAR + 8
    right = WIDTH - MARGIN - 70  # room for the last bar's value
    legend, top = _legend([name for name, _ in series], 62) if len(series) > 1 else ([], 44)
    top += 14
    bar, gap = 14, 12
    group = bar * len(series) + gap
    bottom = top + group * len(categories)
    ticks = _ticks(max(v for _, values in series for v in values))
    scale = (right - left) / ticks[-1]
    body = legend
    for tick in ticks:
        x = left + tick * scale
        body.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{bottom}" stroke="#ddd"/>')
        body.append(_text(x, bottom + 16, _number(tick), text_anchor="middle"))
    for c, category in enumerate(categories):
        y0 = top + c * group + gap / 2
        body.append(_text(left - 8, y0 + bar * len(series) / 2 + 4, category, text_anchor="end"))
        for s, (name, values) in enumerate(series):
            y, width = y0 + s * bar, values[c] * scale
            body.append(
                f'<rect x="{left}" y="{y:.1f}" width="{width:.1f}" height="{bar - 2}" '
                f'fill="{COLOURS[s % len(COLOURS)]}"><title>{html.escape(category)}, '
                f"{html.escape(name)}: {_value(values[c])}</title></rect>"
            )
            body.append(_text(left + width + 4, y + bar - 4, _value(values[c])))
    body.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{bottom}" stroke="#333"/>')
    body.append(_text((left + right) / 2, bottom + 36, axis_label, text_anchor="middle"))
    return _svg(title, subtitle, bottom + 50, body)


def line_chart(title, subtitle, x_label, y_label, x_ticks, series, label_points=False) -> str:
    """Points joined by lines over evenly spaced x steps (probes in order, source sizes each
    ten times the last), one line per series, y from zero.

    series: [(name, [value per x step])]; label_points writes each value beside its point, for
    plots of a few points."""
    legend, top = _legend([name for name, _ in series], 62, dashed=True)
    top += 20
    left, right, bottom = MARGIN + 56, WIDTH - MARGIN - 10, top + 260
    ticks = _ticks(max(v for _, values in series for v in values))
    y_scale = (bottom - top) / ticks[-1]
    step = (right - left) / len(x_ticks)
    body = legend
    for tick in ticks:
        y = bottom - tick * y_scale
        body.append(f'<line x1="{left}" y1="{y:.1f}" x2="{right}" y2="{y:.1f}" stroke="#ddd"/>')
        body.append(_text(left - 6, y + 4, _number(tick), text_anchor="end"))
    every = math.ceil(len(x_ticks) / 12)  # at most a dozen labels under the axis
    for i, label in enumerate(x_ticks):
        if i % every == 0:
            body.append(_text(left + (i + 0.5) * step, bottom + 16, label, text_anchor="middle"))
    for s, (name, values) in enumerate(series):
        colour = COLOURS[s % len(COLOURS)]
        points = [(left + (i + 0.5) * step, bottom - v * y_scale) for i, v in enumerate(values)]
        body.append(
            f'<polyline points="{" ".join(f"{x:.1f},{y:.1f}" for x, y in points)}" fill="none" '
            f'stroke="{colour}" stroke-width="2" stroke-dasharray="{DASHES[s % len(DASHES)]}"/>'
        )
        for (x, y), label, value in zip(points, x_ticks, values):
            body.append(
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="{colour}"><title>'
                f"{html.escape(name)} at {html.escape(label)}: {_value(value)}</title></circle>"
            )
            if label_points:
                body.append(_text(x, y - 10, _value(value), fill=colour, text_anchor="middle"))
    body.append(f'<line x1="{left}" y1="{bottom}" x2="{right}" y2="{bottom}" stroke="#333"/>')
    body.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{bottom}" stroke="#333"/>')
    body.append(_text((left + right) / 2, bottom + 36, x_label, text_anchor="middle"))
    x, y = MARGIN + 4, (top + bottom) / 2
    body.append(_text(x, y, y_label, text_anchor="middle", transform=f"rotate(-90 {x} {y:.1f})"))
    return _svg(title, subtitle, bottom + 50, body)


def missing(name: str) -> str:
    """What stands in a plot's place when its results file is not in this checkout."""
    title = f"No plot: benchmarks/results/{name}.json is not in this checkout"
    return _svg(title, f"python -m benchmarks --only {name} measures it and writes the file.", 56, [])


# ---------------------------------------------------------------------------------------------
# One function per plot, from the results file it is named after.


def _measured(results: dict) -> str:
    m = results["machine"]
    return f"Measured {m['date']} on {m['cores']} cores, {m['memory_gib']} GiB, Hudi {m['hudi']}"


def bronze_throughput(results: dict) -> str:
    t = results["throughput"]
    phases = t["phases"]
    return bar_chart(
        f"Bronze throughput, one bulk change of {phases[0]['events']:,} events at a time",
        _measured(results) + "; sustained is what the slower half of all three allows",
        "events per second (longer is faster)",
        [p["phase"] for p in phases] + ["sustained"],
        [
            (label, [p[f"{half}_events_per_second"] for p in phases] + [t[f"{half}_events_per_second"]])
            for half, label in THROUGHPUT.items()
        ],
    )


THROUGHPUT = {
    "capture": "capture: Postgres commit to all events in Kafka",
    "landing": "landing: Kafka to Bronze (lakehouse bronze)",
}


# (key in the results, name in the legend)
LATENCY = (("p50", "median (p50)"), ("p95", "95th percentile"), ("max", "slowest row"))


def bronze_latency(results: dict) -> str:
    latency = results["latency"]
    rows = [("all tables", latency["all"]), *latency["tables"].items()]
    rows = [(name, t) for name, t in rows if t["rows"]]  # as the results page: no rows, no line
    return bar_chart(
        f"Bronze latency, continuous mode with a {latency['trigger_seconds']} s trigger",
        _measured(results) + f"; {latency['transactions_per_second']} transactions/s and "
        f"{latency['events_per_second']} events/s for {latency['duration_seconds']:.0f} s",
        "seconds from the Postgres commit to readable in Bronze (shorter is fresher)",
        [name for name, _ in rows],
        [(label, [t[f"{key}_seconds"] for _, t in rows]) for key, label in LATENCY],
    )


def derived(results: dict) -> str:
    sizes = results["sizes"]
    return line_chart(
        f"Silver and Gold: one pass after {results['changed_lines']:,} sales lines changed",
        _measured(results) + f"; all {len(sizes[0]['full_refresh']['tables'])} tables, "
        "incremental against --full-refresh",
        "sales lines in the source (a step per size measured, not to scale)",
        "seconds for the pass",
        [f"{s['sales_lines']:,}" for s in sizes],
        [
            ("incremental pass", [s["incremental"]["seconds"] for s in sizes]),
            ("full refresh", [s["full_refresh"]["seconds"] for s in sizes]),
        ],
        label_points=True,
    )


def freshness(results: dict) -> str:
    probes, summary = results["per_probe"], results["probe_latency"]
    names = {"bronze": "Bronze", "silver": "Silver unified orders", "gold": "Gold daily sales"}
    spread = {layer: f"p50 {s['p50_seconds']} s, p95 {s['p95_seconds']} s" for layer, s in summary.items()}
    return line_chart(
        f"Freshness under the demo's workload: {results['probes']} probe sales",
        _measured(results) + "; seconds from each sale's Postgres commit to readable",
        f"probe sale, in the order written (about {results['spacing_seconds']:.0f} s apart)",
        "seconds to readable",
        [str(i) for i in range(1, len(probes) + 1)],
        [
            (f"{label} ({spread[layer]})", [probe[layer] for probe in probes])
            for layer, label in names.items()
        ],
    )


def scheduled_run(results: dict) -> str:
    run = results["incremental"]
    parts = [
        ("Bronze drain (five topics)", run["bronze_seconds"]),
        (f"Silver and Gold, {run['tables_at_once']} tables at a time", run["derived_seconds"]),
        *((f"  {name}", t["seconds"]) for name, t in run["tables"].items()),
        ("the rest (start-up, catalog, quality)", run["other_seconds"]),
    ]
    return bar_chart(
        f"Where a scheduled lakehouse run's {run['seconds']} s go",
        _measured(results) + f"; after {results['transactions']} source transactions on "
        f"{results['sales_lines']:,} sales lines; the tables' own runs overlap",
        "seconds of the run, process start to exit (shorter is better)",
        [name for name, _ in parts],
        [("seconds", [seconds for _, seconds in parts])],
    )


# image under images/benchmarks/ -> (results file, what draws it)
PLOTS: dict[str, tuple[str, Callable[[dict], str]]] = {
    "scheduled-run.svg": ("run", scheduled_run),
    "freshness.svg": ("freshness", freshness),
    "bronze-throughput.svg": ("bronze", bronze_throughput),
    "bronze-latency.svg": ("bronze", bronze_latency),
    "derived.svg": ("derived", derived),
}


def plots(results_dir: Path = RESULTS) -> dict[str, str]:
    """Every plot's SVG by its path in the site, or the note that its results are missing."""
    drawn = {}
    for image, (name, draw) in PLOTS.items():
        path = results_dir / f"{name}.json"
        if path.is_file():
            drawn[f"images/benchmarks/{image}"] = draw(json.loads(path.read_text()))
        else:
            log.info("gen_plots: %s is missing; %s says so instead of a plot", path, image)
            drawn[f"images/benchmarks/{image}"] = missing(name)
    return drawn


def _write_with_mkdocs() -> None:
    import mkdocs_gen_files

    for path, svg in plots().items():
        with mkdocs_gen_files.open(path, "w") as out:
            out.write(svg)


if __name__ == "<run_path>":  # mkdocs-gen-files runs the script under this name
    _write_with_mkdocs()
elif __name__ == "__main__":
    out_dir = Path(sys.argv[1] if len(sys.argv) > 1 else "site-plots")
    for relative, svg in plots().items():
        (out_dir / relative).parent.mkdir(parents=True, exist_ok=True)
        (out_dir / relative).write_text(svg)
        print(out_dir / relative)
