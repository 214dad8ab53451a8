"""The systems studies: each is its sweeps, its table and its figures.

* ``forwarding``: Linux IP forwarding, the Linux bridge, Open vSwitch's
  kernel datapath, the DPDK vswitch, l3fwd and l2fwd forwarding 64 B frames
  between two 10 GbE ports on one core of ``xeon-e3-1230v2``: MSB, the
  core's cycles per packet split as the forwarding study's Table II (RX,
  TX, memory, skb, processing; at 90 % of the MSB) beside the published
  split, and MSB against the core clock.
* ``rx-sharing``: the single-queue designs × 1, 2, 4 cores on
  ``i9-7940x-cx5`` (throughput, cycles per packet by category, L2 misses
  per packet, batch-size CDFs).
* ``tx-schemes``: a TCP sender's four transmit schemes (copy, I/OAT,
  zero-copy, NIC memory) on ``xeon-6226r-fpga``: goodput, core busy share,
  cycles per segment, memory traffic by agent, buffer holding time, and
  holding time against the round trip.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Mapping

from .. import rx_sharing as rxs
from . import Rows, TableCells, param
from .draw import bars, figure, save

# ---------------------------------------------------------------- forwarding

KERNEL_SYSTEMS = ["ipfwd", "bridge", "ovs"]
SYSTEMS = KERNEL_SYSTEMS + ["vswitch", "l3fwd", "l2fwd"]
FREQS = ["1.6GHz", "2.4GHz", "3.3GHz"]
#: Emmerich et al. 2015, Table II (params.md §7b): cycles per packet for RX, TX, memory, skb, processing.
TABLE_II = {
    "bridge": (491, 456, 178, 311, 1508),
    "ipfwd": (453, 463, 101, 292, 757),
    "ovs": (490, 447, 102, 288, 416),
    "vswitch": (41, 85, 0, 0, 165),
    "l2fwd": (55, 62, 0, 0, 0),
}
SPLIT = ("RX", "TX", "memory", "skb", "processing")


def _system_axes() -> List[Dict[str, Any]]:
    """The systems as a zip group: each application with its stack."""
    return [{"zip": "system", "key": "app", "values": SYSTEMS},
            {"zip": "system", "key": "stack", "values": ["kernel" if s in KERNEL_SYSTEMS else "pmd" for s in SYSTEMS]}]


def _forwarding_base() -> Dict[str, Any]:
    return {"preset": "xeon-e3-1230v2", "host": {"ports": 2, "cores": 1}, "loadgen": {"size": 64},
            "sim": {"duration": "2ms", "warmup": "1ms"}}


def _forwarding_sweeps() -> Dict[str, Dict[str, Any]]:
    return {
        "msb": {"kind": "msb", "base": _forwarding_base(), "axes": _system_axes()},
        "freq": {"kind": "msb", "base": _forwarding_base(),
                 "axes": _system_axes() + [{"key": "host.cpu.freq", "values": FREQS}]},
    }


def split_pps(msb: Mapping[str, Any]) -> float:
    """Each sending port's rate at 90 % of a bandwidth test's MSB."""
    return 0.9 * msb["pps"] / max(1, int(msb.get("sending_ports") or 1))


def _forwarding_followups(rows: Rows) -> Dict[str, Dict[str, Any]]:
    """A run of each system at 90 % of its MSB, for the cycle split. The
    MSB is the sending ports' sum; the rate is set per sending port."""
    done = rows.get("msb", [])
    if not done:
        return {}
    base = dict(_forwarding_base(), sim={"duration": "6ms", "warmup": "3ms"})
    return {"split": {"kind": "run", "base": base, "axes": [
        {"zip": "system", "key": "app", "values": [param(r, "app") for r in done]},
        {"zip": "system", "key": "stack", "values": [param(r, "stack") for r in done]},
        {"zip": "system", "key": "loadgen.rate",
         "values": [f"{split_pps(r['result']['msb']):.0f}pps" for r in done]},
    ]}}


def _split(row: Mapping[str, Any]) -> List[float]:
    c = row["result"]["cores"][0]["cycles_per_packet"]
    return [c["irq"] + c["rx"], c["qdisc"] + c["tx"], c["mempool"], c["skb"], c["proto"] + c["app"]]


def _forwarding_table(rows: Rows) -> TableCells:
    head = ["system", "MSB Mpps"] + [f"{f} Mpps" for f in FREQS] + [f"{s} sim/pub" for s in SPLIT]
    out = [head]
    split = {param(r, "app"): _split(r) for r in rows.get("split", [])}
    for r in rows.get("msb", []):
        app = param(r, "app")
        by_freq = {param(x, "host.cpu.freq"): x["result"]["msb"]["pps"] / 1e6
                   for x in rows.get("freq", []) if param(x, "app") == app}
        pub = TABLE_II.get(app)
        cells = [f"{split[app][i]:.0f}/{pub[i] if pub else '-'}" if app in split else "-" for i in range(len(SPLIT))]
        out.append([app, f"{r['result']['msb']['pps'] / 1e6:.2f}"]
                   + [f"{by_freq[f]:.2f}" if f in by_freq else "-" for f in FREQS] + cells)
    return out


def _forwarding_figures(rows: Rows, out: Path) -> List[Path]:
    paths = []
    fig, (ax,) = figure(1, "core clock", "MSB (Mpps)")
    for app in SYSTEMS:
        rs = [r for r in rows.get("freq", []) if param(r, "app") == app]
        if rs:
            ax.plot([param(r, "host.cpu.freq") for r in rs], [r["result"]["msb"]["pps"] / 1e6 for r in rs], "o-",
                    label=app)
    ax.legend(fontsize=7)
    paths.append(save(fig, out / "msb-vs-clock.svg"))
    split = [(param(r, "app"), _split(r)) for r in rows.get("split", [])]
    if split:
        series = {name: [s[i] for _, s in split] for i, name in enumerate(SPLIT)}
        paths.append(bars([a for a, _ in split], series, "cycles per packet (simulated)", out / "cycles.svg",
                          stacked=True))
    return paths


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


# ---------------------------------------------------------------- tx-schemes

SCHEMES = ["copy", "ioat", "zerocopy", "nicmem"]
RTTS = ["10us", "100us", "1ms"]


def _tx_base(writes: int) -> Dict[str, Any]:
    """The study's workload: one connection writing ``writes`` buffers of 3.6 MB, run until all are acked."""
    return {"app": "tcp-send", "stack": "kernel", "preset": "xeon-6226r-fpga", "link": {"propagation": "1us"},
            "sim": {"duration": "1us", "warmup": "0ps", "drain": "10s"},
            "host": {"app": {"tcp_send": {"writes": writes, "buffer_bytes": 3_600_000}}},
            "loadgen": {"tcp": {"rtt": "10us"}}}


def _tx_sweeps() -> Dict[str, Dict[str, Any]]:
    return {
        # The study's whole workload: 1125 writes of 3.6 MB (4.05 GB).
        "schemes": {"kind": "run", "base": _tx_base(1125), "axes": [{"key": "host.tx_scheme", "values": SCHEMES}]},
        "rtt": {"kind": "run", "base": _tx_base(8),
                "axes": [{"key": "host.tx_scheme", "values": SCHEMES}, {"key": "loadgen.tcp.rtt", "values": RTTS}]},
    }


def _tx_figures_of(row: Mapping[str, Any]) -> Dict[str, float]:
    r = row["result"]
    t = r["kernel"]["tcp_send"]
    end = t["complete_ps"] or 1
    cpp, packets = r["cpu"]["cycles_per_packet"], r["cpu"]["packets"]
    busy = sum(v for k, v in cpp.items() if k not in ("total", "idle")) * packets
    freq = row["config"]["host"]["cpu"]["freq_hz"]
    traffic = r["mem"]["traffic"]
    return {
        "goodput_gbps": t["bytes_acked"] * 8 / (end / 1e12) / 1e9,
        "busy": busy / freq / (end / 1e12),
        "cycles_per_seg": busy / max(t["transmissions"], 1),
        "mem_gbs": sum(traffic[a]["read_bytes"] + traffic[a]["write_bytes"] for a in ("core", "nic", "engine"))
        / (end / 1e12) / 1e9,
        "dram_gb": sum(v for k, v in r["mem"]["dram"].items() if k.startswith("bytes_") and isinstance(v, (int, float)))
        / 1e9,
        "hold_us": t["hold_time"]["mean_ps"] / 1e6,
        "hold_p99_us": t["hold_time"]["p99_ps"] / 1e6,
    }


def _tx_table(rows: Rows) -> TableCells:
    out = [["part", "scheme", "rtt", "goodput Gb/s", "core busy %", "cycles/segment", "memory GB/s", "DRAM GB",
            "held mean us", "held p99 us"]]
    for part in ("schemes", "rtt"):
        for r in rows.get(part, []):
            m = _tx_figures_of(r)
            writes = r["config"]["host"]["app"]["tcp_send"]["writes"]
            out.append([f"{part} ({writes} writes)", param(r, "host.tx_scheme"), str(param(r, "loadgen.tcp.rtt", "10us")),
                        f"{m['goodput_gbps']:.2f}", f"{100 * m['busy']:.1f}", f"{m['cycles_per_seg']:.0f}",
                        f"{m['mem_gbs']:.2f}", f"{m['dram_gb']:.3f}", f"{m['hold_us']:.1f}", f"{m['hold_p99_us']:.1f}"])
    return out


def _tx_figures(rows: Rows, out: Path) -> List[Path]:
    paths = []
    rs = rows.get("schemes", [])
    if rs:
        ms = [_tx_figures_of(r) for r in rs]
        paths.append(bars([param(r, "host.tx_scheme") for r in rs],
                          {"core busy %": [100 * m["busy"] for m in ms], "memory GB/s": [m["mem_gbs"] for m in ms],
                           "goodput Gb/s": [m["goodput_gbps"] for m in ms]}, "", out / "schemes.svg"))
    fig, (ax,) = figure(1, "round trip", "buffer held, mean (us)")
    for scheme in SCHEMES:
        sr = [r for r in rows.get("rtt", []) if param(r, "host.tx_scheme") == scheme]
        if sr:
            ax.plot([param(r, "loadgen.tcp.rtt") for r in sr], [_tx_figures_of(r)["hold_us"] for r in sr], "o-",
                    label=scheme)
    ax.set_yscale("log")
    ax.legend(fontsize=7)
    paths.append(save(fig, out / "holding-vs-rtt.svg"))
    return paths
