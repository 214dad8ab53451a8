"""``hostsim params``: every default and preset value with its unit and source.

The sources live in ``sources.toml`` beside this module: a ``[default]``
table of ``"dotted.field" = "source"`` for the values every preset shares
and a ``[preset.NAME]`` table for the fields whose value differs in that
preset or has a source of its own there. A field is looked up in its
preset's table, then in ``[default]``. The fields are the leaves of the
preset's resolved host config (``hostsim.host.preset_host``; a list or a
dict that is itself a value counts as one leaf) and the ``sim``, ``link``,
``loadgen`` (its nested tables included) and ``reflector`` fields at their
defaults, with the preset's link.

A source is a reference (``params.md §N "row"``, ``SPEC §4 "..."``, a
datasheet, a document in ``docs/reference/``), or says ``estimate`` (a
value nobody measured for this machine), or ``setting`` (a choice of the
run or the workload, not a property of the machine), or ``fitted to``:
a constant ``hostsim calibrate`` fitted to calibration targets
(``hostsim.calibration``; the core lays ``host/fitted.json`` over the
presets). A fitted field's source names its fit group and targets and
keeps the prior's source after it.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterator, List, Mapping, Optional, Tuple

from . import config as _config
from . import host as _host
from . import presets as _presets

SOURCES_FILE = Path(__file__).with_name("sources.toml")

#: Unit suffixes of field names (core names), longest first.
UNIT_SUFFIXES: Tuple[Tuple[str, str], ...] = (
    ("_bytes_per_s", "B/s"),
    ("_instr_per_line", "instr/line"),
    ("_segments", "segments"),
    ("_cycles", "cycles"),
    ("_instr", "instr"),
    ("_bytes", "B"),
    ("_bps", "bit/s"),
    ("_hz", "Hz"),
    ("_ps", "ps"),
)

#: The kinds of source, by how the text begins (anything else is a reference).
KINDS = ("sourced", "fitted", "estimate", "setting", "missing")


@dataclass(frozen=True)
class Row:
    """One field of a preset: its value in base units, unit, source and where the source came from."""

    field: str
    value: Any
    unit: str
    source: str
    where: str  # "preset", "default", "fitted" or "" (no source)

    @property
    def kind(self) -> str:
        return kind_of(self.source)


def kind_of(source: str) -> str:
    """``estimate``, ``setting``, ``missing`` (empty) or ``sourced`` (a reference)."""
    text = source.strip().lower()
    if not text:
        return "missing"
    for kind in ("estimate", "setting"):
        if text.startswith(kind):
            return kind
    return "fitted" if text.startswith("fitted to") else "sourced"


def fitted_sources(preset: str) -> Dict[str, str]:
    """``host.<key>`` → "fitted to …" for every value the built core fitted on ``preset``."""
    from .calibration import fitted_in_core

    doc = fitted_in_core()
    out = {}
    for v in doc["values"]:
        if v.get("presets") and preset not in v["presets"]:
            continue
        # A value was fitted to its group's targets (listed once, with the group).
        targets = [t["id"] for t in doc["groups"][v["group"]]["targets"]]
        shown = ", ".join(targets) if len(targets) <= 3 else f"{targets[0]} … {targets[-1]} ({len(targets)})"
        out[f"host.{v['key']}"] = (f"fitted to calibration targets {shown} (group {v['group']}, "
                                   f"{v['multiplier']}; docs/reference/calibration.md); prior {v['prior']}")
    return out


def load_sources(path: Optional[Path] = None) -> Dict[str, Any]:
    """The registry: ``{"default": {field: source}, "preset": {name: {field: source}}}``."""
    data = _config.load_toml((path or SOURCES_FILE).read_text(encoding="utf-8"))
    presets = {k: dict(v) for k, v in data.get("preset", {}).items()}
    # `inherit = "NAME"`: the table starts as preset NAME's (one level).
    bases = {k: t.pop("inherit") for k, t in presets.items() if "inherit" in t}
    for name, base in bases.items():
        presets[name] = {**presets[base], **presets[name]}
    return {"default": dict(data.get("default", {})), "preset": presets}


def unit_of(name: str, value: Any) -> str:
    """The unit a core field name's suffix gives, else what kind of value it is."""
    leaf = "_" + name.rsplit(".", 1)[-1]
    for suffix, unit in UNIT_SUFFIXES:
        if leaf.endswith(suffix):
            return unit
    if isinstance(value, bool):
        return "flag"
    if isinstance(value, (int, float)):
        return "count"
    if isinstance(value, (list, dict)):
        return "table" if isinstance(value, dict) else "list"
    return "choice"


def _leaves(d: Mapping[str, Any], prefix: str) -> Iterator[Tuple[str, Any]]:
    for key, value in d.items():
        if isinstance(value, Mapping) and value:
            yield from _leaves(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


def fields(preset: str) -> List[Tuple[str, Any, str]]:
    """(field, value in base units, unit) of every leaf of ``preset``: host first, then the rest."""
    out = [(name, value, unit_of(name, value)) for name, value in _leaves(_host.preset_host(preset), "host.")]
    effective = _config.Config(preset=preset).effective()
    for section, specs in _config.FIELDS.items():
        for fname, spec in specs.items():
            name = f"{section}.{fname}"
            if spec.table is None:
                value = spec.convert(effective[section][fname], name)
                out.append((name, value, unit_of(spec.key, value)))
                continue
            out.append((name, None, "table"))  # none unless set (or implied by the app)
            for iname, ispec in spec.table.items():  # a nested table: its defaults
                value = ispec.default.model_dump(mode="json") if hasattr(ispec.default, "model_dump") else ispec.default
                out.append((f"{name}.{iname}", value, unit_of(ispec.key, value)))
    return out


def params(preset: str, sources: Optional[Mapping[str, Any]] = None) -> List[Row]:
    """Every field of ``preset`` with its value, unit and source (preset table, then ``[default]``)."""
    _presets.get(preset)
    reg = sources if sources is not None else load_sources()
    own, default = reg["preset"].get(preset, {}), reg["default"]
    fitted = fitted_sources(preset) if sources is None else {}
    rows = []
    for name, value, unit in fields(preset):
        if name in fitted:
            prior = own.get(name) or default.get(name) or "no source"
            source, where = f"{fitted[name]}: {prior}", "fitted"
        elif name in own:
            source, where = own[name], "preset"
        elif name in default:
            source, where = default[name], "default"
        else:
            source, where = "", ""
        rows.append(Row(name, value, unit, source, where))
    return rows


def counts(rows: List[Row]) -> Dict[str, int]:
    """Fields in all and of each kind of source."""
    out = {"total": len(rows)}
    for k in KINDS:
        out[k] = sum(r.kind == k for r in rows)
    return out


# ---------------------------------------------------------------- printing

_SCALES = {
    "ps": ((1e12, "s"), (1e9, "ms"), (1e6, "us"), (1e3, "ns")),
    "B": ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")),
    "Hz": ((1e9, "GHz"), (1e6, "MHz")),
    "B/s": ((1e9, "GB/s"), (1e6, "MB/s")),
    "bit/s": ((1e9, "Gbit/s"), (1e6, "Mbit/s")),
}


def format_value(value: Any, unit: str) -> str:
    """``200000 ps (200 ns)``; tables and lists as JSON; text quoted only when empty."""
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"))
    if value is None:
        return "none"
    if isinstance(value, bool):
        return str(value).lower()
    if not isinstance(value, (int, float)) or unit in ("count", "flag", "choice"):
        return str(value)
    text = f"{value} {unit}"
    for scale, name in _SCALES.get(unit, ()):
        if value >= scale and (unit != "B" or value % scale == 0):
            return f"{text} ({value / scale:.6g} {name})"
    return text


def format_table(rows: List[Row]) -> str:
    head = ("field", "value", "source")
    body = [(r.field, format_value(r.value, r.unit), r.source or "(none)") for r in rows]
    widths = [max(len(x) for x in col) for col in zip(head, *body)]
    widths[1] = min(widths[1], 40)
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in [head] + body)


def summary(preset: str, rows: List[Row]) -> str:
    c = counts(rows)
    return (f"{preset}: {c['total']} fields, {c['sourced']} sourced, {c['fitted']} fitted, {c['estimate']} estimate, "
            f"{c['setting']} setting, {c['missing']} without a source")


def main(preset: Optional[str] = None, missing: bool = False, json_path: Optional[str] = None) -> int:
    """Prints the table (or, with ``missing``, the fields without a source); 1 if ``missing`` finds any."""
    name = _presets.DEFAULT_PRESET if preset is None else preset
    rows = params(name)
    shown = [r for r in rows if r.kind == "missing"] if missing else rows
    if shown:
        print(format_table(shown))
    print(summary(name, rows))
    if json_path:
        with open(json_path, "w", encoding="utf-8") as f:
            json.dump([dict(dataclasses.asdict(r), kind=r.kind) for r in shown], f, indent=1)
    return 1 if missing and shown else 0
