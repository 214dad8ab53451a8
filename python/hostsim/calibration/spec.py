"""The calibration set as typed records: experiments, targets, fit groups.

Read from ``targets.toml`` beside this module (its header explains the
format) and checked as it loads: every target names an experiment and a
metric it has, every group's targets exist, every key is a field of the
presets its targets run on.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any, Dict, List, Literal, Mapping, Optional, Tuple, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..config import load_toml

TARGETS_FILE = Path(__file__).with_name("targets.toml")

#: What a microbenchmark reports (``calibration::micro::Measured``) and one derived figure.
MICRO_METRICS = ("value", "per_cycle", "cycles_per_byte", "l1d_hits", "l2_hits", "llc_hits", "dram_reads")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Experiment(_Strict):
    """One small experiment: a simulation or a microbenchmark."""

    name: str
    kind: Literal["run", "micro"]
    why: str
    #: ``run``: the config as ``hostsim.simulate`` takes it.
    config: Dict[str, Any] = Field(default_factory=dict)
    #: ``run``: named expressions over the result.
    metrics: Dict[str, str] = Field(default_factory=dict)
    #: ``micro``: the preset, host overrides (user names and units) and the benchmark.
    preset: Optional[str] = None
    host: Dict[str, Any] = Field(default_factory=dict)
    bench: Dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _shape(self) -> "Experiment":
        if self.kind == "run":
            if not self.config or not self.metrics:
                raise ValueError(f"experiment {self.name}: a run needs `config` and `metrics`")
            for m, expr in self.metrics.items():
                parse_expr(expr, f"experiment {self.name}, metric {m}")
        elif not self.preset or not self.bench:
            raise ValueError(f"experiment {self.name}: a micro needs `preset` and `bench`")
        return self

    def preset_name(self) -> str:
        return self.preset if self.kind == "micro" else str(self.config.get("preset", "altra"))

    def metric_names(self) -> Tuple[str, ...]:
        return tuple(self.metrics) if self.kind == "run" else MICRO_METRICS


class Target(_Strict):
    """One measured figure, on one experiment."""

    id: str
    experiment: str
    metric: str
    #: A value, or a range ``[low, high]`` (the source gives one).
    reference: Union[float, Tuple[float, float]]
    unit: str
    #: Relative (0.10: ±10 %), or absolute in the unit with ``points``.
    tolerance: float = Field(gt=0)
    points: bool = False
    source: str
    #: The fit group that fits constants to it; none: validation only.
    group: Optional[str] = None
    note: str = ""
    #: Drawn in figure ``figure`` (``[figure.NAME]``) as a point of ``series`` at ``x``.
    figure: Optional[str] = None
    series: str = ""
    x: Optional[float] = None

    @field_validator("reference")
    @classmethod
    def _range(cls, v: Any) -> Any:
        if isinstance(v, tuple) and not v[0] < v[1]:
            raise ValueError(f"a range needs low < high: {list(v)}")
        return v

    def center(self) -> float:
        """The value a fit aims at: the reference, or a range's middle."""
        return (self.reference[0] + self.reference[1]) / 2 if isinstance(self.reference, tuple) else float(self.reference)

    def _against(self, simulated: float) -> Optional[float]:
        """What ``simulated`` is compared with: the reference, or a range's
        nearer bound; ``None`` inside a range."""
        if not isinstance(self.reference, tuple):
            return float(self.reference)
        lo, hi = self.reference
        return None if lo <= simulated <= hi else (lo if simulated < lo else hi)

    def error(self, simulated: float) -> float:
        """How far off, in tolerances: 0 on the reference (anywhere inside a
        range), 1 at the edge of the tolerance; signed (positive: too high)."""
        ref = self._against(simulated)
        if ref is None:
            return 0.0
        scale = self.tolerance if self.points else self.tolerance * abs(ref)
        return (simulated - ref) / scale if scale else float("inf")

    def residual(self, simulated: float) -> float:
        """(simulated − reference) / reference, or the difference in points;
        against the nearer bound of a range (0 inside)."""
        ref = self._against(simulated)
        if ref is None:
            return 0.0
        return simulated - ref if self.points else (simulated - ref) / ref

    def passes(self, simulated: float) -> bool:
        return abs(self.error(simulated)) <= 1.0 + 1e-12


class Multiplier(_Strict):
    """A factor over the priors of some constants, fitted as one."""

    keys: List[str] = Field(min_length=1)
    bounds: Tuple[float, float]
    plausible: Tuple[float, float]
    why: str


class Choice(_Strict):
    """A field that takes one of a few values (a policy), chosen by the fit."""

    key: str
    options: List[Any] = Field(min_length=2)
    why: str


class Group(_Strict):
    """Constants fitted together to the targets that name the group: the
    multipliers by least squares, for each combination of the choices (the
    combination with the smallest cost wins; the first of equals)."""

    name: str
    order: int
    why: str
    multipliers: Dict[str, Multiplier] = Field(default_factory=dict)
    choices: Dict[str, Choice] = Field(default_factory=dict)
    #: The presets the fitted values apply to (the machines the targets'
    #: machine stands for); none: every preset (software constants).
    presets: List[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _something(self) -> "Group":
        if not self.multipliers and not self.choices:
            raise ValueError(f"group {self.name}: nothing to fit (no multipliers, no choices)")
        return self

    def keys(self) -> List[str]:
        return [k for m in self.multipliers.values() for k in m.keys] + [c.key for c in self.choices.values()]


class Unexpressed(_Strict):
    """A calibration row of params.md the model cannot run yet, and why."""

    row: str
    why: str


class Figure(_Strict):
    """A figure of some targets: measured against simulated, by series."""

    name: str
    title: str
    xlabel: str
    ylabel: str
    xlog: bool = False


class CalibrationSet(_Strict):
    experiments: Dict[str, Experiment]
    targets: List[Target]
    groups: Dict[str, Group]
    unexpressed: List[Unexpressed] = Field(default_factory=list)
    figures: Dict[str, Figure] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _links(self) -> "CalibrationSet":
        ids = [t.id for t in self.targets]
        dup = {i for i in ids if ids.count(i) > 1}
        if dup:
            raise ValueError(f"target ids given twice: {sorted(dup)}")
        for t in self.targets:
            e = self.experiments.get(t.experiment)
            if e is None:
                raise ValueError(f"target {t.id}: no experiment {t.experiment!r}")
            if t.metric not in e.metric_names():
                raise ValueError(f"target {t.id}: experiment {t.experiment} has no metric {t.metric!r} "
                                 f"(it has: {', '.join(e.metric_names())})")
            if t.group is not None and t.group not in self.groups:
                raise ValueError(f"target {t.id}: no group {t.group!r}")
            if t.figure is not None and (t.figure not in self.figures or t.x is None):
                raise ValueError(f"target {t.id}: figure {t.figure!r} needs a [figure.{t.figure}] and an x")
            g = self.groups.get(t.group or "")
            if g is not None and g.presets and e.preset_name() not in g.presets:
                raise ValueError(f"target {t.id}: its preset {e.preset_name()} is not one of group {g.name}'s ({', '.join(g.presets)})")
        keys = [k for g in self.groups.values() for k in g.keys()]
        twice = {k for k in keys if keys.count(k) > 1}
        if twice:
            raise ValueError(f"keys fitted by two multipliers: {sorted(twice)}")
        for g in self.groups.values():
            if not self.group_targets(g.name):
                raise ValueError(f"group {g.name}: no target names it")
        return self

    def group_targets(self, group: str) -> List[Target]:
        return [t for t in self.targets if t.group == group]

    def ordered_groups(self) -> List[Group]:
        return sorted(self.groups.values(), key=lambda g: (g.order, g.name))

    def scope(self) -> Dict[str, List[str]]:
        """Fitted key → the presets it applies to (empty: all)."""
        return {k: g.presets for g in self.groups.values() for k in g.keys()}


def load(path: Optional[Path] = None) -> CalibrationSet:
    """The calibration set in ``path`` (default: ``targets.toml``)."""
    data = load_toml((path or TARGETS_FILE).read_text(encoding="utf-8"))
    exps = {name: Experiment(name=name, **body) for name, body in data.get("experiment", {}).items()}
    groups = {name: Group(name=name, **body) for name, body in data.get("group", {}).items()}
    return CalibrationSet(experiments=exps, targets=[Target(**t) for t in data.get("target", [])], groups=groups,
                          unexpressed=[Unexpressed(**u) for u in data.get("unexpressed", [])],
                          figures={n: Figure(name=n, **f) for n, f in data.get("figure", {}).items()})


# ---------------------------------------------------------------- metrics

_OPS = (ast.Add, ast.Sub, ast.Mult, ast.Div)


def parse_expr(text: str, where: str) -> ast.Expression:
    """An arithmetic expression over dotted result paths (``a.0.b + c / 2``)."""
    # Path segments that are list indices (`cores.0.x`) are not valid Python names.
    try:
        tree = ast.parse(_names(text), mode="eval")
    except SyntaxError:
        raise ValueError(f"{where}: not an expression: {text!r}") from None
    for node in ast.walk(tree):
        ok = isinstance(node, (ast.Expression, ast.BinOp, ast.UnaryOp, ast.USub, ast.Name, ast.Load, ast.Attribute)
                        + _OPS) or (isinstance(node, ast.Constant) and isinstance(node.value, (int, float)))
        if not ok:
            raise ValueError(f"{where}: only numbers, dotted paths and + - * / are allowed: {text!r}")
    return tree


def _names(text: str) -> str:
    """``cores.0.x`` as ``cores._0.x``: a path's index segments as names (numbers stay as they are)."""
    import re

    return re.sub(r"[A-Za-z_][\w.]*", lambda m: re.sub(r"\.(\d+)", r"._\1", m.group(0)), text)


def evaluate(text: str, result: Mapping[str, Any]) -> float:
    """The expression's value on ``result`` (a nested dict); a missing path is an error naming it."""
    tree = parse_expr(text, "metric")

    def path(node: ast.AST) -> str:
        if isinstance(node, ast.Name):
            return node.id
        assert isinstance(node, ast.Attribute)
        return f"{path(node.value)}.{node.attr}"

    def value(node: ast.AST) -> float:
        if isinstance(node, ast.Expression):
            return value(node.body)
        if isinstance(node, ast.Constant):
            return float(node.value)
        if isinstance(node, ast.UnaryOp):
            return -value(node.operand)
        if isinstance(node, ast.BinOp):
            a, b = value(node.left), value(node.right)
            if isinstance(node.op, ast.Add):
                return a + b
            if isinstance(node.op, ast.Sub):
                return a - b
            if isinstance(node.op, ast.Mult):
                return a * b
            return a / b if b else float("nan")
        dotted = path(node)
        cur: Any = result
        for part in dotted.split("."):
            key: Any = int(part[1:]) if part.startswith("_") and part[1:].isdigit() else part
            try:
                cur = cur[key]
            except (KeyError, IndexError, TypeError):
                raise ValueError(f"metric {text!r}: the result has no {dotted.replace('._', '.')}") from None
        return float(cur)

    return value(tree)
