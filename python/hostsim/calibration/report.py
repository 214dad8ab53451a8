"""``docs/reference/calibration.md``: the calibration set, what was fitted to
what, and every target's residual, written by ``hostsim calibrate``."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Mapping, Sequence

from .spec import CalibrationSet, Figure


def _num(v: Any) -> str:
    if isinstance(v, list):
        return "–".join(_num(x) for x in v)
    if isinstance(v, float):
        return f"{v:.4g}" if abs(v) < 1e5 else f"{v:.6g}"
    return str(v)


def _res(r: float, points: bool) -> str:
    return f"{r:+.2f} pt" if points else f"{r * 100:+.1f} %"


def _table(head: Sequence[str], rows: List[Sequence[Any]]) -> List[str]:
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return out


def figure_file(report: Path, name: str) -> Path:
    """Where figure ``name`` goes beside the page (``calibration-NAME.png``)."""
    return report.with_name(f"{report.stem}-{name}.png")


def draw(cs: CalibrationSet, rows: List[Dict[str, Any]], report: Path) -> List[Path]:
    """Every ``[figure.NAME]``: its targets' measured values (markers, a
    range as a bar) and simulated ones (a line), one colour per series, the
    tolerance as a band around the measurement; PNG beside the page."""
    from ..studies.draw import figure, save

    by_id = {r["id"]: r for r in rows}
    out = []
    for f in cs.figures.values():
        fig, (ax,) = figure(1, f.xlabel, f.ylabel)
        fig.set_size_inches(6.4, 4.2)
        series: Dict[str, List[Any]] = {}
        for t in cs.targets:
            if t.figure == f.name and t.id in by_id:
                series.setdefault(t.series, []).append((t, by_id[t.id]))
        for i, (name, pts) in enumerate(series.items()):
            pts.sort(key=lambda p: p[0].x)
            colour = f"C{i}"
            xs = [t.x for t, _ in pts]
            ref = [t.center() for t, _ in pts]
            tol = [t.tolerance if t.points else t.tolerance * abs(t.center()) for t, _ in pts]
            ax.fill_between(xs, [r - d for r, d in zip(ref, tol)], [r + d for r, d in zip(ref, tol)],
                            color=colour, alpha=0.12, linewidth=0)
            ax.plot(xs, ref, "o", color=colour, markerfacecolor="none", label=f"{name}: measured")
            ax.plot(xs, [r["simulated"] for _, r in pts], "-s", color=colour, markersize=3.5, label=f"{name}: simulated")
        if f.xlog:
            ax.set_xscale("log", base=2)
        xs_all = sorted({t.x for pts in series.values() for t, _ in pts})
        ax.set_xticks(xs_all)
        ax.set_xticklabels([f"{x:g}" for x in xs_all])
        ax.set_title(f.title, fontsize=8)
        ax.legend(fontsize=6.5, ncol=2)
        out.append(save(fig, figure_file(report, f.name)))
    return out


def markdown(cs: CalibrationSet, doc: Mapping[str, Any], rows: List[Dict[str, Any]], report: Path = Path("calibration.md")) -> str:
    """The page: ``doc`` is what ``host/fitted.json`` holds, ``rows`` every target evaluated with it."""
    passed = sum(r["pass"] for r in rows)
    lines = [
        "# Calibration: targets, fitted constants, residuals",
        "",
        "Written by `hostsim calibrate` (python/hostsim/calibration); do not edit by hand. The",
        "calibration set is `python/hostsim/calibration/targets.toml`: each target is a small experiment,",
        "the figure measured on it, its source in params.md and a tolerance. The targets of a fit group",
        "fit that group's constants; the others are validation targets, which nothing was fitted to.",
        "The fitted values are in `crates/hostsim-core/src/host/fitted.json`, laid over every preset.",
        "`hostsim validate` evaluates every target again on the built core.",
        "",
        f"**{passed} of {len(rows)} targets within tolerance.**",
        "",
        "## Procedure",
        "",
    ]
    lines += [f"* {k}: {v}" for k, v in doc["procedure"].items()]
    for name, g in doc["groups"].items():
        lines += ["", f"## Fit group `{name}`", "", g["why"], "",
                  f"{g['evaluations']} evaluations; {g['status']}", ""]
        if g.get("presets"):
            lines += [f"Applies to: {', '.join(g['presets'])}.", ""]
        if g.get("choices"):
            lines += _table(["choice", "field", "chosen", "options"], [
                [n, f"`{c['key']}`", f"`{c['value']}`", ", ".join(f"`{o}`" for o in c["options"])]
                for n, c in g["choices"].items()])
            lines += ["", "Cost (sum of squared misses, in tolerances) of each combination tried:", ""]
            lines += _table(["combination", "multipliers", "cost"], [
                [", ".join(f"{k} = {v}" for k, v in t["choice"].items()), _num(t["multipliers"]) or "–", f"{t['cost']:.4g}"]
                for t in g["tried"]])
            lines += [""]
        if g["multipliers"]:
            lines += _table(["multiplier", "fitted", "bounds", "plausible", "", "constants (prior → fitted)"], [
            [n, _num(m["value"]), _num(m["bounds"]), _num(m["plausible"]),
             "" if m["plausible_ok"] else "**outside: a mechanism is missing**",
             ", ".join(f"`{k}` {_prior(doc, k)} → {_fitted(doc, k)}" for k in m["keys"])]
            for n, m in g["multipliers"].items()])
            lines += [""]
        lines += _table(["target", "reference", "unit", "before", "after", "residual before", "after", ""], [
            [t["id"], _num(t["reference"]), t["unit"], _num(t["before"]), _num(t["after"]),
             _res(t["residual_before"], t.get("points", False)), _res(t["residual_after"], t.get("points", False)),
             "pass" if t["pass"] else "FAIL"]
            for t in g["targets"]])
    if cs.figures:
        lines += ["", "## Figures", "",
                  "Measured (open markers, the tolerance as a band) against simulated (lines), drawn from the table below.", ""]
        lines += [f"![{f.title.splitlines()[0]}]({figure_file(report, f.name).name})" for f in cs.figures.values()]
    lines += ["", "## Every target", ""]
    lines += _table(["target", "reference", "simulated", "unit", "residual", "tolerance", "", "fitted by", "source"], [
        [r["id"], _num(r["reference"]), _num(r["simulated"]), r["unit"], _res(r["residual"], r["points"]),
         f"±{_num(r['tolerance'])}{' pt' if r['points'] else ''}" if r["points"] else f"±{r['tolerance'] * 100:g} %",
         "pass" if r["pass"] else "FAIL", r["group"] or "(validation)", r["source"]]
        for r in rows])
    lines += ["", "## Experiments", ""]
    lines += [f"* `{e.name}` ({e.kind}): {e.why}" for e in cs.experiments.values()]
    if cs.unexpressed:
        lines += ["", "## Rows of params.md the model does not express yet", ""]
        lines += [f"* {u.row}: {u.why}" for u in cs.unexpressed]
    return "\n".join(lines) + "\n"


def _value_of(doc: Mapping[str, Any], key: str, field: str) -> str:
    for v in doc["values"]:
        if v["key"] == key:
            return _num(v[field])
    return "?"


def _prior(doc: Mapping[str, Any], key: str) -> str:
    return _value_of(doc, key, "prior")


def _fitted(doc: Mapping[str, Any], key: str) -> str:
    return _value_of(doc, key, "value")
