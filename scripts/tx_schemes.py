#!/usr/bin/env python3
"""A TCP sender's transmit schemes (issue 14): for each of `copy` and
`zerocopy` (`host.tx_scheme`; `ioat` and `nicmem` are not modelled yet), one
core of a preset writes buffers over TCP to the load generator's receiver
at a round-trip time, and the script prints side by side: goodput, the
core's busy share and cycles per segment by category, host DRAM bytes by
who moved them (cores, the NIC), PCIe bytes each way, and the time inside
`write()` and the time each buffer was held.

    .venv/bin/python scripts/tx_schemes.py                    # the table
    .venv/bin/python scripts/tx_schemes.py --rtts 10us,100us,1ms,10ms --table no
    .venv/bin/python scripts/tx_schemes.py --buffers 4KB,64KB,1MB,3.6MB --table no

The workload is scaled: `--writes` buffers of `--buffer` bytes on one
connection (the study writes 1125 buffers of 3.6 MB, 4.06 GB); every
write completes (the run lasts until the last byte is acknowledged).
"""

from __future__ import annotations

import argparse
from typing import Any, Dict, List

import hostsim
from hostsim.units import parse_size_bytes

SCHEMES = ("copy", "zerocopy")
CATEGORIES = ("syscall", "copy", "proto", "skb", "mempool", "qdisc", "tx", "irq", "rx", "sched")


def config(scheme: str, preset: str, rtt: str, buffer: int, writes: int) -> Dict[str, Any]:
    return {
        "app": "tcp-send", "stack": "kernel", "preset": preset, "link": {"propagation": "1us"},
        "sim": {"duration": "1us", "warmup": "0ps", "drain": "10s"},
        "host": {"tx_scheme": scheme, "app": {"tcp_send": {"writes": writes, "buffer_bytes": buffer}}},
        "loadgen": {"tcp": {"rtt": rtt}},
    }


def measure(scheme: str, preset: str, rtt: str, buffer: int, writes: int) -> Dict[str, Any]:
    r = hostsim.simulate(config(scheme, preset, rtt, buffer, writes)).to_dict()
    t, s = r["kernel"]["tcp_send"], r["loadgen"]["tcp"]
    end = t["complete_ps"]
    cpp, packets = r["cpu"]["cycles_per_packet"], r["cpu"]["packets"]
    segs = max(t["transmissions"], 1)
    per_seg = {k: cpp.get(k, 0.0) * packets / segs for k in CATEGORIES}
    busy = sum(cpp.get(k, 0.0) for k in cpp if k not in ("total", "idle")) * packets
    freq = r["config"]["host"]["cpu"]["freq_hz"]
    dram, pcie = r["mem"]["dram"], r["nics"][0]["pcie"]
    return {
        "goodput_gbps": t["bytes_acked"] * 8 / (end / 1e12) / 1e9 if end else 0.0,
        "busy": busy / freq / (end / 1e12) if end else 0.0,
        "per_seg": per_seg,
        "cycles_per_seg": sum(per_seg.values()),
        "dram": (dram["bytes_read_core"], dram["bytes_written_core"], dram["bytes_read_device"], dram["bytes_written_device"]),
        "pcie": (pcie["down_bytes"], pcie["up_bytes"]),
        "write_us": t["write_time"]["mean_ps"] / 1e6,
        "hold_us": t["hold_time"]["mean_ps"] / 1e6,
        "hold_p99_us": t["hold_time"]["p99_ps"] / 1e6,
        "bytes": t["bytes_acked"],
        "retransmissions": t["retransmissions"],
        "end_ms": end / 1e9,
        "cycles_per_byte": busy / max(t["bytes_acked"], 1),
    }


def table(preset: str, rtt: str, buffer: int, writes: int) -> None:
    rows = {s: measure(s, preset, rtt, buffer, writes) for s in SCHEMES}
    print(f"# {preset}, one core, one connection, {writes} writes of {buffer:,} B, rtt {rtt}")
    print(f"{'':28}" + "".join(f"{s:>14}" for s in SCHEMES))
    line = lambda name, f: print(f"{name:28}" + "".join(f"{f(rows[s]):>14}" for s in SCHEMES))
    line("goodput (Gb/s)", lambda m: f"{m['goodput_gbps']:.2f}")
    line("core busy (%)", lambda m: f"{100 * m['busy']:.1f}")
    line("cycles per segment", lambda m: f"{m['cycles_per_seg']:.0f}")
    for k in CATEGORIES:
        line(f"  {k}", lambda m, k=k: f"{m['per_seg'][k]:.0f}")
    line("DRAM read by cores (B)", lambda m: f"{m['dram'][0]:,}")
    line("DRAM written by cores (B)", lambda m: f"{m['dram'][1]:,}")
    line("DRAM read by NIC (B)", lambda m: f"{m['dram'][2]:,}")
    line("PCIe to NIC (B)", lambda m: f"{m['pcie'][0]:,}")
    line("PCIe from NIC (B)", lambda m: f"{m['pcie'][1]:,}")
    line("write() mean (us)", lambda m: f"{m['write_us']:.1f}")
    line("buffer held mean (us)", lambda m: f"{m['hold_us']:.1f}")
    line("retransmissions", lambda m: f"{m['retransmissions']}")
    line("last byte acked (ms)", lambda m: f"{m['end_ms']:.3f}")


def main(argv: List[str] = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="altra")
    ap.add_argument("--rtt", default="10us")
    ap.add_argument("--buffer", default="3.6MB")
    ap.add_argument("--writes", type=int, default=8)
    ap.add_argument("--table", default="yes", choices=("yes", "no"))
    ap.add_argument("--rtts", default="", help="comma-separated RTTs: buffer holding time per scheme")
    ap.add_argument("--buffers", default="", help="comma-separated buffer sizes: the write() breakdown per scheme")
    a = ap.parse_args(argv)
    buffer = parse_size_bytes(a.buffer, "--buffer")
    if a.table == "yes":
        table(a.preset, a.rtt, buffer, a.writes)
    if a.rtts:
        print(f"# buffer holding time (mean us) against the round trip, {a.writes} writes of {buffer:,} B")
        print(f"{'rtt':>8}" + "".join(f"{s:>14}" for s in SCHEMES))
        for rtt in a.rtts.split(","):
            m = {s: measure(s, a.preset, rtt, buffer, a.writes) for s in SCHEMES}
            print(f"{rtt:>8}" + "".join(f"{m[s]['hold_us']:>14.1f}" for s in SCHEMES))
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


if __name__ == "__main__":
    main()
