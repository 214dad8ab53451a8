"""Runs the calibration set's experiments and reads its targets off them.

An experiment runs with a set of constants (``{"kernel.costs.irq_instr":
2100, ...}``, fields under ``host.``) laid over its config; with none, on
the presets as the core was built (the fitted values included). Results
are kept per experiment and constants, so targets on one experiment share
one run.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Tuple

from .spec import CalibrationSet, Experiment, Target, evaluate as evaluate_expr

Values = Mapping[str, Any]


def unfitted_host(preset: str) -> Dict[str, Any]:
    """Preset ``preset``'s host before the fitted constants, in base units."""
    from ..runner import core

    return json.loads(core().host_preset(preset, False))


def lookup(tree: Mapping[str, Any], dotted: str) -> Any:
    cur: Any = tree
    for part in dotted.split("."):
        cur = cur[part]
    return cur


def priors(keys: Iterable[str], preset: str) -> Dict[str, Any]:
    """The unfitted values of ``keys`` (fields under ``host.``) on ``preset``."""
    host = unfitted_host(preset)
    out = {}
    for k in keys:
        try:
            out[k] = lookup(host, k)
        except (KeyError, TypeError):
            raise ValueError(f"calibration: preset {preset} has no field host.{k}") from None
    return out


def _nested(values: Values) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for dotted, v in values.items():
        *path, leaf = dotted.split(".")
        node = out
        for p in path:
            node = node.setdefault(p, {})
        node[leaf] = v
    return out


def _deep_merge(base: Dict[str, Any], over: Mapping[str, Any]) -> Dict[str, Any]:
    out = copy.deepcopy(base)
    for k, v in over.items():
        out[k] = _deep_merge(out[k], v) if isinstance(v, Mapping) and isinstance(out.get(k), dict) else copy.deepcopy(v)
    return out


def run(exp: Experiment, values: Values) -> Dict[str, float]:
    """Every metric of ``exp`` with ``values`` laid over it."""
    if exp.kind == "run":
        from ..runner import simulate

        cfg = copy.deepcopy(exp.config)
        cfg["host"] = _deep_merge(cfg.get("host", {}), _nested(values))
        r = simulate(cfg).to_dict()
        return {name: evaluate_expr(expr, r) for name, expr in exp.metrics.items()}
    from ..host import resolve_host
    from ..runner import core

    host = resolve_host(exp.preset_name(), _deep_merge(exp.host, _nested(values)))
    m = json.loads(core().micro(json.dumps(host), json.dumps(exp.bench)))
    m["cycles_per_byte"] = 1.0 / m["per_cycle"] if m["per_cycle"] else float("inf")
    return {k: float(m[k]) for k in ("value", "per_cycle", "cycles_per_byte", "l1d_hits", "l2_hits", "llc_hits", "dram_reads")}


@dataclass(frozen=True)
class Outcome:
    """A target's simulated value and how it compares."""

    target: Target
    simulated: float

    @property
    def residual(self) -> float:
        return self.target.residual(self.simulated)

    @property
    def passes(self) -> bool:
        return self.target.passes(self.simulated)

    def row(self) -> Dict[str, Any]:
        t = self.target
        return {"id": t.id, "experiment": t.experiment, "metric": t.metric,
                "reference": list(t.reference) if isinstance(t.reference, tuple) else t.reference,
                "simulated": self.simulated, "unit": t.unit, "residual": self.residual,
                "tolerance": t.tolerance, "points": t.points, "pass": self.passes,
                "group": t.group, "source": t.source}


class Runner:
    """Runs experiments once per set of constants."""

    def __init__(self, cs: CalibrationSet, progress: Optional[Callable[[str], None]] = None):
        self.cs = cs
        self.progress = progress
        self.scope = cs.scope()
        self._cache: Dict[Tuple[str, Tuple[Tuple[str, Any], ...]], Dict[str, float]] = {}
        self.runs = 0

    def metrics(self, experiment: str, values: Values) -> Dict[str, float]:
        """The experiment's metrics with ``values`` laid over it: those whose
        group applies to the experiment's preset."""
        preset = self.cs.experiments[experiment].preset_name()
        values = {k: v for k, v in values.items() if not self.scope.get(k) or preset in self.scope[k]}
        key = (experiment, tuple(sorted(values.items())))
        if key not in self._cache:
            if self.progress:
                self.progress(experiment)
            self._cache[key] = run(self.cs.experiments[experiment], values)
            self.runs += 1
        return self._cache[key]

    def outcomes(self, targets: Iterable[Target], values: Values) -> List[Outcome]:
        return [Outcome(t, self.metrics(t.experiment, values)[t.metric]) for t in targets]
