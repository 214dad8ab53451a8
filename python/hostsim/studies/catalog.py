"""The shipped studies: each is its sweeps, its table and its figures.

* ``drop-breakdown``: MSB and the bandwidth-vs-loss curve of each benchmark
  at 64, 512 and 1518 B on ``altra``, and which drop class fails the knee.
* ``sensitivity``: MSB of TestPMD (64 B) and TouchFwd (512 B) on ``altra``
  as one hardware parameter at a time moves: L2, LLC, DCA, frequency,
  memory channels, ROB.
* ``rxptx-dca``: RXpTX's loss rate as its processing interval grows, with
  and without DCA (``a72-quad``, 1518 B at 50 Gb/s).
* ``burst-writebacks``: PMD burst size against LLC writebacks and DRAM
  traffic (``a72-quad`` with DCA, TestPMD 1518 B at line rate).
* ``rx-sharing``: the single-queue designs × 1, 2, 4 cores on
  ``i9-7940x-cx5`` (throughput, cycles per packet by category, L2 misses
  per packet, batch-size CDFs).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Mapping, Sequence

from .. import rx_sharing as rxs
from . import Rows, Study, TableCells, param
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


# ---------------------------------------------------------------- rx-sharing


def _rx_sharing_sweeps() -> Dict[str, Dict[str, Any]]:
    return {
        "none": {"kind": "run", "base": rxs.point("none", 1),
                 "axes": [{"key": "host.rx_sharing", "values": ["none"]}]},
        "shared": {"kind": "run", "base": rxs.point("arbitration", 1),
                   "axes": [{"key": "host.rx_sharing", "values": ["arbitration", "range", "parent_worker"]},
                            {"key": "host.cores", "values": [1, 2, 4]}]},
    }


def _rx_rows(rows: Rows) -> List[Dict[str, Any]]:
    return [rxs.row(r["result"], param(r, "host.rx_sharing"), param(r, "host.cores", 1))
            for part in ("none", "shared") for r in rows.get(part, [])]


def _rx_table(rows: Rows) -> TableCells:
    return rxs.table_cells(_rx_rows(rows))


def _rx_figures(rows: Rows, out: Path) -> List[Path]:
    table = _rx_rows(rows)
    fig, (ax,) = figure(1, "cores", "throughput (Mpps)")
    for design in rxs.DESIGNS:
        rs = [x for x in table if x["design"] == design]
        ax.plot([x["cores"] for x in rs], [x["mpps"] for x in rs], "o-", label=design)
    ax.legend()
    paths = [save(fig, out / "throughput.svg")]
    labels = [f"{x['design']}\n{x['cores']}" for x in table]
    paths.append(bars(labels, {c: [x["cycles"][c] for x in table] for c in rxs.CATEGORIES},
                      "cycles per packet", out / "cycles.svg", stacked=True))
    paths.append(bars(labels, {"L2 misses": [x["l2_misses_per_packet"] for x in table]},
                      "per packet", out / "l2-misses.svg"))
    fig, (ax,) = figure(1, "packets per loop", "fraction of loops (CDF)")
    for r in rows.get("shared", []):
        if param(r, "host.cores") != 4:
            continue
        for core in r["result"]["cores"]:
            cdf = rxs.batch_cdf(core["rx_burst_packets"])
            role = (core.get("pmd") or {}).get("role", "")
            ax.step([n for n, _ in cdf], [f for _, f in cdf], where="post",
                    label=f"{param(r, 'host.rx_sharing')} core {core['core']} ({role})")
    ax.set_xscale("symlog")
    ax.legend(fontsize=6)
    paths.append(save(fig, out / "batch-cdf.svg"))
    return paths


CATALOG: Sequence[Study] = [
    Study("drop-breakdown", "bandwidth vs loss and the knee's drop classes per benchmark and size (altra)",
          _drop_sweeps, _drop_table, _drop_figures),
    Study("sensitivity", "MSB as one hardware parameter moves: L2, LLC, DCA, frequency, channels, ROB (altra)",
          _sensitivity_sweeps, _sensitivity_table, _sensitivity_figures),
    Study("rxptx-dca", "RXpTX loss rate vs processing interval per burst, DCA on and off (a72-quad)",
          _rxptx_sweeps, _rxptx_table, _rxptx_figures),
    Study("burst-writebacks", "PMD burst size vs LLC writebacks and DRAM traffic (a72-quad, DCA on)",
          _burst_sweeps, _burst_table, _burst_figures),
    Study("rx-sharing", "one RX queue, many cores: four designs x 1, 2, 4 cores (i9-7940x-cx5)",
          _rx_sharing_sweeps, _rx_table, _rx_figures),
]
