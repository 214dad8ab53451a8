"""Sweeps: a grid of configs from one file, each point run once and kept in the result store.

A sweep file (TOML, YAML or JSON) holds a base config, the axes to vary
and what to run at every point::

    name = "testpmd-sizes"      # optional; the file's stem by default
    kind = "msb"                # "run" (one simulation, the default) or "msb" (bandwidth test)
    [msb]                       # bandwidth-test options: threshold, resolution, points, overload, max_trials
    threshold = "1%"
    [base]                      # a config, as for `hostsim run --config`
    app = "testpmd"
    [[axes]]
    key = "loadgen.size"        # any dotted config field, preset and app included
    values = [64, 128, 256]
    [[axes]]
    zip = "g1"                  # axes with the same zip name advance together
    key = "host.cpu.freq"
    range = { start = 1, stop = 3, step = 1 }   # inclusive stop; or values = [...]

The points are the product of the standalone axes and the zip groups, in
file order, the last varying fastest; a sweep of more than
:data:`MAX_SWEEP_POINTS` points is refused, counted before any range is
expanded. Each point is the base with its axis
values set by :meth:`Config.set` and resolved; every point is validated
before anything runs, and a bad file is a :class:`SweepError` naming the
file, the line, the field, the value and what is allowed.

:func:`run_sweep` computes the points whose store key (:func:`store.point_key`)
is not stored yet, on an :mod:`executor` (in this process, or a process
pool), writes each to the store as it finishes, and returns one row per
point. Only this process writes to the store; workers return results.
A sweep parallelises over points only: each point's bandwidth test is the
bisection, its trials one after another (``hostsim msb --jobs N`` splits
one test's trials over N workers, a k-ary search; see :mod:`hostsim.msb`).
"""

from __future__ import annotations

import itertools
import json
import math
import os
import re
import time
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from .config import Config, DuplicateKey, FileRefused, check_input_files, field_key, load_json, load_toml, load_yaml, read_bounded, resolve, resolve_paths
from .executor import Executor, check_jobs, local_executor
from .msb import DEFAULT_OVERLOAD, check_option
from .store import DEFAULT_STORE, Store, point_key, stored_result, summary
from .units import ConfigError, _show

KINDS = ("run", "msb")
TOP_KEYS = ("name", "kind", "description", "msb", "base", "axes")
AXIS_KEYS = ("key", "values", "range", "zip")
RANGE_KEYS = ("start", "stop", "step")
#: Bandwidth-test options and their defaults (those of :func:`hostsim.msb`).
MSB_DEFAULTS: Dict[str, Any] = {"threshold": 0.01, "resolution": 0.005, "points": 0,
                                "overload": DEFAULT_OVERLOAD, "max_trials": 40}

PathLike = Union[str, "os.PathLike[str]"]

#: The most points a sweep may have. A guard, not a model or hardware value:
#: far above any real study (the bundled studies have 2 to 36 points each;
#: see `hostsim study --list`), it stops a mistyped range (``stop = 3e7``, ``step = 1``) before
#: its values or points are built, which would take minutes and gigabytes.
MAX_SWEEP_POINTS = 100_000


class SweepError(ConfigError):
    """A bad sweep file: ``file:line: field: message`` (the line when it can be found)."""

    def __init__(self, path: Optional[str], line: Optional[int], field: str, message: str):
        where = f"{path}:{line}: " if path and line else (f"{path}: " if path else "")
        ValueError.__init__(self, f"{where}{field}: {message}")
        self.field, self.message, self.path, self.line = field, message, path, line


# ---------------------------------------------------------------- the file


class _Lines:
    """Finds the line of a key in the sweep file's text (tomllib and friends give no positions)."""

    def __init__(self, text: str):
        self.lines = text.splitlines()
        self._axes = self._axis_headers()

    def key(self, name: str, start: int = 1, stop: Optional[int] = None) -> Optional[int]:
        """The 1-based line where ``name = ``, ``name:``, ``"name":`` or ``[name]`` first appears in [start, stop)."""
        n = re.escape(name)
        pattern = re.compile(rf"""^\s*(?:-\s*)?(?:["']?{n}["']?\s*[=:]|\[{{1,2}}\s*{n}\s*[\].])""")
        inline = re.compile(rf"""[{{,]\s*["']?{n}["']?\s*[=:]""")
        end = len(self.lines) + 1 if stop is None else stop
        for regex in (pattern, inline):
            for number in range(max(start, 1), end):
                if regex.search(self.lines[number - 1]):
                    return number
        return None

    def _axis_headers(self) -> List[int]:
        headers = [i + 1 for i, line in enumerate(self.lines) if re.match(r"^\s*\[\[\s*axes\s*\]\]", line)]
        if headers:
            return headers
        first = self.key("axes") or 1  # YAML, JSON or an inline TOML array: each axis by its `key`
        found, number = [], first
        while True:
            hit = self.key("key", number + (1 if found else 0))
            if hit is None:
                return found
            found.append(hit)
            number = hit

    def axis(self, i: int, name: Optional[str] = None) -> Optional[int]:
        """The line of axis ``i`` (0-based), or of its field ``name`` when found."""
        if i >= len(self._axes):
            return self.key("axes")
        start = self._axes[i]
        if name is None:
            return start
        stop = self._axes[i + 1] if i + 1 < len(self._axes) else None
        return self.key(name, start, stop) or start

    def within(self, table: str, name: str) -> Optional[int]:
        """The line of ``name`` at or after the first line of ``table`` (``[base]``, ``[base.sim]``...)."""
        start = self.key(table) or 1
        return self.key(name, start) or self.key(table)


@dataclass
class Axis:
    """One axis: a dotted config key and its values; axes with the same ``zip`` name advance together."""

    key: str
    values: List[Any]
    zip: Optional[str] = None
    index: int = 0
    #: Which field gave the values: ``values`` or ``range`` (for error lines).
    given_by: str = "values"


@dataclass
class Point:
    """One point of a sweep: its axis values, its config, resolved, and its store key."""

    idx: int
    params: Dict[str, Any]
    config: Config
    resolved: Dict[str, Any]
    key: str


@dataclass
class Sweep:
    """A parsed sweep file; :meth:`points` builds and validates its points."""

    name: str
    kind: str = "run"
    base: Dict[str, Any] = field(default_factory=dict)
    axes: List[Axis] = field(default_factory=list)
    options: Dict[str, Any] = field(default_factory=dict)
    description: str = ""
    path: Optional[str] = None
    source: str = ""
    #: The directory relative input paths (a trace) are taken from: the sweep file's; ``None``: the working directory.
    root: Optional[str] = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], name: Optional[str] = None, path: Optional[str] = None,
                  source: str = "", root: Optional[str] = None) -> "Sweep":
        """A sweep from the file's table; errors name ``path`` and the line in ``source``;
        relative input paths are taken from ``root``."""
        lines = _Lines(source)

        def fail(line: Optional[int], fld: str, message: str) -> SweepError:
            return SweepError(path, line, fld, message)

        if not isinstance(data, Mapping):
            raise fail(None, "sweep", f"invalid value {_show(data)} (allowed: a table of {', '.join(TOP_KEYS)})")
        for key in data:
            if key not in TOP_KEYS:
                raise fail(lines.key(str(key)), str(key), f"unknown field {str(key)!r} (allowed: {', '.join(TOP_KEYS)})")
        sweep_name = data.get("name", name if name is not None else "sweep")
        if not isinstance(sweep_name, str) or not sweep_name.strip():
            raise fail(lines.key("name"), "name", f"invalid value {_show(sweep_name)} (allowed: a non-empty string)")
        kind = data.get("kind", "run")
        if kind not in KINDS:
            raise fail(lines.key("kind"), "kind", f"invalid value {_show(kind)} (allowed: {' or '.join(KINDS)})")
        base = data.get("base", {})
        if not isinstance(base, Mapping):
            raise fail(lines.key("base"), "base", f"invalid value {_show(base)} (allowed: a table of config fields)")
        options = _msb_options(data.get("msb"), kind, lines, fail)
        raw_axes = data.get("axes", [])
        if not isinstance(raw_axes, list):
            raise fail(lines.key("axes"), "axes", f"invalid value {_show(raw_axes)} (allowed: an array of tables "
                                                  "[[axes]] with key and values or range)")
        axes = [_axis(i, a, lines, fail) for i, a in enumerate(raw_axes)]
        sweep = cls(name=sweep_name.strip(), kind=kind, base=dict(base), axes=axes, options=options,
                    description=str(data.get("description", "")), path=path, source=source, root=root)
        sweep._check_axes(lines)
        return sweep

    def _check_axes(self, lines: _Lines) -> None:
        seen: Dict[str, Axis] = {}
        for axis in self.axes:
            other = seen.get(field_key(axis.key))
            if other is not None:
                same = "" if other.key == axis.key else f" ({other.key!r}, the same field)"
                raise SweepError(self.path, lines.axis(axis.index, "key"), f"axes[{axis.index}].key",
                                 f"{axis.key!r} is already the key of axes[{other.index}]{same} "
                                 "(allowed: each field once)")
            seen[field_key(axis.key)] = axis
        for group, members in self._zip_groups().items():
            lengths = {len(a.values) for a in members}
            if len(lengths) > 1:
                odd = next(a for a in members if len(a.values) != len(members[0].values))
                sizes = ", ".join(f"axes[{a.index}] ({a.key}) has {len(a.values)}" for a in members)
                raise SweepError(self.path, lines.axis(odd.index, "zip"), f"axes[{odd.index}].zip",
                                 f"zip group {group!r} has axes of unequal lengths: {sizes} "
                                 "(allowed: the same number of values in every axis of a zip group)")
        self._check_count(lines)

    def _check_count(self, lines: _Lines) -> None:
        total = self.count()
        if total > MAX_SWEEP_POINTS:
            factors = " x ".join(f"{len(d[0].values)} ({', '.join(a.key for a in d)})" for d in self.dimensions())
            raise SweepError(self.path, lines.key("axes"), "axes",
                             f"{total} points = {factors} (allowed: at most {MAX_SWEEP_POINTS} points in a sweep)")

    def count(self) -> int:
        """How many points the sweep has (the product of its axes' and zip groups' lengths), without building them."""
        return math.prod(len(d[0].values) for d in self.dimensions())

    def _zip_groups(self) -> Dict[str, List[Axis]]:
        groups: Dict[str, List[Axis]] = {}
        for axis in self.axes:
            if axis.zip is not None:
                groups.setdefault(axis.zip, []).append(axis)
        return groups

    def dimensions(self) -> List[List[Axis]]:
        """The factors of the product, in file order: a standalone axis, or a zip group at its first axis."""
        dims: List[List[Axis]] = []
        groups = self._zip_groups()
        for axis in self.axes:
            if axis.zip is None:
                dims.append([axis])
            elif groups[axis.zip][0] is axis:
                dims.append(groups[axis.zip])
        return dims

    def points(self) -> List[Point]:
        """Every point, built and resolved, its input files (a trace) readable; the first bad one is a
        :class:`SweepError`. Relative input paths become absolute, from :attr:`root`, in the config and key."""
        from . import __version__

        lines = _Lines(self.source)
        self._check_count(lines)  # a Sweep built in Python has not been through from_dict
        try:
            base = Config.from_dict(self.base)
        except ConfigError as e:
            raise SweepError(self.path, lines.within("base", e.field.split(".")[-1]), f"base.{e.field}",
                             e.message) from None
        dims = self.dimensions()
        points = []
        for idx, combo in enumerate(itertools.product(*(range(len(d[0].values)) for d in dims))):
            params = {a.key: a.values[j] for d, j in zip(dims, combo) for a in d}
            cfg = base.copy()
            try:
                for key, value in params.items():
                    cfg.set(key, value)
                if self.root is not None:
                    resolve_paths(cfg, self.root)
                resolved = resolve(cfg)
                check_input_files(resolved)
            except ConfigError as e:
                raise self._point_error(lines, idx, params, e) from None
            points.append(Point(idx, params, cfg, resolved, point_key(resolved, self.kind, self.options, __version__)))
        return points

    def _point_error(self, lines: _Lines, idx: int, params: Dict[str, Any], e: ConfigError) -> SweepError:
        """A point's error at the axis whose key it names (an unknown key at the axis's key), else in the base."""
        shown = show_params(params)
        for axis in self.axes:
            if e.field == axis.key or e.field.startswith(axis.key + ".") or axis.key.startswith(e.field + "."):
                if e.message.startswith("unknown field"):
                    return SweepError(self.path, lines.axis(axis.index, "key"), f"axes[{axis.index}].key", str(e))
                return SweepError(self.path, lines.axis(axis.index, axis.given_by),
                                  f"axes[{axis.index}].{axis.given_by}", f"at point {idx} ({shown}): {e}")
        line = lines.within("base", e.field.split(".")[-1]) or lines.key("axes")
        return SweepError(self.path, line, "base", f"at point {idx} ({shown}): {e}")


def _msb_options(raw: Any, kind: str, lines: _Lines, fail: Any) -> Dict[str, Any]:
    """The bandwidth-test options with defaults filled in, as numbers (``"1%"`` is 0.01): part of the key."""
    if kind != "msb":
        if raw is not None:
            raise fail(lines.key("msb"), "msb", "bandwidth-test options apply to kind = 'msb' only "
                                                f"(this sweep's kind is {kind!r})")
        return {}
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise fail(lines.key("msb"), "msb", f"invalid value {_show(raw)} (allowed: a table of {', '.join(MSB_DEFAULTS)})")
    out = dict(MSB_DEFAULTS)
    for name, value in raw.items():
        line = lines.within("msb", str(name))
        if name not in MSB_DEFAULTS:
            raise fail(line, f"msb.{name}", f"unknown field {str(name)!r} (allowed: {', '.join(MSB_DEFAULTS)})")
        try:
            out[name] = check_option(str(name), value, f"msb.{name}")
        except ConfigError as e:
            raise fail(line, f"msb.{name}", e.message) from None
    return out


def _axis(i: int, raw: Any, lines: _Lines, fail: Any) -> Axis:
    """One ``[[axes]]`` table, checked field by field."""
    if not isinstance(raw, Mapping):
        raise fail(lines.axis(i), f"axes[{i}]", f"invalid value {_show(raw)} (allowed: a table with key and "
                                                "values or range, and optionally zip)")
    for name in raw:
        if name not in AXIS_KEYS:
            raise fail(lines.axis(i, str(name)), f"axes[{i}].{name}",
                       f"unknown field {str(name)!r} (allowed: {', '.join(AXIS_KEYS)})")
    key = raw.get("key")
    if not isinstance(key, str) or not key.strip():
        raise fail(lines.axis(i, "key"), f"axes[{i}].key",
                   f"invalid value {_show(key)} (allowed: a dotted config field such as 'loadgen.size')")
    if ("values" in raw) == ("range" in raw):
        raise fail(lines.axis(i), f"axes[{i}]", "needs exactly one of values or range "
                                                f"(has {' and '.join(k for k in ('values', 'range') if k in raw) or 'neither'})")
    if "values" in raw:
        values = raw["values"]
        if not isinstance(values, list) or not values:
            raise fail(lines.axis(i, "values"), f"axes[{i}].values",
                       f"invalid value {_show(values)} (allowed: a non-empty array of values for {key})")
    else:
        values = _range(raw["range"], f"axes[{i}].range", lines.axis(i, "range"), fail)
    group = raw.get("zip")
    if group is not None and (not isinstance(group, str) or not group.strip()):
        raise fail(lines.axis(i, "zip"), f"axes[{i}].zip", f"invalid value {_show(group)} (allowed: a group name)")
    return Axis(key=key.strip(), values=list(values), zip=group, index=i,
                given_by="values" if "values" in raw else "range")


def _range(raw: Any, fld: str, line: Optional[int], fail: Any) -> List[Any]:
    """``{start, stop, step}`` with an inclusive stop (step 1 by default); ints stay ints."""
    allowed = "a table {start, stop, step} of numbers (stop inclusive, step 1 by default)"
    if not isinstance(raw, Mapping):
        raise fail(line, fld, f"invalid value {_show(raw)} (allowed: {allowed})")
    for name in raw:
        if name not in RANGE_KEYS:
            raise fail(line, f"{fld}.{name}", f"unknown field {str(name)!r} (allowed: {', '.join(RANGE_KEYS)})")
    numbers: Dict[str, Any] = {"step": 1}
    for name in RANGE_KEYS:
        if name in raw:
            numbers[name] = raw[name]
        if name not in numbers:
            raise fail(line, f"{fld}.{name}", f"missing (allowed: {allowed})")
        v = numbers[name]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v or v in (float("inf"), float("-inf")):
            raise fail(line, f"{fld}.{name}", f"invalid value {_show(v)} (allowed: a finite number)")
    if numbers["step"] == 0:
        raise fail(line, f"{fld}.step", "invalid value '0' (allowed: a non-zero number)")
    start, stop, step = (Decimal(repr(numbers[n])) for n in RANGE_KEYS)
    count = int((stop - start) / step) + 1 if (stop - start) * step >= 0 else 0
    if count <= 0:
        raise fail(line, fld, f"empty range from {numbers['start']} to {numbers['stop']} by {numbers['step']} "
                              "(allowed: a step that goes from start towards stop)")
    if count > MAX_SWEEP_POINTS:  # counted, not built: the values would not fit in memory
        raise fail(line, fld, f"range from {numbers['start']} to {numbers['stop']} by {numbers['step']} has {count} "
                              f"values (allowed: at most {MAX_SWEEP_POINTS} points in a sweep; a larger step or "
                              "a shorter range)")
    integral = all(isinstance(numbers[n], int) for n in RANGE_KEYS)
    return [int(start + k * step) if integral else float(start + k * step) for k in range(count)]


def load_sweep(path: PathLike) -> Sweep:
    """Reads and checks a sweep file (``.toml``, ``.yaml``/``.yml`` or ``.json``); a key twice in a table is an error."""
    p = Path(path)
    shown = os.fspath(path)
    try:
        text = read_bounded(p).decode("utf-8")
    except OSError as e:
        raise SweepError(shown, None, "sweep", f"cannot read the file ({e.strerror or e})") from None
    except FileRefused as e:
        raise SweepError(shown, None, "sweep", f"invalid file (allowed: {e})") from None
    except UnicodeDecodeError as e:
        raise SweepError(shown, None, "sweep", f"not UTF-8 text ({e})") from None
    suffix = p.suffix.lower()
    try:
        if suffix == ".toml":
            data = load_toml(text)
        elif suffix in (".yaml", ".yml"):
            data = load_yaml(text) or {}
        elif suffix == ".json":
            data = load_json(text)
        else:
            raise SweepError(shown, None, "sweep", f"invalid file name {p.name!r} (allowed: a .toml, .yaml, .yml "
                                                   "or .json file)")
    except SweepError:
        raise
    except DuplicateKey as e:  # YAML knows the line; JSON does not
        raise SweepError(shown, e.line, "sweep", str(e).replace(f" at line {e.line}", "")) from None
    except Exception as e:  # each parser has its own error type; all mean "malformed file"
        raise SweepError(shown, None, "sweep", f"cannot parse: {e}") from None
    return Sweep.from_dict(data, name=p.stem, path=shown, source=text, root=os.fspath(p.parent))


# ---------------------------------------------------------------- running


def compute_point(task: Tuple[str, Config, Dict[str, Any]]) -> Dict[str, Any]:
    """Runs one point (in a worker or in this process): ``{"result", "wall_s"}`` or ``{"error"}``.

    Errors come back as text: exceptions with their own constructors do not
    always cross a process boundary.
    """
    kind, cfg, options = task
    start = time.perf_counter()
    try:
        if kind == "msb":
            from .msb import msb

            result = msb(cfg, **options).to_dict()
        else:
            from .runner import simulate

            result = simulate(cfg).to_dict()
    except Exception as e:
        return {"error": f"{type(e).__name__}: {e}"}
    return {"result": stored_result(result), "wall_s": time.perf_counter() - start}


def headline(row: Mapping[str, Any]) -> str:
    """The point's number in one phrase: the MSB, or what a run achieved and lost."""
    if row.get("status") == "failed":
        return str(row.get("error", ""))
    if row.get("status") == "pending" or row.get("result") is None:
        return ""
    if row.get("kind") == "msb":
        return f"MSB {row['msb_pps'] / 1e6:.3f} Mpps = {row['msb_gbps']:.3f} Gbps"
    loss = row.get("loss_rate")
    return (f"{row['achieved_pps'] / 1e6:.3f} Mpps = {row['achieved_gbps']:.3f} Gbps"
            + ("" if loss is None else f", loss {loss * 100:.3f} %"))


def show_value(value: Any) -> str:
    """An axis value as ``--set`` takes it: a string bare, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value)


def show_params(params: Mapping[str, Any]) -> str:
    """``loadgen.size=64 host.cpu.freq=2GHz``."""
    return " ".join(f"{k}={show_value(v)}" for k, v in params.items()) or "(base)"


class _Reporter:
    """Per-point status lines and an optional rich progress bar (with ETA) on one console."""

    def __init__(self, console: Any, progress: bool, total_points: int, to_compute: int):
        self.console, self.total, self.done = console, total_points, 0
        self.bar: Any = None
        if console is not None and progress and to_compute:
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                                       TimeRemainingColumn)

            self.bar = Progress(TextColumn("sweep"), BarColumn(), MofNCompleteColumn(), TextColumn("elapsed"),
                                TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(), console=console)
            self.task = self.bar.add_task("sweep", total=to_compute)
            self.bar.start()

    def point(self, row: Mapping[str, Any], computed: bool) -> None:
        self.done += 1
        if self.bar is not None and computed:
            self.bar.advance(self.task)
        if self.console is None:
            return
        warnings = len((row.get("result") or {}).get("warnings") or [])
        wall = f"  {row['wall_s']:.2f} s" if computed and row.get("wall_s") is not None else ""
        note = f"  ({warnings} warning{'s' * (warnings != 1)})" if warnings else ""
        self.console.print(f"[{self.done}/{self.total}] {row['status']:<8} #{row['idx']} {show_params(row['params'])}"
                           f"  {headline(row)}{wall}{note}", markup=False, highlight=False, soft_wrap=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def run_sweep(
    sweep: Union[PathLike, Sweep],
    store: Union[PathLike, Store, None] = None,
    jobs: int = 1,
    progress: bool = False,
    console: Any = None,
    dry_run: bool = False,
    executor: Optional[Executor] = None,
) -> List[Dict[str, Any]]:
    """Computes the sweep's points that are not in the store and returns a row per point, in order.

    Each row has the point's ``idx``, ``params``, ``key`` and ``status``:
    ``computed`` (now), ``cached`` (found in the store), ``failed`` (with
    ``error``; not stored) or, with ``dry_run``, ``pending``; stored points
    carry every store column (``result``, ``config``, ``msb_pps``...).
    ``store`` is a path (default ``hostsim.duckdb``) or an open
    :class:`Store`; ``jobs`` worker processes (1: in this process) unless
    an ``executor`` is given; ``console`` (a ``rich.console.Console``)
    receives a status line per point and, with ``progress``, a progress bar
    (on standard error when no console is given).
    """
    sw = sweep if isinstance(sweep, Sweep) else load_sweep(sweep)
    check_jobs(jobs)
    if progress and console is None:
        from rich.console import Console

        console = Console(stderr=True)
    points = sw.points()
    own = not isinstance(store, Store)
    path = os.fspath(store) if own and store is not None else DEFAULT_STORE
    if dry_run and own and not Path(path).exists():
        db: Optional[Store] = None
    else:
        db = Store(path, read_only=dry_run) if own else store  # type: ignore[assignment]
    try:
        return _run(sw, points, db, jobs, progress, console, dry_run, executor)
    finally:
        if own and db is not None:
            db.close()


def _run(sw: Sweep, points: List[Point], db: Optional[Store], jobs: int, progress: bool, console: Any,
         dry_run: bool, executor: Optional[Executor]) -> List[Dict[str, Any]]:
    cached = db.keys(p.key for p in points) if db is not None else set()
    first: Dict[str, Point] = {}
    for p in points:
        first.setdefault(p.key, p)
    todo = [p for key, p in first.items() if key not in cached]
    stored = {r["key"]: r for r in db.rows(keys=sorted(cached))} if db is not None and cached else {}
    if dry_run:
        return [_row(sw, p, "cached", stored[p.key]) if p.key in stored else _row(sw, p, "pending") for p in points]
    rows: Dict[int, Dict[str, Any]] = {}
    reporter = _Reporter(console, progress, len(points), len(todo))
    try:
        for p in points:
            if p.key in stored:
                rows[p.idx] = _row(sw, p, "cached", stored[p.key])
                reporter.point(rows[p.idx], computed=False)
        runner = executor if executor is not None else local_executor(jobs)
        tasks = [(sw.kind, p.config, sw.options) for p in todo]
        for i, answer in runner.map_unordered(compute_point, tasks):
            p = todo[i]
            if isinstance(answer, BaseException) or "error" in answer:
                error = f"{type(answer).__name__}: {answer}" if isinstance(answer, BaseException) else answer["error"]
                data: Dict[str, Any] = {"error": error}
                status, again = "failed", "failed"
            else:
                data = _store_row(sw, p, answer)
                assert db is not None
                db.insert(data)
                status, again = "computed", "cached"
            # Points of this sweep with the same key (the same resolved config) share the answer.
            for q in [p] + [q for q in points if q.key == p.key and q is not p]:
                rows[q.idx] = _row(sw, q, status if q is p else again, data)
                reporter.point(rows[q.idx], computed=q is p)
    finally:
        reporter.close()
    return [rows[p.idx] for p in points if p.idx in rows]


def _store_row(sw: Sweep, p: Point, answer: Mapping[str, Any]) -> Dict[str, Any]:
    """The store row of a computed point."""
    from . import __version__

    result = answer["result"]
    return dict(key=p.key, sweep=sw.name, idx=p.idx, kind=sw.kind, params=p.params, config=p.resolved,
                options=sw.options, seed=p.resolved["seed"], model_version=__version__, result=result,
                wall_s=float(answer["wall_s"]), **summary(sw.kind, result))


def _row(sw: Sweep, p: Point, status: str, data: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """A returned row: the stored columns (if any), then this sweep's view of the point."""
    row = dict(data or {})
    row.update(sweep=sw.name, idx=p.idx, params=p.params, key=p.key, kind=sw.kind, status=status)
    return row


# ---------------------------------------------------------------- printing


def points_table(rows: Sequence[Mapping[str, Any]], axes: Sequence[str]) -> Any:
    """A rich table of the points: index, each axis value, status, headline, wall time."""
    from rich import box
    from rich.table import Table as RichTable

    table = RichTable(box=box.SIMPLE_HEAD, show_edge=False)
    table.add_column("#", justify="right")
    for key in axes:
        table.add_column(key, justify="right")
    table.add_column("status")
    table.add_column("result", overflow="fold")
    table.add_column("wall s", justify="right")
    for row in rows:
        wall = row.get("wall_s")
        table.add_row(str(row["idx"]), *(show_value(row["params"].get(k)) for k in axes), row["status"],
                      headline(row), "" if wall is None else f"{wall:.2f}")
    return table


def counts(rows: Sequence[Mapping[str, Any]]) -> Dict[str, int]:
    """How many rows have each status."""
    out = {"computed": 0, "cached": 0, "failed": 0, "pending": 0}
    for row in rows:
        out[row["status"]] += 1
    return out
