"""The fitting procedure behind ``hostsim calibrate``.

Groups are fitted one after another, in their ``order``. A group's
unknowns are its multipliers, each scaling the priors (the unfitted
presets' values) of its keys; a constant's value is its prior times its
multiplier, rounded as the field is typed. A group may also choose
among a few values of a field (a policy): each combination is fitted and
the one with the smallest cost is kept (the first of equals). The multipliers are found by
bounded nonlinear least squares (``scipy.optimize.least_squares``,
trust-region reflective, in the logarithm of the multipliers, from 1, with
forward differences of a fixed step ``DIFF_STEP``) over the group's targets, each
residual the target's miss in its own tolerances against its reference (a
range's middle). Every experiment runs with every fitted key set: the
groups fitted before at their fitted values, the rest at their priors, so
the result depends only on the calibration set and the model, never on
the values committed before. The simulations are seeded (each
experiment's `sim.seed`, 1 by default) and deterministic, and so is the
optimiser: the same sources give the same file.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Dict, List, Optional

from .evaluate import Outcome, Runner, priors
from .spec import CalibrationSet, Group

#: Forward-difference step in log-multiplier (5 %): larger than one
#: instruction on the smallest prior, so a step always changes the model.
DIFF_STEP = 0.05
#: The optimiser's stopping rules (scipy's names) and its budget of evaluations per group.
XTOL, FTOL, MAX_NFEV = 1e-3, 1e-4, 80
PROCEDURE = {
    "method": "scipy.optimize.least_squares, method='trf', in log(multiplier), x0 = 0 (every prior as it is)",
    "jacobian": "forward differences of a fixed step in log(multiplier) (backward at an upper bound): diff_step, "
                "or log(1 + 1/p) where p, the smallest integer prior of the multiplier, would round diff_step away",
    "diff_step": DIFF_STEP,
    "xtol": XTOL,
    "ftol": FTOL,
    "max_nfev": MAX_NFEV,
    "residual": "(simulated - reference) / (tolerance x |reference|), or / tolerance for points; a range's middle as reference",
    "seed": "each experiment's sim.seed (1 unless it sets one); the simulator is deterministic",
}


def _scaled(prior: Any, m: float) -> Any:
    v = prior * m
    return max(0, int(round(v))) if isinstance(prior, int) and not isinstance(prior, bool) else v


def _step(keys: List[str], priors: Dict[str, Any]) -> float:
    """The difference step of a multiplier: ``DIFF_STEP``, or more where its
    smallest integer prior would round a 5 % change away (6 instructions
    need 17 % to become 7)."""
    small = [p for k in keys if isinstance(p := priors[k], int) and not isinstance(p, bool) and p > 0]
    return max(DIFF_STEP, math.log1p(1 / min(small))) if small else DIFF_STEP


def _miss(o: Outcome) -> float:
    t = o.target
    ref = t.center()
    scale = t.tolerance if t.points else t.tolerance * abs(ref)
    return (o.simulated - ref) / scale


class Fit:
    """The state of one calibration: the values fitted so far and a log."""

    def __init__(self, cs: CalibrationSet, log: Optional[Callable[[str], None]] = None):
        self.cs = cs
        self.log = log or (lambda _: None)
        self.runner = Runner(cs)
        # Each group's priors are read on its calibration machine (the
        # preset of its first target); a group without presets shares its
        # constants with every preset.
        self.priors: Dict[str, Any] = {}
        for g in cs.ordered_groups():
            first = cs.group_targets(g.name)[0]
            self.priors.update(priors(g.keys(), cs.experiments[first.experiment].preset_name()))
        self.fitted: Dict[str, Any] = {}
        self.groups: Dict[str, Dict[str, Any]] = {}

    def values(self, group: Optional[Group] = None, multipliers: Optional[List[float]] = None,
               choice: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        """Every fitted key: fitted so far, the priors for the rest, and
        ``group``'s keys at ``multipliers`` and ``choice`` (key → option)."""
        v = dict(self.priors)
        v.update(self.fitted)
        if group is not None and multipliers is not None:
            for m, mult in zip(multipliers, group.multipliers.values()):
                for k in mult.keys:
                    v[k] = _scaled(self.priors[k], m)
        v.update(choice or {})
        return v

    def fit_group(self, g: Group) -> None:
        import itertools

        targets = self.cs.group_targets(g.name)
        before = self.runner.outcomes(targets, self.values())
        keys = [c.key for c in g.choices.values()]
        tried = []
        best: Optional[tuple] = None
        for combo in itertools.product(*[c.options for c in g.choices.values()]):
            choice = dict(zip(keys, combo))
            found, nfev, status = self._least_squares(g, targets, choice)
            cost = sum(_miss(o) ** 2 for o in self.runner.outcomes(targets, self.values(g, found, choice)))
            tried.append({"choice": dict(choice), "multipliers": found, "cost": cost})
            if best is None or cost < best[0]:
                best = (cost, choice, found, nfev, status)
        assert best is not None
        _, choice, found, nfev, status = best
        vals = self.values(g, found, choice)
        after = self.runner.outcomes(targets, vals)
        for k in g.keys():
            self.fitted[k] = vals[k]
        self.groups[g.name] = {
            "why": g.why,
            "presets": g.presets,
            "evaluations": nfev,
            "status": status,
            "choices": {name: {"value": choice[c.key], "key": c.key, "options": c.options, "why": c.why}
                        for name, c in g.choices.items()},
            "tried": tried if g.choices else [],
            "multipliers": {
                name: {"value": v, "bounds": list(m.bounds), "plausible": list(m.plausible),
                       "plausible_ok": m.plausible[0] <= v <= m.plausible[1], "why": m.why, "keys": m.keys}
                for (name, m), v in zip(g.multipliers.items(), found)
            },
            "targets": [{"id": b.target.id, "reference": b.row()["reference"], "unit": b.target.unit,
                         "points": b.target.points, "before": b.simulated, "after": a.simulated,
                         "residual_before": b.residual, "residual_after": a.residual, "pass": a.passes}
                        for b, a in zip(before, after)],
        }
        passed = sum(a.passes for a in after)
        self.log(f"{g.name}: {nfev} evaluations, {passed} of {len(after)} targets within tolerance; "
                 + ", ".join([f"{n} {v:g}" for n, v in zip(g.multipliers, found)]
                             + [f"{n} {choice[c.key]}" for n, c in g.choices.items()]))

    def _least_squares(self, g: Group, targets: List[Any], choice: Dict[str, Any]) -> tuple:
        """The multipliers of ``g`` fitted with ``choice`` fixed: (multipliers, evaluations, status)."""
        import numpy as np
        from scipy.optimize import least_squares

        mults = list(g.multipliers.values())
        if not mults:
            return [], 1, "no multipliers: the choice alone"

        def residuals(x: "np.ndarray") -> "np.ndarray":
            vals = self.values(g, [math.exp(a) for a in x], choice)
            return np.array([_miss(o) for o in self.runner.outcomes(targets, vals)])

        lo = np.array([math.log(m.bounds[0]) for m in mults])
        hi = np.array([math.log(m.bounds[1]) for m in mults])

        steps = [_step(m.keys, self.priors) for m in mults]

        def jacobian(x: "np.ndarray") -> "np.ndarray":
            # Forward differences of a fixed step (backward at an upper bound);
            # the runs at x are cached, so f(x) costs nothing here.
            f0 = residuals(x)
            cols = []
            for i in range(len(x)):
                h = steps[i] if x[i] + steps[i] <= hi[i] else -steps[i]
                xi = x.copy()
                xi[i] += h
                cols.append((residuals(xi) - f0) / h)
            return np.array(cols).T

        sol = least_squares(residuals, np.zeros(len(mults)), jac=jacobian, bounds=(lo, hi), method="trf",
                            xtol=XTOL, ftol=FTOL, max_nfev=MAX_NFEV)
        # Rounded as the optimiser's answer is applied: 3 decimals.
        return [round(math.exp(a), 3) for a in sol.x], int(sol.nfev), str(sol.message)

    def run(self) -> Dict[str, Any]:
        for g in self.cs.ordered_groups():
            self.fit_group(g)
        return self.document()

    def document(self) -> Dict[str, Any]:
        """What ``host/fitted.json`` holds."""
        owner = {k: g for g in self.cs.ordered_groups() for k in g.keys()}
        mult_of = {k: name for g in self.cs.ordered_groups() for name, m in g.multipliers.items() for k in m.keys}
        mult_of.update({c.key: name for g in self.cs.ordered_groups() for name, c in g.choices.items()})
        return {
            "about": "Constants fitted to calibration targets by `hostsim calibrate` (python/hostsim/calibration). "
                     "Do not edit by hand: re-run the procedure.",
            "procedure": PROCEDURE,
            "values": [{"key": k, "value": self.fitted[k], "prior": self.priors[k], "group": owner[k].name,
                        "multiplier": mult_of[k], "presets": owner[k].presets}
                       for k in sorted(self.fitted)],
            "groups": self.groups,
        }
