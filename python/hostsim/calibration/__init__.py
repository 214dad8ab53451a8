"""Calibration: fit the model's unknown constants to measured
microbenchmarks, then check every target (SPEC §6, "the fitting loop").

* ``targets.toml``: the calibration set — experiments, the figures
  measured on them (params.md rows), and the fit groups.
* :func:`calibrate` (``hostsim calibrate``): the recorded, seeded
  procedure of :mod:`.fit`; writes ``crates/hostsim-core/src/host/fitted.json``
  (the core lays it over the presets when it is built) and
  ``docs/reference/calibration.md``.
* :func:`evaluate_all` (``hostsim validate``): every target on the built
  core, with its residual.

Fit only to calibration targets, never to a study's results: those are
predictions.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

from . import spec
from .evaluate import Runner
from .fit import Fit

__all__ = ["calibrate", "evaluate_all", "fitted_in_core", "load", "FITTED_FILE", "REPORT_FILE"]

load = spec.load

_REPO = Path(__file__).resolve().parents[3]
#: Where the fitted values live in a source tree (the core includes the file when built).
FITTED_FILE = _REPO / "crates" / "hostsim-core" / "src" / "host" / "fitted.json"
REPORT_FILE = _REPO / "docs" / "reference" / "calibration.md"


def _shown(path: Path) -> str:
    """A path as the user may read it: relative to the working directory when it is below it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def fitted_in_core() -> Dict[str, Any]:
    """The fitted values the built core lays over its presets (``host/fitted.json`` as it was built)."""
    from ..runner import core

    return json.loads(core().fitted_values())


def evaluate_all(cs: Optional[spec.CalibrationSet] = None, values: Optional[Dict[str, Any]] = None,
                 progress: Optional[Callable[[str], None]] = None) -> List[Dict[str, Any]]:
    """Every target's row (reference, simulated, residual, pass, group, source); with
    ``values``, those constants laid over the presets, else the core as built."""
    cs = cs or spec.load()
    runner = Runner(cs, progress)
    return [o.row() for o in runner.outcomes(cs.targets, values or {})]


def calibrate(out: Optional[Path] = None, report: Optional[Path] = None, check: bool = False,
              log: Callable[[str], None] = print) -> int:
    """Fits every group, writes the fitted values and the report; with
    ``check``, writes nothing and returns 1 if the values differ from the
    built core's (0 if they reproduce it exactly)."""
    cs = spec.load()
    f = Fit(cs, log)
    doc = f.run()
    if check:
        built = {v["key"]: v["value"] for v in fitted_in_core()["values"]}
        now = {v["key"]: v["value"] for v in doc["values"]}
        diff = {k: (built.get(k), now.get(k)) for k in sorted(set(built) | set(now)) if built.get(k) != now.get(k)}
        for k, (b, n) in diff.items():
            log(f"host.{k}: built {b}, fitted now {n}")
        log("the fitted values reproduce the built core's exactly" if not diff else f"{len(diff)} values differ")
        return 1 if diff else 0
    rows = evaluate_all(cs, f.values(), None)
    out = out or FITTED_FILE
    out.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    log(f"wrote {_shown(out)} ({len(doc['values'])} values); rebuild the core (scripts/setup) to lay them over the presets")
    from .report import draw, markdown

    report = report or REPORT_FILE
    report.write_text(markdown(cs, doc, rows, report), encoding="utf-8")
    figures = draw(cs, rows, report)
    log(f"wrote {_shown(report)}: {sum(r['pass'] for r in rows)} of {len(rows)} targets within tolerance; "
        f"figures {', '.join(_shown(p) for p in figures) or 'none'}")
    return 0
