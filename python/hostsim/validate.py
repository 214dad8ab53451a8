"""``hostsim validate``: the simulator against public calibration figures.

The checks live in the core (``crates/hostsim-core/src/calibration.rs``):
PCIe effective bandwidth against pcie-bench's model, the timed PCIe link
against its closed form, line rates, the Toeplitz hash's verification
vectors, DRAM idle latency and peak bandwidth, and the reflector as an
M/D/1 queue. Each row gives the reference, the simulated value, the
tolerance and the source.
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


def main(json_path: Optional[str] = None) -> int:
    """Prints the table; writes the rows as JSON to ``json_path``; 0 if every check passes, else 1."""
    rows = checks()
    print(format_checks(rows))
    if json_path:
        with open(json_path, "w", encoding="utf-8") as f:
            json.dump(rows, f, indent=1)
    return 0 if all(r["pass"] for r in rows) else 1
