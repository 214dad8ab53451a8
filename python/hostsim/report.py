"""``hostsim report``: everything in a result store as one self-contained HTML page.

The page (:func:`write_report`) has a header (the hostsim versions that
computed the points, the store, how many sweeps and points), then a
section per sweep: the rows of the store grouped by their ``sweep``
column. The parts of a packaged study (sweeps named
``study/<study>/<part>``, or ``<part>-quick``) share one section with the
study's own figures and table (:mod:`hostsim.studies`); any other sweep
gets a generic figure (``msb``: MSB in Gbit/s against the first axis, a
line per combination of the other axes; ``run``: achieved Gbit/s and loss
rate against the first axis). Every sweep has a table of its points: the
axis values, the headline numbers, the warnings, the wall time and the
fully resolved config behind a ``<details>`` click.

Nothing is fetched when the page is opened: the figures are SVG files
embedded as ``data:`` URIs and the style is inline; there is no script.
Each number in a table is a store value; its cell carries the point's key,
the store column (``data-field``) and the exact value as JSON
(``data-value``), so a test (or a scraper) reads the numbers back.

What it simplifies: a point is shown under the sweep that computed it
first (the store keeps one row per key), so a study part whose point was
first computed by another sweep lacks that point here.
"""

from __future__ import annotations

import base64
import datetime
import html
import json
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from .store import Store, StoreError
from .units import ConfigError

PathLike = Union[str, "os.PathLike[str]"]
Row = Dict[str, Any]

#: Store columns shown as numbers: column -> (header, how the cell shows the stored value).
FIELDS: Dict[str, Tuple[str, Callable[[float], str]]] = {
    "msb_gbps": ("MSB Gbps", lambda v: f"{v:.3f}"),
    "msb_pps": ("MSB Mpps", lambda v: f"{v / 1e6:.3f}"),
    "achieved_gbps": ("achieved Gbps", lambda v: f"{v:.3f}"),
    "loss_rate": ("loss %", lambda v: f"{100 * v:.3f}"),
    "wall_s": ("wall s", lambda v: f"{v:.2f}"),
}
#: The headline columns of each kind of point.
HEADLINE: Dict[str, Tuple[str, ...]] = {"msb": ("msb_gbps", "msb_pps"), "run": ("achieved_gbps", "loss_rate")}

#: ``study/<study>/<part>`` or ``study/<study>/<part>-quick``.
STUDY_SWEEP = re.compile(r"^study/(?P<study>[^/]+)/(?P<part>.+?)(?P<quick>-quick)?$")

STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em auto; max-width: 1200px; padding: 0 1em; color: #222; }
h1 { margin-bottom: 0.2em; } h2 { border-bottom: 1px solid #ccc; margin-top: 2em; }
dl.meta { display: grid; grid-template-columns: max-content auto; gap: 0.1em 1em; }
dl.meta dt { font-weight: 600; } dl.meta dd { margin: 0; }
figure { margin: 1em 0; display: inline-block; vertical-align: top; }
figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { font-size: 12px; color: #555; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; margin: 0.5em 0 1em; font-size: 13px; }
th, td { border: 1px solid #ddd; padding: 2px 6px; vertical-align: top; }
th { background: #f4f4f4; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
details pre { max-height: 30em; overflow: auto; background: #f8f8f8; padding: 0.5em; font-size: 12px; }
p.note { color: #a33; } code { font-size: 12px; }
"""


@dataclass
class ReportSummary:
    """What :func:`write_report` wrote: the page, its store, and how many sweeps, points, figures and bytes."""

    path: str
    store: str
    sweeps: int
    points: int
    figures: int
    bytes: int


@dataclass
class Section:
    """One section of the page: a study (its parts) or a single sweep (one part, named after it)."""

    anchor: str
    study: Optional[str]
    quick: bool
    sweeps: Dict[str, str] = field(default_factory=dict)  # part -> sweep name
    rows: Dict[str, List[Row]] = field(default_factory=dict)  # part -> rows

    def heading(self) -> str:
        """``study rx-sharing (quick)`` or ``sweep sizes``."""
        if self.study is None:
            return "sweep " + next(iter(self.sweeps.values()))
        return f"study {self.study}" + (" (quick)" if self.quick else "")


def plural(n: int, noun: str) -> str:
    """``1 point``, ``2 points``."""
    return f"{n} {noun}" + ("" if n == 1 else "s")


def e(value: Any) -> str:
    """Text or an attribute value, escaped."""
    return html.escape(str(value), quote=True)


def write_report(store_path: PathLike, out_path: PathLike, title: Optional[str] = None) -> ReportSummary:
    """Writes the report of the store at ``store_path`` to ``out_path`` (one HTML file) and says what it wrote.

    A missing store, or one without points, is a :class:`StoreError` naming the path.
    """
    store_path, out = os.fspath(store_path), Path(out_path)
    if not out.parent.is_dir():
        raise ConfigError("output", f"{os.fspath(out)!r}: directory {os.fspath(out.parent)!r} does not exist")
    with Store(store_path, read_only=True) as db:
        rows = db.rows()
    if not rows:
        raise StoreError(store_path, "holds no points (run hostsim sweep or hostsim study into it first, "
                                     "or pass --store PATH for another)")
    sections = group(rows)
    figures = 0
    parts: List[str] = []
    with tempfile.TemporaryDirectory(prefix="hostsim-report-") as tmp:
        for i, section in enumerate(sections):
            outdir = Path(tmp) / str(i)
            outdir.mkdir()
            text, n = render_section(section, outdir)
            parts.append(text)
            figures += n
    sweeps = len({r["sweep"] for r in rows})
    page = render_page(title or f"hostsim report: {Path(store_path).name}", store_path, rows, sections, parts)
    data = page.encode("utf-8")
    out.write_bytes(data)
    return ReportSummary(os.fspath(out), store_path, sweeps, len(rows), figures, len(data))


# ---------------------------------------------------------------- grouping


def study_part(sweep: str) -> Optional[Tuple[str, str, bool]]:
    """``(study, part, quick)`` when ``sweep`` is a part of a known study, else None."""
    from . import studies

    m = STUDY_SWEEP.match(sweep)
    if not m or m["study"] not in studies.names():
        return None
    if m["part"] not in studies.get(m["study"]).sweeps():
        return None
    return m["study"], m["part"], bool(m["quick"])


def group(rows: Sequence[Row]) -> List[Section]:
    """The page's sections in store order (by sweep name): a study's parts together, other sweeps alone."""
    by_sweep: Dict[str, List[Row]] = {}
    for r in rows:
        by_sweep.setdefault(r["sweep"], []).append(r)
    sections: Dict[Tuple[str, str, bool], Section] = {}
    for sweep, rs in by_sweep.items():
        found = study_part(sweep)
        key = ("study", found[0], found[2]) if found else ("sweep", sweep, False)
        if key not in sections:
            anchor = f"s{len(sections)}-" + re.sub(r"[^A-Za-z0-9]+", "-", key[1]).strip("-")
            sections[key] = Section(anchor, found[0] if found else None, key[2])
        part = found[1] if found else sweep
        sections[key].sweeps[part] = sweep
        sections[key].rows[part] = rs
    return list(sections.values())


# ---------------------------------------------------------------- sections


def render_section(section: Section, outdir: Path) -> Tuple[str, int]:
    """The HTML of one section and how many figures it holds; figures are drawn into ``outdir``."""
    if section.study is not None:
        return _study_section(section, outdir)
    (part, sweep), = section.sweeps.items()
    rows = section.rows[part]
    paths = generic_figures(sweep, rows, outdir)
    out = [f'<section id="{e(section.anchor)}" data-sweep="{e(sweep)}">',
           f"<h2>{e(section.heading())}</h2>", _sweep_line(rows)]
    out += [figure_html(p, {"data-sweep": sweep, "data-figure": p.name}) for p in paths]
    out += [points_table(sweep, rows), "</section>"]
    return "\n".join(out), len(paths)


def _study_section(section: Section, outdir: Path) -> Tuple[str, int]:
    from . import studies

    study = studies.get(section.study or "")
    out = [f'<section id="{e(section.anchor)}" data-study="{e(study.name)}" data-quick="{str(section.quick).lower()}">',
           f"<h2>{e(section.heading())}</h2>", f"<p>{e(study.title)}</p>"]
    missing = [p for p in study.sweeps() if p not in section.rows]
    if missing:
        out.append(f'<p class="note">parts not in the store: {e(", ".join(missing))}</p>')
    try:
        cells = study.table(section.rows)
        figures = [(p, {"data-study": study.name, "data-figure": p.name})
                   for p in study.figures(section.rows, outdir)]
    except Exception as err:  # a study drawn from partial rows: say so, draw each part generically
        out.append(f'<p class="note">the study\'s own table and figures failed on these rows '
                   f'({e(type(err).__name__)}: {e(err)}); generic figures instead</p>')
        cells = []
        figures = [(p, {"data-study": study.name, "data-sweep": sweep, "data-figure": p.name})
                   for part, sweep in section.sweeps.items()
                   for p in generic_figures(sweep, section.rows[part], outdir / re.sub(r"\W+", "-", part))]
    out += [figure_html(p, attrs) for p, attrs in figures]
    if cells:
        out.append(study_table(study.name, cells))
    for part, sweep in section.sweeps.items():
        out += [f'<h3>part <code>{e(part)}</code>: sweep <code>{e(sweep)}</code></h3>',
                _sweep_line(section.rows[part]), points_table(sweep, section.rows[part])]
    out.append("</section>")
    return "\n".join(out), len(figures)


def _sweep_line(rows: Sequence[Row]) -> str:
    """The kind, options and totals of a sweep's points."""
    kinds = sorted({r["kind"] for r in rows})
    options = {json.dumps(r["options"], sort_keys=True) for r in rows if r.get("options")}
    wall = sum(r["wall_s"] or 0.0 for r in rows)
    text = f"{plural(len(rows), 'point')}, kind {', '.join(kinds)}, {wall:.2f} s wall in all"
    if options:
        text += "; bandwidth-test options " + "; ".join(sorted(options))
    return f"<p>{e(text)}</p>"


def study_table(study: str, cells: Sequence[Sequence[str]]) -> str:
    """The study's own table (its first row is the header); each cell says its row and column."""
    head = "".join(f"<th>{e(c)}</th>" for c in cells[0])
    body = []
    for i, row in enumerate(cells[1:]):
        tds = "".join(f'<td class="{"num" if j else "label"}" data-row="{i}" data-col="{j}">{e(c)}</td>'
                      for j, c in enumerate(row))
        body.append(f"<tr>{tds}</tr>")
    return (f'<div class="scroll"><table class="study" data-study="{e(study)}">'
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>")


# ---------------------------------------------------------------- the points table


def axis_keys(rows: Sequence[Row]) -> List[str]:
    """The axis keys of the rows' params, the sweep's first axis first.

    The store keeps params with sorted keys, so the sweep's order is
    recovered from the points: a sweep's points are the product of its axes
    with the first varying slowest, so the axis whose value changes least
    often along the index comes first; axes with one value come last.
    """
    keys: Dict[str, None] = {}
    for r in rows:
        keys.update(dict.fromkeys(r["params"] or {}))
    ordered = sorted(rows, key=lambda r: r["idx"])
    changes = {k: sum(1 for a, b in zip(ordered, ordered[1:])
                      if (a["params"] or {}).get(k) != (b["params"] or {}).get(k)) for k in keys}
    position = {k: i for i, k in enumerate(keys)}
    return sorted(keys, key=lambda k: (changes[k] == 0, changes[k], position[k]))


def show_axis(value: Any) -> str:
    """An axis value as ``--set`` takes it: a string bare, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value)


def number_cell(key: str, name: str, value: Optional[float]) -> str:
    """A table cell of one store value: shown formatted, the exact value in ``data-value``."""
    shown = "" if value is None else FIELDS[name][1](value)
    return (f'<td class="num" data-key="{e(key)}" data-field="{e(name)}" '
            f'data-value="{e(json.dumps(value))}">{e(shown)}</td>')


def points_table(sweep: str, rows: Sequence[Row]) -> str:
    """One row per point: index, axis values, headline numbers, warnings, wall time, key, config."""
    axes = axis_keys(rows)
    fields = [f for kind in sorted({r["kind"] for r in rows}) for f in HEADLINE.get(kind, ())]
    head = (["#"] + axes + [FIELDS[f][0] for f in fields] + ["warnings", FIELDS["wall_s"][0], "key", "config"])
    out = [f'<div class="scroll"><table class="points" data-sweep="{e(sweep)}">',
           "<thead><tr>" + "".join(f"<th>{e(h)}</th>" for h in head) + "</tr></thead><tbody>"]
    for r in rows:
        key = r["key"]
        cells = [f'<td class="num" data-key="{e(key)}" data-field="idx" data-value="{e(json.dumps(r["idx"]))}">'
                 f'{e(r["idx"])}</td>']
        for a in axes:
            present = a in (r["params"] or {})
            value = (r["params"] or {}).get(a)
            cells.append(f'<td data-key="{e(key)}" data-field="params.{e(a)}" '
                         f'data-value="{e(json.dumps(value) if present else "")}">'
                         f'{e(show_axis(value)) if present else ""}</td>')
        cells += [number_cell(key, f, r.get(f)) for f in fields]
        warnings = (r.get("result") or {}).get("warnings") or []
        cells.append(f'<td class="num" data-key="{e(key)}" data-field="warnings" '
                     f'data-value="{len(warnings)}" title="{e(chr(10).join(map(str, warnings)))}">'
                     f"{len(warnings)}</td>")
        cells.append(number_cell(key, "wall_s", r.get("wall_s")))
        cells.append(f'<td><code title="{e(key)}">{e(key[:12])}</code></td>')
        config = json.dumps(r["config"], indent=2)
        cells.append(f'<td><details data-key="{e(key)}"><summary>config</summary>'
                     f'<pre data-key="{e(key)}" data-field="config">{e(config)}</pre></details></td>')
        out.append(f'<tr data-key="{e(key)}">' + "".join(cells) + "</tr>")
    out.append("</tbody></table></div>")
    return "\n".join(out)


# ---------------------------------------------------------------- figures


def figure_html(path: Path, attrs: Mapping[str, str]) -> str:
    """A figure file embedded as a ``data:`` URI, with its name as caption."""
    kind = {".svg": "image/svg+xml", ".png": "image/png"}.get(path.suffix.lower(), "application/octet-stream")
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    attributes = " ".join(f'{k}="{e(v)}"' for k, v in attrs.items())
    return (f"<figure {attributes}><img alt=\"{e(path.name)}\" src=\"data:{kind};base64,{data}\">"
            f"<figcaption>{e(path.name)}</figcaption></figure>")


def generic_figures(sweep: str, rows: Sequence[Row], outdir: Path) -> List[Path]:
    """One SVG per kind of point in the sweep: its headline numbers against the first axis."""
    outdir.mkdir(parents=True, exist_ok=True)
    paths = []
    for kind in sorted({r["kind"] for r in rows}):
        rs = [r for r in rows if r["kind"] == kind]
        panels = ([("msb_gbps", "MSB (Gbps)", 1.0)] if kind == "msb"
                  else [("achieved_gbps", "achieved (Gbps)", 1.0), ("loss_rate", "loss rate (%)", 100.0)])
        paths.append(_draw(rs, panels, outdir / f"{kind}.svg"))
    return paths


def _draw(rows: Sequence[Row], panels: Sequence[Tuple[str, str, float]], path: Path) -> Path:
    """Panels side by side: y = a store column (scaled), x = the first axis, a line per other-axes combination."""
    from .studies.draw import figure, save

    axes = axis_keys(rows)
    xkey = axes[0] if axes else None
    xs = [(r["params"] or {}).get(xkey) if xkey else r["idx"] for r in rows]
    numeric = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in xs)
    ticks = list(dict.fromkeys(show_axis(x) for x in xs))
    position = (lambda x: x) if numeric else (lambda x: ticks.index(show_axis(x)))
    others = [k for k in axes[1:] if not _follows(rows, xkey, k)]
    lines: Dict[str, List[Tuple[Any, Row]]] = {}
    for x, r in zip(xs, rows):
        label = " ".join(f"{k}={show_axis((r['params'] or {}).get(k))}" for k in others)
        lines.setdefault(label, []).append((position(x), r))
    fig, subplots = figure(len(panels), xkey or "point", "")
    for ax, (column, ylabel, scale) in zip(subplots, panels):
        for label, points in lines.items():
            ok = [(x, r[column] * scale) for x, r in points if r.get(column) is not None]
            ax.plot([x for x, _ in ok], [y for _, y in ok], "o-", markersize=4, label=label or None)
        ax.set_ylabel(ylabel)
        if not numeric:
            ax.set_xticks(range(len(ticks)))
            ax.set_xticklabels(ticks, fontsize=8)
        if others and len(lines) <= 12:
            ax.legend(fontsize=7)
    return save(fig, path)


def _follows(rows: Sequence[Row], xkey: Optional[str], key: str) -> bool:
    """Whether ``key``'s value is fixed by the first axis's (a zipped partner, or constant): no line of its own."""
    if xkey is None:
        return False
    seen: Dict[str, str] = {}
    for r in rows:
        p = r["params"] or {}
        x, v = json.dumps(p.get(xkey), sort_keys=True), json.dumps(p.get(key), sort_keys=True)
        if seen.setdefault(x, v) != v:
            return False
    return True


# ---------------------------------------------------------------- the page


def render_page(title: str, store: str, rows: Sequence[Row], sections: Sequence[Section],
                parts: Sequence[str]) -> str:
    """The whole page: head, header, table of contents and the sections."""
    from . import __version__

    versions: Dict[str, int] = {}
    for r in rows:
        versions[str(r["model_version"])] = versions.get(str(r["model_version"]), 0) + 1
    shown = ", ".join(f'<span data-field="model_version" data-value="{e(v)}">{e(v)}</span> ({plural(n, "point")})'
                      for v, n in sorted(versions.items()))
    created = sorted(str(r["created"]) for r in rows if r.get("created") is not None)
    sweeps = len({r["sweep"] for r in rows})
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    meta = [("hostsim version of the points", shown),
            ("store", f'<code data-field="store">{e(store)}</code>'),
            ("sweeps", f'<span data-field="sweeps">{sweeps}</span>'),
            ("points", f'<span data-field="points">{len(rows)}</span>'),
            ("computed", e(f"{created[0]} to {created[-1]} (UTC)") if created else ""),
            ("written", e(f"{now} by hostsim {__version__}"))]
    toc = [f'<li><a href="#{e(s.anchor)}">{e(s.heading())}</a> '
           f'({plural(sum(len(v) for v in s.rows.values()), "point")})</li>' for s in sections]
    return "\n".join([
        "<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{e(title)}</title>", f"<style>{STYLE}</style>", "</head>", "<body>",
        f"<header><h1>{e(title)}</h1><dl class=\"meta\">"
        + "".join(f"<dt>{e(k)}</dt><dd>{v}</dd>" for k, v in meta) + "</dl></header>",
        "<nav><h2>Contents</h2><ul>" + "".join(toc) + "</ul></nav>",
        "<main>", *parts, "</main>", "</body>", "</html>", ""])
