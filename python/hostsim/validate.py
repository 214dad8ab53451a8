"""``hostsim validate``: the simulator against public calibration figures.

The checks live in the core (``crates/hostsim-core/src/calibration.rs``):
PCIe effective bandwidth against pcie-bench's model, the timed PCIe link
against its closed form, line rates, the Toeplitz hash's verification
vectors, DRAM idle latency and peak bandwidth, and the reflector as an
M/D/1 queue. Each row gives the reference, the simulated value, the
tolerance and the source.

Then every target of the calibration set (``hostsim.calibration``,
``targets.toml``), run on the core as built (its fitted constants laid
over the presets): its reference, the simulated value, the residual, the
tolerance, whether it passes, and the fit group that was fitted to it
(none: a validation target).
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional


def checks() -> List[Dict[str, Any]]:
    """Runs every check; one dict per check (see the module header)."""
    from .runner import core

    return list(json.loads(core().calibration_checks()))


def _num(v: float, unit: str) -> str:
    if unit == "hash":
        return f"0x{int(v):08x}"
    return f"{v:.4f}".rstrip("0").rstrip(".") if abs(v) < 1e6 else f"{v:.6g}"


def format_checks(rows: List[Dict[str, Any]]) -> str:
    """The table ``hostsim validate`` prints, with a closing count."""
    head = ["area", "check", "reference", "simulated", "unit", "tolerance", "", "source"]
    body = [
        [r["area"], r["name"], _num(r["reference"], r["unit"]), _num(r["simulated"], r["unit"]), r["unit"],
         "exact" if r["tolerance"] == 0 else f"{r['tolerance'] * 100:.2g} %", "pass" if r["pass"] else "FAIL", r["source"]]
        for r in rows
    ]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body)]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip() for row in [head] + body]
    failed = sum(not r["pass"] for r in rows)
    lines.append(f"{len(rows) - failed} of {len(rows)} checks pass" + (f"; {failed} FAIL" if failed else ""))
    return "\n".join(lines)


def _ref(r: Dict[str, Any]) -> str:
    ref = r["reference"]
    return f"{_num(ref[0], '')}-{_num(ref[1], '')}" if isinstance(ref, list) else _num(ref, "")


def format_targets(rows: List[Dict[str, Any]]) -> str:
    """The calibration targets' table, with a closing count."""
    head = ["target", "reference", "simulated", "unit", "residual", "tolerance", "", "fitted by"]
    body = [
        [r["id"], _ref(r), _num(r["simulated"], ""), r["unit"],
         f"{r['residual']:+.2f} pt" if r["points"] else f"{r['residual'] * 100:+.1f} %",
         f"{r['tolerance']:g} pt" if r["points"] else f"{r['tolerance'] * 100:g} %",
         "pass" if r["pass"] else "FAIL", r["group"] or "(validation)"]
        for r in rows
    ]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body)]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip() for row in [head] + body]
    failed = sum(not r["pass"] for r in rows)
    lines.append(f"{len(rows) - failed} of {len(rows)} calibration targets within tolerance"
                 + (f"; {failed} outside" if failed else ""))
    return "\n".join(lines)


def main(json_path: Optional[str] = None, targets: bool = True, strict: bool = False) -> int:
    """Prints the checks' table, then the calibration targets' (with
    ``targets``); writes both as JSON to ``json_path``. 0 if every check
    passes (and, with ``strict``, every target), else 1."""
    import sys

    rows = checks()
    print(format_checks(rows), flush=True)
    out: Dict[str, Any] = {"checks": rows}
    ok = all(r["pass"] for r in rows)
    if targets:
        from . import calibration

        def progress(experiment: str) -> None:
            print(f"validate: running {experiment}", file=sys.stderr, flush=True)

        trows = calibration.evaluate_all(progress=progress)
        print()
        print(format_targets(trows))
        out["targets"] = trows
        ok = ok and (not strict or all(r["pass"] for r in trows))
    if json_path:
        with open(json_path, "w", encoding="utf-8") as f:
            json.dump(out, f, indent=1)
    return 0 if ok else 1
