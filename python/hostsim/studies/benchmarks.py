"""The benchmark suite's studies (the userspace-networking papers): each is its sweeps, its table and its figures.

* ``drop-breakdown``: MSB and the bandwidth-vs-loss curve of each benchmark
  at 64, 512 and 1518 B on ``altra``, and which drop class fails the knee.
* ``sensitivity``: MSB of TestPMD (64 B) and TouchFwd (512 B) on ``altra``
  as one hardware parameter at a time moves: L2, LLC, DCA, frequency,
  memory channels, ROB.
* ``rxptx-dca``: RXpTX's loss rate as its processing interval grows, with
  and without DCA (``a72-quad``, 1518 B at 50 Gb/s).
* ``burst-writebacks``: PMD burst size against LLC writebacks and DRAM
  traffic (``a72-quad`` with DCA, TestPMD 1518 B at line rate).
* ``kernel-vs-pmd``: udp-echo's MSB on the kernel stack and on the PMD at
  64, 512 and 1518 B (``altra``).
* ``memcached``: requests per second against loss rate, MemcachedDPDK and
  MemcachedKernel (``a72-quad``).
* ``enhancements``: the kernel-bypass study's accumulative enhancements
  (baseline, +3 GHz, +low-latency PCIe, +2x channels, +2x ROB, +2x L1,
  +2x L2/LLC, +DCA) for memcached on both stacks (``a72-quad``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Mapping, Tuple

from . import Rows, TableCells, param
from .draw import bars, figure, save

APPS = ["testpmd", "touchfwd", "touchdrop", "rxptx"]
SIZES = [64, 512, 1518]
DROP_CLASSES = ("dma", "core", "tx")


def _gbps(x: float) -> str:
    return f"{x:.2f}"


def _msb_gbps(row: Mapping[str, Any]) -> float:
    return float(row["result"]["msb"]["bps"]) / 1e9


# ---------------------------------------------------------------- drop-breakdown


def _drop_sweeps() -> Dict[str, Dict[str, Any]]:
    return {"msb": {
        "kind": "msb",
        "description": "MSB and curve of each benchmark and size on altra",
        "msb": {"threshold": 0.01, "points": 4},
        "base": {"preset": "altra", "sim": {"duration": "2ms", "warmup": "1ms"}},
        "axes": [{"key": "app", "values": APPS}, {"key": "loadgen.size", "values": SIZES}],
    }}


def _knee_drops(row: Mapping[str, Any]) -> Dict[str, float]:
    """Each drop class's share of the drops of the first failing trial above the MSB (zeros at line rate)."""
    above = (row["result"]["msb"].get("knee") or {}).get("above") or {}
    drops = above.get("drops") or {}
    total = sum(drops.get(k, 0) for k in DROP_CLASSES)
    return {k: (drops.get(k, 0) / total if total else 0.0) for k in DROP_CLASSES}


def _drop_table(rows: Rows) -> TableCells:
    out = [["app", "size B", "MSB Gbps", "MSB Mpps", "knee dma %", "core %", "tx %"]]
    for r in rows["msb"]:
        m, share = r["result"]["msb"], _knee_drops(r)
        out.append([param(r, "app"), str(param(r, "loadgen.size")), _gbps(_msb_gbps(r)), f"{m['pps'] / 1e6:.3f}"]
                   + [f"{100 * share[k]:.0f}" for k in DROP_CLASSES])
    return out


def _drop_figures(rows: Rows, out: Path) -> List[Path]:
    apps = [a for a in APPS if any(param(r, "app") == a for r in rows["msb"])]
    fig, axes = figure(len(apps), "offered load (Gbps)", "loss rate (%)")
    for ax, app in zip(axes, apps):
        for r in rows["msb"]:
            if param(r, "app") != app:
                continue
            curve = r["result"]["msb"]["curve"]
            ax.plot([p["offered_bps"] / 1e9 for p in curve], [100 * p["loss_rate"] for p in curve], "o-",
                    markersize=3, label=f"{param(r, 'loadgen.size')} B")
        ax.set_title(app)
        ax.axhline(1.0, color="grey", linestyle=":", linewidth=1)
        ax.legend(fontsize=7)
    paths = [save(fig, out / "curves.svg")]
    labels = [f"{param(r, 'app')}\n{param(r, 'loadgen.size')} B" for r in rows["msb"]]
    shares = {k: [100 * _knee_drops(r)[k] for r in rows["msb"]] for k in DROP_CLASSES}
    paths.append(bars(labels, {f"{k.upper()} drops": v for k, v in shares.items()},
                      "share of the knee's drops (%)", out / "drops.svg", stacked=True))
    return paths


# ---------------------------------------------------------------- sensitivity

#: One factor at a time: part name -> (axis key, values, label).
FACTORS = {
    "l2": ("host.mem.l2.size", ["512KiB", "1MiB", "2MiB"], "L2 size"),
    "llc": ("host.mem.llc.size", ["8MiB", "16MiB", "32MiB"], "LLC size"),
    "dca": ("host.mem.llc.dca.enabled", [False, True], "DCA"),
    "freq": ("host.cpu.freq", ["2GHz", "3GHz", "4GHz"], "frequency"),
    "channels": ("host.mem.dram.channels", [1, 2, 4, 8], "memory channels"),
    "rob": ("host.cpu.rob_entries", [64, 128, 256], "ROB entries"),
}
#: The benchmarks the sensitivity study moves: (app, frame size).
SENSITIVE = [("testpmd", 64), ("touchfwd", 512)]


def _sensitivity_sweeps() -> Dict[str, Dict[str, Any]]:
    out = {}
    for part, (key, values, _) in FACTORS.items():
        out[part] = {
            "kind": "msb",
            "msb": {"threshold": 0.01},
            "base": {"preset": "altra", "sim": {"duration": "2ms", "warmup": "1ms"}},
            "axes": [{"zip": "bench", "key": "app", "values": [a for a, _ in SENSITIVE]},
                     {"zip": "bench", "key": "loadgen.size", "values": [s for _, s in SENSITIVE]},
                     {"key": key, "values": values}],
        }
    return out


def _sensitivity_table(rows: Rows) -> TableCells:
    out = [["factor", "value", "app", "size B", "MSB Gbps", "vs first %"]]
    for part, rs in rows.items():
        key, _, label = FACTORS[part]
        first: Dict[str, float] = {}
        for r in rs:
            app, gbps = param(r, "app"), _msb_gbps(r)
            first.setdefault(app, gbps)
            out.append([label, str(param(r, key)), app, str(param(r, "loadgen.size")), _gbps(gbps),
                        f"{100 * (gbps / first[app] - 1):+.1f}" if first[app] else "-"])
    return out


def _sensitivity_figures(rows: Rows, out: Path) -> List[Path]:
    parts = list(rows)
    fig, axes = figure(len(parts), "", "MSB (Gbps)")
    for ax, part in zip(axes, parts):
        key, _, label = FACTORS[part]
        for app, size in SENSITIVE:
            rs = [r for r in rows[part] if param(r, "app") == app]
            ax.plot([str(param(r, key)) for r in rs], [_msb_gbps(r) for r in rs], "o-", label=f"{app} {size} B")
        ax.set_title(label)
        ax.legend(fontsize=7)
    return [save(fig, out / "sensitivity.svg")]


# ---------------------------------------------------------------- rxptx-dca

PROC_TIMES = ["0ns", "1us", "2us", "5us", "10us", "20us"]


def _rxptx_sweeps() -> Dict[str, Dict[str, Any]]:
    return {"runs": {
        "kind": "run",
        "base": {"app": "rxptx", "preset": "a72-quad", "loadgen": {"size": 1518, "rate": "50Gbps"},
                 "sim": {"duration": "2ms", "warmup": "500us"}},
        "axes": [{"key": "host.mem.llc.dca.enabled", "values": [False, True]},
                 {"key": "host.app.proc_time", "values": PROC_TIMES}],
    }}


def _loss(row: Mapping[str, Any]) -> float:
    return float(row["result"]["loadgen"]["loss_rate"])


def _rxptx_table(rows: Rows) -> TableCells:
    out = [["DCA", "proc per burst", "achieved Gbps", "loss %", "dma", "core", "tx"]]
    for r in rows["runs"]:
        lg, d = r["result"]["loadgen"], r["result"]["drops"]
        out.append(["on" if param(r, "host.mem.llc.dca.enabled") else "off", str(param(r, "host.app.proc_time")),
                    _gbps(lg["achieved_bps"] / 1e9), f"{100 * _loss(r):.2f}"] + [str(d[k]) for k in DROP_CLASSES])
    return out


def _rxptx_figures(rows: Rows, out: Path) -> List[Path]:
    fig, (ax,) = figure(1, "processing interval per burst", "loss rate (%)")
    for dca in (False, True):
        rs = [r for r in rows["runs"] if param(r, "host.mem.llc.dca.enabled") == dca]
        ax.plot([str(param(r, "host.app.proc_time")) for r in rs], [100 * _loss(r) for r in rs], "o-",
                label=f"DCA {'on' if dca else 'off'}")
    ax.legend()
    return [save(fig, out / "loss-vs-processing.svg")]


# ---------------------------------------------------------------- burst-writebacks

BURSTS = [32, 64, 128, 256, 512, 1024]


def _burst_sweeps() -> Dict[str, Dict[str, Any]]:
    return {"runs": {
        "kind": "run",
        "base": {"app": "testpmd", "preset": "a72-quad", "loadgen": {"size": 1518, "rate": "100%"},
                 "sim": {"duration": "2ms", "warmup": "500us"},
                 # Rings and a pool that hold the largest burst.
                 "host": {"pmd": {"rxd": 2048, "txd": 2048, "mempool": {"mbufs": 16384}},
                          "mem": {"llc": {"dca": {"enabled": True}}}}},
        "axes": [{"key": "host.pmd.burst", "values": BURSTS}],
    }}


def _per_packet(row: Mapping[str, Any], value: float) -> float:
    """Per frame the NICs received (and wrote to memory)."""
    packets = sum(p["rx_packets"] for p in row["result"]["ports"]) or 1
    return value / packets


def _burst_table(rows: Rows) -> TableCells:
    out = [["burst", "achieved Gbps", "LLC writebacks/pkt", "L2 victim fills/pkt", "DRAM B/pkt", "DCA leaks",
            "drops dma/core/tx"]]
    for r in rows["runs"]:
        res = r["result"]
        llc, dram = res["mem"]["llc"], res["mem"]["dram"]
        dram_bytes = sum(v for k, v in dram.items() if k.startswith("bytes_") and isinstance(v, (int, float)))
        out.append([str(param(r, "host.pmd.burst")), _gbps(res["loadgen"]["achieved_bps"] / 1e9),
                    f"{_per_packet(r, llc['writebacks']):.3f}", f"{_per_packet(r, llc['victim_fills']):.3f}",
                    f"{_per_packet(r, dram_bytes):.0f}", str(res["mem"]["dca_leaks"]),
                    "/".join(str(res["drops"][k]) for k in DROP_CLASSES)])
    return out


def _burst_figures(rows: Rows, out: Path) -> List[Path]:
    rs = rows["runs"]
    labels = [str(param(r, "host.pmd.burst")) for r in rs]
    return [bars(labels, {"LLC writebacks": [_per_packet(r, r["result"]["mem"]["llc"]["writebacks"]) for r in rs],
                          "L2 victim fills": [_per_packet(r, r["result"]["mem"]["llc"]["victim_fills"]) for r in rs]},
                 "per packet", out / "writebacks.svg", xlabel="PMD burst size")]




# ---------------------------------------------------------------- kernel-vs-pmd

STACKS = ["pmd", "kernel"]


def _stack_sweeps() -> Dict[str, Dict[str, Any]]:
    return {"udp-echo": {
        "kind": "msb",
        "msb": {"threshold": 0.01, "resolution": 0.01},
        "base": {"app": "udp-echo", "preset": "altra", "sim": {"duration": "2ms", "warmup": "1ms"}},
        "axes": [{"key": "stack", "values": STACKS}, {"key": "loadgen.size", "values": SIZES}],
    }}


def _stack_table(rows: Rows) -> TableCells:
    out = [["stack", "size B", "MSB Gbps", "MSB Mpps", "PMD / kernel"]]
    pmd = {param(r, "loadgen.size"): _msb_gbps(r) for r in rows["udp-echo"] if param(r, "stack") == "pmd"}
    for r in rows["udp-echo"]:
        size, gbps = param(r, "loadgen.size"), _msb_gbps(r)
        ratio = f"{pmd[size] / gbps:.1f}x" if param(r, "stack") == "kernel" and size in pmd and gbps else ""
        out.append([param(r, "stack"), str(size), _gbps(gbps), f"{r['result']['msb']['pps'] / 1e6:.3f}", ratio])
    return out


def _stack_figures(rows: Rows, out: Path) -> List[Path]:
    rs = rows["udp-echo"]
    sizes = sorted({param(r, "loadgen.size") for r in rs})
    series = {stack: [next((_msb_gbps(r) for r in rs if param(r, "stack") == stack and param(r, "loadgen.size") == s),
                           0.0) for s in sizes] for stack in STACKS}
    return [bars([f"{s} B" for s in sizes], series, "MSB (Gbps)", out / "msb-by-stack.svg", xlabel="frame size")]


# ---------------------------------------------------------------- memcached


def _memcached_sweeps() -> Dict[str, Dict[str, Any]]:
    return {"msb": {
        "kind": "msb",
        "msb": {"threshold": 0.01, "resolution": 0.01, "points": 6},
        "base": {"app": "memcached", "preset": "a72-quad", "sim": {"duration": "2ms", "warmup": "1ms"}},
        "axes": [{"key": "stack", "values": STACKS}],
    }}


def _memcached_table(rows: Rows) -> TableCells:
    out = [["stack", "MSB requests/s (M)", "p99 at MSB us", "knee dma %", "core %", "tx %"]]
    for r in rows["msb"]:
        m = r["result"]["msb"]
        p99 = (r.get("p99_ns") or 0) / 1e3
        share = _knee_drops(r)
        out.append([param(r, "stack"), f"{m['pps'] / 1e6:.3f}", f"{p99:.1f}"]
                   + [f"{100 * share[k]:.0f}" for k in DROP_CLASSES])
    return out


def _memcached_figures(rows: Rows, out: Path) -> List[Path]:
    fig, (ax,) = figure(1, "offered requests/s (M)", "loss rate (%)")
    for r in rows["msb"]:
        curve = r["result"]["msb"]["curve"]
        ax.plot([p["offered_pps"] / 1e6 for p in curve], [100 * p["loss_rate"] for p in curve], "o-",
                label=f"memcached on {param(r, 'stack')}")
    ax.set_xscale("log")
    ax.axhline(1.0, color="grey", linestyle=":", linewidth=1)
    ax.legend()
    return [save(fig, out / "rps-vs-loss.svg")]


# ---------------------------------------------------------------- enhancements

#: The kernel-bypass study's accumulative enhancements on a72-quad, each
#: step keeping the ones before: (label, {dotted host field: the new value
#: from the preset's}). Doubling is relative to the preset (SPEC §4; the I/O
#: cache stands in for the LLC). a72-quad is a gem5 machine on gem5's I/O
#: path (`host.io.path = gem5_xbar`), where the Bridge's delay stands for the
#: PCIe hop; the study's low-latency PCIe value is not in the reference, so
#: that step halves the Bridge's delay (an estimate). The core model has no
#: load/store unit count, so "+2x LSUs" is not a step.
ENHANCEMENTS: List[Any] = [
    ("baseline", {}),
    ("+3 GHz", {"host.cpu.freq_hz": lambda v: 3_000_000_000}),
    ("+low-latency PCIe", {"host.io.bridge.delay_ps": lambda v: v // 2}),
    ("+2x channels", {"host.mem.dram.channels": lambda v: 2 * v}),
    ("+2x ROB", {"host.cpu.rob_entries": lambda v: 2 * v}),
    ("+2x L1", {"host.mem.l1d.size_bytes": lambda v: 2 * v}),
    ("+2x L2/LLC", {"host.mem.l2.size_bytes": lambda v: 2 * v, "host.mem.llc.size_bytes": lambda v: 2 * v}),
    ("+DCA", {"host.mem.llc.dca.enabled": lambda v: True}),
]
ENHANCED_PRESET = "a72-quad"


def _preset_value(host: Mapping[str, Any], key: str) -> Any:
    value: Any = host
    for part in key.split(".")[1:]:
        value = value[part]
    return value


def _enhancement_steps() -> List[Tuple[str, Dict[str, Any]]]:
    """Each step's label and the value of every enhanced field there (the preset's until its step)."""
    from ..host import preset_host

    host = preset_host(ENHANCED_PRESET)
    assert host is not None
    current = {key: _preset_value(host, key) for _, changes in ENHANCEMENTS for key in changes}
    steps = []
    for label, changes in ENHANCEMENTS:
        for key, change in changes.items():
            current[key] = change(_preset_value(host, key))
        steps.append((label, dict(current)))
    return steps


def _enhancement_axes() -> List[Dict[str, Any]]:
    """Every enhanced field as one axis of a zip group: its value at each step."""
    steps = _enhancement_steps()
    return [{"zip": "step", "key": key, "values": [values[key] for _, values in steps]} for key in steps[0][1]]


def _enhancement_sweeps() -> Dict[str, Dict[str, Any]]:
    return {"steps": {
        "kind": "msb",
        "msb": {"threshold": 0.01, "resolution": 0.02},
        "base": {"app": "memcached", "preset": ENHANCED_PRESET, "sim": {"duration": "2ms", "warmup": "1ms"}},
        "axes": [{"key": "stack", "values": STACKS}] + _enhancement_axes(),
    }}


def _step(row: Mapping[str, Any]) -> str:
    """The label of the step a row is at."""
    return next(label for label, values in _enhancement_steps()
                if all(row["params"].get(k) == v for k, v in values.items()))


def _enhancement_table(rows: Rows) -> TableCells:
    out = [["stack", "step", "MSB requests/s (M)", "vs baseline"]]
    first: Dict[str, float] = {}
    for r in rows["steps"]:
        stack, pps = param(r, "stack"), r["result"]["msb"]["pps"]
        first.setdefault(stack, pps)
        out.append([stack, _step(r), f"{pps / 1e6:.3f}", f"{pps / first[stack]:.2f}x" if first[stack] else "-"])
    return out


def _enhancement_figures(rows: Rows, out: Path) -> List[Path]:
    fig, axes = figure(len(STACKS), "", "MSB (M requests/s)")
    for ax, stack in zip(axes, STACKS):
        rs = [r for r in rows["steps"] if param(r, "stack") == stack]
        ax.bar(range(len(rs)), [r["result"]["msb"]["pps"] / 1e6 for r in rs])
        ax.set_xticks(range(len(rs)))
        ax.set_xticklabels([_step(r) for r in rs], rotation=60, ha="right", fontsize=7)
        ax.set_title(f"memcached on {stack}")
    return [save(fig, out / "enhancements.svg")]
