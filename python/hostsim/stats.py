"""gem5-style ``stats.txt``.

gem5 users read statistics as blocks between ``Begin``/``End`` markers, one
line per statistic: a dotted name, the value, then ``# description (Unit)``,
in aligned columns, with one block per statistics dump. hostsim writes one
block per simulation (a bandwidth test writes one per trial, in the order the
trials ran), opening with the simulation-wide figures gem5 puts first
(``simSeconds``, ``simTicks``, ``hostSeconds``...) followed by the core's own
statistics registry. A tick is one picosecond, as in gem5.
"""

from __future__ import annotations

from typing import Any, Iterable, List, Mapping, Tuple

BEGIN = "---------- Begin Simulation Statistics ----------"
END = "---------- End Simulation Statistics   ----------"
TICKS_PER_SECOND = 10**12

Row = Tuple[str, Any, str, str]


def _header_rows(result: Mapping[str, Any]) -> List[Row]:
    sim = result.get("sim", {})
    lg = result.get("loadgen", {})
    ticks = int(sim.get("simulated_ps", 0))
    wall = float(sim.get("wall_s", 0.0))
    packets = int(lg.get("tx_packets", 0)) + int(lg.get("rx_packets", 0))
    return [
        ("simSeconds", ticks / TICKS_PER_SECOND, "Second", "Number of seconds simulated"),
        ("simTicks", ticks, "Tick", "Number of ticks simulated"),
        ("finalTick", ticks, "Tick", "Number of ticks from beginning of simulation"),
        ("simFreq", TICKS_PER_SECOND, "Tick/Second", "Number of ticks per simulated second"),
        ("simPackets", packets, "Count", "Frames sent and received by the load generator (measured window)"),
        ("simEvents", int(sim.get("events", 0)), "Count", "Events the engine executed"),
        ("hostSeconds", wall, "Second", "Real time elapsed on the host"),
        ("hostTickRate", ticks / wall if wall > 0 else 0.0, "Tick/Second", "Simulator tick rate"),
        (
            "hostPacketRate",
            float(sim.get("packets_per_wall_s", 0.0)),
            "Count/Second",
            "Simulated packets per host second",
        ),
        ("seed", int(sim.get("seed", 0)), "Count", "Seed of every random stream"),
    ]


def _stat_rows(result: Mapping[str, Any]) -> List[Row]:
    rows = []
    for stat in result.get("stats", []):
        rows.append((str(stat["name"]), stat["value"], str(stat.get("unit", "")), str(stat.get("desc", ""))))
    return rows


#: Units whose values are whole numbers even when the core sends them as floats.
WHOLE_UNITS = {"Count", "Byte", "Tick", "Cycle", "Bit", "Picosecond"}


def format_value(value: Any, unit: str = "") -> str:
    """Counts as integers, other numbers with six decimals (as gem5 prints them)."""
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and unit in WHOLE_UNITS and value.is_integer():
        return str(int(value))
    if isinstance(value, float):
        if value != value:
            return "nan"
        return f"{value:.6f}" if abs(value) < 1e15 else f"{value:.6e}"
    return str(value)


def format_block(result: Mapping[str, Any]) -> str:
    """One Begin/End block for one simulation result."""
    rows = _header_rows(result) + _stat_rows(result)
    name_w = max(40, max(len(r[0]) for r in rows) + 1)
    values = [format_value(r[1], r[2]) for r in rows]
    value_w = max(12, max(len(v) for v in values))
    lines = ["", BEGIN]
    for (name, _, unit, desc), value in zip(rows, values):
        note = f"# {desc} ({unit})" if unit else f"# {desc}"
        lines.append(f"{name:<{name_w}} {value:>{value_w}}    {note}".rstrip())
    lines += ["", END, ""]
    return "\n".join(lines)


def format_stats(results: Iterable[Mapping[str, Any]]) -> str:
    """A whole ``stats.txt``: one block per result, in order."""
    return "".join(format_block(r) for r in results)
