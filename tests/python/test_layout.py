"""The core's folders depend on each other one way only.

Each top-level module of ``crates/hostsim-core/src`` has a rank; code (not
comments, not ``#[cfg(test)]`` items) may name only modules of a lower
rank: engine, error ← wire ← framebuf ← link, pcie, mem, cpu ← io (a
device's I/O path: a PCIe link or gem5's crossbar, over the memory system)
← loadgen, dev, dma, kvs, nic (none of these five uses another) ← stack ←
apps ← host ← config ← system. So there is no import cycle, and ``host`` — the wiring —
is imported by nothing but the system builder and the config.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, Set

SRC = Path(__file__).resolve().parents[2] / "crates" / "hostsim-core" / "src"

RANK: Dict[str, int] = {
    "error": 0,
    "engine": 0,
    "wire": 1,
    "framebuf": 2,
    "link": 3,
    "pcie": 3,
    "mem": 3,
    "cpu": 3,
    "io": 4,
    "loadgen": 5,
    "dev": 5,
    "dma": 5,
    "kvs": 5,
    "nic": 5,
    "stack": 6,
    "apps": 7,
    "host": 8,
    "config": 9,
    "system": 10,
    "check": 9,
    "fuzz": 11,
    "calibration": 11,
}


def _code(text: str) -> str:
    """The file without comments and without the items marked ``#[cfg(test)]``
    (a test module, or one test-only function, up to its closing brace)."""
    text = "\n".join(line.split("//", 1)[0] for line in text.splitlines())
    out, i = [], 0
    while (j := text.find("#[cfg(test)]", i)) >= 0:
        out.append(text[i:j])
        brace, semi = text.find("{", j), text.find(";", j)
        if semi >= 0 and (brace < 0 or semi < brace):
            i = semi + 1
            continue
        depth, k = 0, brace
        while k < len(text):
            depth += {"{": 1, "}": -1}.get(text[k], 0)
            k += 1
            if depth == 0:
                break
        i = k
    out.append(text[i:])
    return "".join(out)


def _used(code: str) -> Set[str]:
    """Top-level modules named as ``crate::m`` or inside ``crate::{m, …}``."""
    used = set(re.findall(r"crate::(\w+)", code))
    for group in re.findall(r"crate::\{([^}]*)\}", code):
        used.update(m.group(1) for m in re.finditer(r"(?:^|,)\s*(\w+)", group))
    return used


def dependencies() -> Dict[str, Set[str]]:
    deps: Dict[str, Set[str]] = {}
    for path in SRC.rglob("*.rs"):
        rel = path.relative_to(SRC)
        top = rel.parts[0].removesuffix(".rs")
        if top == "lib":
            continue
        used = _used(_code(path.read_text()))
        deps.setdefault(top, set()).update(u for u in used if u != top)
    return deps


def test_every_module_has_a_rank():
    assert set(dependencies()) <= set(RANK), set(dependencies()) - set(RANK)


def violations(deps: Dict[str, Set[str]]) -> list:
    return [
        f"{module} -> {dep}"
        for module, used in sorted(deps.items())
        for dep in sorted(used)
        if dep in RANK and RANK[dep] >= RANK[module]
    ]


def test_dependencies_point_one_way():
    wrong = violations(dependencies())
    assert not wrong, "dependencies against the layering: " + ", ".join(wrong)


def test_only_the_system_builder_and_the_config_use_the_host_wiring():
    users = {m for m, used in dependencies().items() if "host" in used}
    assert users <= {"config", "system"}, users


def test_the_checker_sees_a_dependency_the_wrong_way():
    deps = dependencies()
    assert "nic" in deps["stack"], "the stack drives the NIC's queues"
    deps["nic"] = deps["nic"] | {"stack"}
    assert violations(deps) == ["nic -> stack"]
    assert violations({"engine": {"system"}, "apps": {"stack"}}) == ["engine -> system"]


def test_the_reader_skips_test_items_only_and_sees_grouped_imports():
    code = _code("""use crate::{nic, stack::App};
#[cfg(test)]
fn probe() { if x { crate::system::run(); } }
fn real() { crate::mem::x(); }
#[cfg(test)]
mod tests { use crate::host; }
""")
    assert _used(code) == {"nic", "stack", "mem"}
