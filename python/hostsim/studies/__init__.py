"""Studies: named, packaged sweeps that print a table and draw their figures.

A study is one or more sweeps (:mod:`hostsim.sweep`, run through the
result store, so a re-run computes only what is missing) plus a ``table``
and ``figures`` function over the rows they return. ``hostsim study NAME``
runs one; ``hostsim study --list`` names them with their point counts.

To add a study, write its sweeps and its two functions in a module of this
package and register it in :data:`STUDIES` (see :mod:`.catalog`); nothing
else changes. ``quick=True`` shrinks every sweep to the first and last value
of each axis and short trials: the tests run each study that way.
"""

from __future__ import annotations

import copy
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Union

from ..sweep import Sweep, counts, run_sweep
from ..units import ConfigError

#: A study's rows: sweep part name -> the rows :func:`hostsim.sweep.run_sweep` returned.
Rows = Dict[str, List[Dict[str, Any]]]
#: A table: the header, then one list of cells per row.
TableCells = List[List[str]]


@dataclass
class Study:
    """A named study: its sweeps (``part -> sweep table``), its table and its figures.

    ``followups`` builds more parts from the rows of the first ones (a run
    at 90 % of each MSB, say). A quick run merges ``quick_base`` into every
    base and, unless ``quick_sim`` is false, shortens the trials.
    """

    name: str
    title: str
    sweeps: Callable[[], Dict[str, Dict[str, Any]]]
    table: Callable[[Rows], TableCells]
    figures: Callable[[Rows, Path], List[Path]]
    followups: Optional[Callable[[Rows], Dict[str, Dict[str, Any]]]] = None
    quick_base: Optional[Dict[str, Any]] = None
    quick_sim: bool = True

    def sweep_objects(self, quick: bool = False, tables: Optional[Dict[str, Dict[str, Any]]] = None,
                      fidelity: str = "full") -> Dict[str, Sweep]:
        """Each part as a :class:`Sweep`, named ``study/<study>/<part>`` (``-quick``: shrunk, two parts at
        most; ``-fast``: every point at ``sim.fidelity = fast``)."""
        if fidelity not in FIDELITIES:
            raise ConfigError.invalid("fidelity", fidelity, "full or fast")
        out = {}
        parts = list((self.sweeps() if tables is None else tables).items())
        for part, table in parts[:QUICK_PARTS] if quick and tables is None else parts:
            data = shrink(table, self.quick_base, self.quick_sim) if quick else copy.deepcopy(table)
            if fidelity != "full":
                merge(data.setdefault("base", {}), {"sim": {"fidelity": fidelity}})
            data["name"] = (f"study/{self.name}/{part}" + ("-quick" if quick else "")
                            + ("" if fidelity == "full" else f"-{fidelity}"))
            out[part] = Sweep.from_dict(data, path=f"study {self.name}")
        return out

    def points(self, quick: bool = False) -> int:
        """How many points the study runs (before its follow-ups, which depend on results)."""
        return sum(len(s.points()) for s in self.sweep_objects(quick).values())


#: ``sim.fidelity`` values a study runs at.
FIDELITIES = ("full", "fast")


#: Trials of a quick study (the tests'): short, with a coarse search.
QUICK_SIM = {"duration": "300us", "warmup": "100us"}
QUICK_MSB = {"resolution": 0.05, "max_trials": 12, "points": 0}
QUICK_PARTS = 2


def shrink(table: Mapping[str, Any], base: Optional[Mapping[str, Any]] = None, sim: bool = True) -> Dict[str, Any]:
    """A sweep table cut to the first and last value of each axis (the first of a zip group), with short
    trials (``sim``) and ``base`` merged into its base."""
    data = copy.deepcopy(dict(table))
    for axis in data.get("axes", []):
        values = axis["values"]
        axis["values"] = values[:1] if "zip" in axis else values if len(values) <= 2 else [values[0], values[-1]]
    merge(data.setdefault("base", {}), base or {})
    if sim:
        data["base"].setdefault("sim", {}).update(QUICK_SIM)
    if data.get("kind") == "msb":
        data.setdefault("msb", {}).update(QUICK_MSB)
    return data


def merge(into: Dict[str, Any], extra: Mapping[str, Any]) -> Dict[str, Any]:
    """Merges nested tables of ``extra`` into ``into`` (in place) and returns it."""
    for k, v in extra.items():
        if isinstance(v, Mapping) and isinstance(into.get(k), dict):
            merge(into[k], v)
        else:
            into[k] = copy.deepcopy(v)
    return into


def _registry() -> Dict[str, Study]:
    from .catalog import CATALOG

    return {s.name: s for s in CATALOG}


def names() -> List[str]:
    """The shipped studies, in listing order."""
    return list(_registry())


def get(name: str) -> Study:
    """The study called ``name``; a :class:`ConfigError` naming the known ones otherwise."""
    studies = _registry()
    if name not in studies:
        raise ConfigError("study", f"unknown study {name!r} (allowed: {', '.join(studies)})")
    return studies[name]


@dataclass
class StudyRun:
    """What :func:`run_study` did: the rows of each part, the table, the figures written, the counts."""

    study: Study
    rows: Rows
    table: TableCells
    figures: List[Path]
    counts: Dict[str, int]
    wall_s: float


def run_study(
    name: str,
    out: Union[str, "os.PathLike[str]"] = "study-out",
    store: Any = None,
    jobs: int = 1,
    progress: bool = False,
    console: Any = None,
    quick: bool = False,
    executor: Any = None,
    fidelity: str = "full",
) -> StudyRun:
    """Runs the study's sweeps (only points missing from the store), then writes its figures into ``out``;
    ``fidelity="fast"`` runs every point at ``sim.fidelity = fast`` (sampled runs and bandwidth tests)."""
    study = get(name)
    start = time.perf_counter()
    rows: Rows = {}

    def run(sweeps: Dict[str, Sweep]) -> None:
        for part, sweep in sweeps.items():
            rows[part] = run_sweep(sweep, store=store, jobs=jobs, progress=progress, console=console,
                                   executor=executor)

    run(study.sweep_objects(quick, fidelity=fidelity))
    if study.followups is not None:
        done = {part: [r for r in rs if r["status"] in ("computed", "cached")] for part, rs in rows.items()}
        run(study.sweep_objects(quick, tables=study.followups(done), fidelity=fidelity))
    # A fast study's table and figures go beside the full one's, not over them.
    outdir = Path(out) / (study.name if fidelity == "full" else f"{study.name}-{fidelity}")
    outdir.mkdir(parents=True, exist_ok=True)
    good = {part: [r for r in rs if r["status"] in ("computed", "cached")] for part, rs in rows.items()}
    table = study.table(good)
    (outdir / "table.txt").write_text(format_table(table) + "\n")
    figures = study.figures(good, outdir)
    total = counts([r for rs in rows.values() for r in rs])
    return StudyRun(study, rows, table, figures, total, time.perf_counter() - start)


def format_table(cells: Sequence[Sequence[str]]) -> str:
    """A table as aligned text: the first column left, the others right."""
    if not cells:
        return ""
    widths = [max(len(r[i]) for r in cells) for i in range(len(cells[0]))]
    return "\n".join("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
                     for r in cells)


def param(row: Mapping[str, Any], key: str, default: Optional[Any] = None) -> Any:
    """A point's value of one axis."""
    return row["params"].get(key, default)
