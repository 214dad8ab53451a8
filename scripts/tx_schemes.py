#!/usr/bin/env python3
"""A TCP sender's transmit schemes (issue 14): for each of `copy`, `ioat`,
`zerocopy` and `nicmem` (`host.tx_scheme`), one core of a preset writes
buffers over TCP to the load generator's receiver at a round-trip time, and
the script prints side by side: goodput, the core's busy share and cycles
per segment by category, bytes each agent (cores, NIC, copy engine) moved
to and from the LLC and DRAM, DRAM bytes by agent, PCIe bytes each way, the
NIC's on-board memory bytes, and the time inside `write()` and the time
each buffer was held.

    .venv/bin/python scripts/tx_schemes.py                    # the table
    .venv/bin/python scripts/tx_schemes.py --rtts 10us,100us,1ms,10ms --table no
    .venv/bin/python scripts/tx_schemes.py --buffers 4KB,64KB,1MB,3.6MB --table no
    .venv/bin/python scripts/tx_schemes.py --loss 0.01 --table no

The workload is `--writes` buffers of `--buffer` bytes on one connection
(default 4; the study writes 1125 buffers of 3.6 MB, 4.05 GB, and
`--writes 1125` runs it whole, in about 45 s for the four schemes); every
write completes (the run lasts until the last byte is acknowledged). The
default preset is the study's machine, xeon-6226r-fpga (`nicmem` needs its
NIC's on-board memory).
"""

from __future__ import annotations

import argparse
from typing import Any, Dict, List

import hostsim
from hostsim.units import parse_size_bytes

SCHEMES = ("copy", "ioat", "zerocopy", "nicmem")
CATEGORIES = ("syscall", "copy", "proto", "completion", "skb", "mempool", "qdisc", "tx", "irq", "rx", "sched")


#: `--sndbuf`: the send buffer per connection (bytes; 0 keeps the default, `host.kernel.tcp.sndbuf_bytes`).
SNDBUF = 0


def config(scheme: str, preset: str, rtt: str, buffer: int, writes: int, drop: float = 0.0) -> Dict[str, Any]:
    host: Dict[str, Any] = {"tx_scheme": scheme, "app": {"tcp_send": {"writes": writes, "buffer_bytes": buffer}}}
    if SNDBUF:
        # Full send buffers hold a page buffer and an skb per segment (and one
        # per clone in flight): the pools grow with them (see the config check).
        pool = max(8192, 1 << (2 * SNDBUF // 2304 + 2048).bit_length())
        host["kernel"] = {"tcp": {"sndbuf_bytes": SNDBUF}, "skbs": pool}
        host["pmd"] = {"mempool": {"mbufs": pool}}
    return {
        "app": "tcp-send", "stack": "kernel", "preset": preset, "link": {"propagation": "1us"},
        "sim": {"duration": "1us", "warmup": "0ps", "drain": "10s"},
        "host": host,
        "loadgen": {"tcp": {"rtt": rtt, "drop": drop}},
    }


def measure(scheme: str, preset: str, rtt: str, buffer: int, writes: int, drop: float = 0.0) -> Dict[str, Any]:
    r = hostsim.simulate(config(scheme, preset, rtt, buffer, writes, drop)).to_dict()
    t, s = r["kernel"]["tcp_send"], r["loadgen"]["tcp"]
    end = t["complete_ps"]
    cpp, packets = r["cpu"]["cycles_per_packet"], r["cpu"]["packets"]
    segs = max(t["transmissions"], 1)
    per_seg = {k: cpp.get(k, 0.0) * packets / segs for k in CATEGORIES}
    busy = sum(cpp.get(k, 0.0) for k in cpp if k not in ("total", "idle")) * packets
    freq = r["config"]["host"]["cpu"]["freq_hz"]
    dram, pcie, traffic = r["mem"]["dram"], r["nics"][0]["pcie"], r["mem"]["traffic"]
    card = r["nics"][0]["memory"] or {"bytes_read": 0, "bytes_written": 0}
    return {
        "goodput_gbps": t["bytes_acked"] * 8 / (end / 1e12) / 1e9 if end else 0.0,
        "busy": busy / freq / (end / 1e12) if end else 0.0,
        "per_seg": per_seg,
        "cycles_per_seg": sum(per_seg.values()),
        "dram": {a: (dram[f"bytes_read_{a}"], dram[f"bytes_written_{a}"]) for a in ("core", "device", "engine")},
        "traffic": {a: (traffic[a]["read_bytes"], traffic[a]["write_bytes"]) for a in ("core", "nic", "engine")},
        "card": (card["bytes_read"], card["bytes_written"]),
        "pcie": (pcie["down_bytes"], pcie["up_bytes"]),
        "write_us": t["write_time"]["mean_ps"] / 1e6,
        "hold_us": t["hold_time"]["mean_ps"] / 1e6,
        "hold_p99_us": t["hold_time"]["p99_ps"] / 1e6,
        "bytes": t["bytes_acked"],
        "retransmissions": t["retransmissions"],
        "qdisc_drops": r["kernel"]["qdisc_drops"],
        "end_ms": end / 1e9,
        "cycles_per_byte": busy / max(t["bytes_acked"], 1),
    }


def table(preset: str, rtt: str, buffer: int, writes: int, drop: float) -> None:
    rows = {s: measure(s, preset, rtt, buffer, writes, drop) for s in SCHEMES}
    print(f"# {preset}, one core, one connection, {writes} writes of {buffer:,} B, rtt {rtt}, receiver drop {drop}")
    print(f"{'':28}" + "".join(f"{s:>14}" for s in SCHEMES))
    line = lambda name, f: print(f"{name:28}" + "".join(f"{f(rows[s]):>14}" for s in SCHEMES))
    line("goodput (Gb/s)", lambda m: f"{m['goodput_gbps']:.2f}")
    line("core busy (%)", lambda m: f"{100 * m['busy']:.1f}")
    line("cycles per segment", lambda m: f"{m['cycles_per_seg']:.0f}")
    for k in CATEGORIES:
        line(f"  {k}", lambda m, k=k: f"{m['per_seg'][k]:.0f}")
    for a, name in (("core", "cores"), ("nic", "NIC"), ("engine", "copy engine")):
        line(f"memory read by {name} (B)", lambda m, a=a: f"{m['traffic'][a][0]:,}")
        line(f"memory written by {name} (B)", lambda m, a=a: f"{m['traffic'][a][1]:,}")
    line("memory bandwidth (GB/s)", lambda m: f"{sum(sum(v) for v in m['traffic'].values()) / (m['end_ms'] * 1e6):.2f}")
    for a, name in (("core", "cores"), ("device", "NIC"), ("engine", "copy engine")):
        line(f"DRAM read by {name} (B)", lambda m, a=a: f"{m['dram'][a][0]:,}")
        line(f"DRAM written by {name} (B)", lambda m, a=a: f"{m['dram'][a][1]:,}")
    line("NIC memory read (B)", lambda m: f"{m['card'][0]:,}")
    line("NIC memory written (B)", lambda m: f"{m['card'][1]:,}")
    line("PCIe to NIC (B)", lambda m: f"{m['pcie'][0]:,}")
    line("PCIe from NIC (B)", lambda m: f"{m['pcie'][1]:,}")
    line("write() mean (us)", lambda m: f"{m['write_us']:.1f}")
    line("buffer held mean (us)", lambda m: f"{m['hold_us']:.1f}")
    line("buffer held p99 (us)", lambda m: f"{m['hold_p99_us']:.1f}")
    line("retransmissions", lambda m: f"{m['retransmissions']}")
    line("qdisc drops", lambda m: f"{m['qdisc_drops']}")
    line("last byte acked (ms)", lambda m: f"{m['end_ms']:.3f}")


def main(argv: List[str] = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="xeon-6226r-fpga")
    ap.add_argument("--rtt", default="10us")
    ap.add_argument("--buffer", default="3.6MB")
    ap.add_argument("--writes", type=int, default=8)
    ap.add_argument("--sndbuf", default="", help="the send buffer per connection (default: host.kernel.tcp.sndbuf_bytes, 4 MiB)")
    ap.add_argument("--drop", type=float, default=0.0, help="the receiver's drop probability for the table")
    ap.add_argument("--table", default="yes", choices=("yes", "no"))
    ap.add_argument("--loss", type=float, default=0.0,
                    help="a drop probability: what retransmissions cost each scheme in host memory and NIC memory reads")
    ap.add_argument("--rtts", default="", help="comma-separated RTTs: buffer holding time per scheme")
    ap.add_argument("--buffers", default="", help="comma-separated buffer sizes: the write() breakdown per scheme")
    a = ap.parse_args(argv)
    buffer = parse_size_bytes(a.buffer, "--buffer")
    global SNDBUF
    SNDBUF = parse_size_bytes(a.sndbuf, "--sndbuf") if a.sndbuf else 0
    if a.table == "yes":
        table(a.preset, a.rtt, buffer, a.writes, a.drop)
    if a.rtts:
        print(f"# buffer holding time (mean us) against the round trip, {a.writes} writes of {buffer:,} B, "
              f"send buffer {SNDBUF or 'default'}")
        print(f"{'rtt':>8}" + "".join(f"{s:>14}" for s in SCHEMES))
        for rtt in a.rtts.split(","):
            m = {s: measure(s, a.preset, rtt, buffer, a.writes) for s in SCHEMES}
            print(f"{rtt:>8}" + "".join(f"{m[s]['hold_us']:>14.1f}" for s in SCHEMES))
    if a.loss:
        loss(a, buffer)
    if a.buffers:
        print(f"# write() breakdown by buffer size ({a.writes} writes, rtt {a.rtt}): copy share of the core's cycles, "
              "cycles per byte, mean write() time")
        print(f"{'buffer':>10}" + "".join(f"{s[:4] + ' copy%':>16}{s[:4] + ' cyc/B':>14}{s[:4] + ' write us':>16}" for s in SCHEMES))
        for b in a.buffers.split(","):
            n = parse_size_bytes(b, "--buffers")
            m = {s: measure(s, a.preset, a.rtt, n, a.writes) for s in SCHEMES}
            cells = ""
            for s in SCHEMES:
                x = m[s]
                share = x["per_seg"]["copy"] / x["cycles_per_seg"] if x["cycles_per_seg"] else 0.0
                cells += f"{100 * share:>16.1f}{x['cycles_per_byte']:>14.2f}{x['write_us']:>16.1f}"
            print(f"{b:>10}" + cells)


def loss(a: argparse.Namespace, buffer: int) -> None:
    """Each scheme without loss and with `--loss`: the retransmissions, and
    the extra bytes the NIC read from host memory and from its own memory."""
    print(f"# retransmissions and what they read, {a.writes} writes of {buffer:,} B, rtt {a.rtt}, receiver drop {a.loss}")
    print(f"{'scheme':>10}{'retransmissions':>17}{'extra host reads by NIC (B)':>30}{'per retransmission':>20}"
          f"{'extra NIC-memory reads (B)':>28}{'extra engine/core reads (B)':>29}")
    for s in SCHEMES:
        clean = measure(s, a.preset, a.rtt, buffer, a.writes)
        lossy = measure(s, a.preset, a.rtt, buffer, a.writes, a.loss)
        n = lossy["retransmissions"] - clean["retransmissions"]
        host = lossy["traffic"]["nic"][0] - clean["traffic"]["nic"][0]
        card = lossy["card"][0] - clean["card"][0]
        other = sum(lossy["traffic"][x][0] - clean["traffic"][x][0] for x in ("core", "engine"))
        print(f"{s:>10}{n:>17}{host:>30,}{host / max(n, 1):>20.0f}{card:>28,}{other:>29,}")


if __name__ == "__main__":
    main()
