#!/usr/bin/env python3
"""The forwarding systems on a PC (issue 13): for each of Linux IP
forwarding, the Linux bridge, Open vSwitch's kernel datapath, the DPDK
vswitch, l3fwd and l2fwd forwarding 64 B frames between the two ports of a
preset, the MSB one way and both ways, the drops by class at line rate
(the bandwidth test's first trial), the core's cycles per packet split as
Table II of Emmerich et al. 2015 (RX, TX, memory, skb, the forwarding
decision), and the one-way MSB against the core clock.

    .venv/bin/python scripts/forwarding.py                         # every system, every table
    .venv/bin/python scripts/forwarding.py --systems ipfwd,l2fwd --freqs 1.6,3.3
    .venv/bin/python scripts/forwarding.py --systems l2fwd --freqs '' --table no --sizes 64-128 --size-traffic bidir

Every system runs on one core serving both ports (the kernel stack's
softirq polls a NAPI context per queue pair). The split is taken at 90 % of
the one-way MSB.
"""

from __future__ import annotations

import argparse
from typing import Any, Dict

import hostsim
from hostsim.studies.systems import KERNEL_SYSTEMS, SYSTEMS, TABLE_II  # Table II: params.md §7b

KERNEL = tuple(KERNEL_SYSTEMS)


# Set from the command line: the preset with or without DCA, the FCS stripped or kept.
OPTIONS = {"dca": True, "keep_crc": False}


def config(system: str, preset: str, traffic: str, freq: str = "", size: int = 64) -> Dict[str, Any]:
    kernel = system in KERNEL
    host: Dict[str, Any] = {"ports": 2, "cores": 1}
    if freq:
        host["cpu"] = {"freq": freq}
    if not OPTIONS["dca"]:
        host["mem"] = {"llc": {"dca": {"enabled": False}}}
    if OPTIONS["keep_crc"]:
        host["nic"] = {"keep_crc": True}
    cfg: Dict[str, Any] = {"preset": preset, "app": system, "host": host,
                           "loadgen": {"size": size, "traffic": traffic}}
    if kernel:
        cfg["stack"] = "kernel"
    return cfg


def msb(cfg: Dict[str, Any]) -> Dict[str, Any]:
    return hostsim.msb(cfg).to_dict()["msb"]


def at(cfg: Dict[str, Any], pps: float) -> Any:
    c = dict(cfg, loadgen=dict(cfg["loadgen"], rate=f"{pps:.0f}pps"), sim={"duration": "6ms", "warmup": "3ms"})
    return hostsim.simulate(c)


def drops(m: Dict[str, Any]) -> str:
    """The drops by class of the bandwidth test's first trial, at line rate."""
    top = max(m["curve"], key=lambda p: p["offered_pps"])
    d = {k: v for k, v in top.get("drops", {}).items() if v}
    return " ".join(f"{k} {v}" for k, v in d.items()) or "none"


def split(r: Any) -> tuple:
    c = r["cores"][0]["cycles_per_packet"]
    return (c["irq"] + c["rx"], c["qdisc"] + c["tx"], c["mempool"], c["skb"], c["proto"] + c["app"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--systems", default=",".join(SYSTEMS))
    ap.add_argument("--preset", default="xeon-e3-1230v2")
    ap.add_argument("--freqs", default="1.6,2.0,2.4,2.8,3.3", help="GHz, for the clock sweep ('' to skip)")
    ap.add_argument("--table", choices=("yes", "no"), default="yes", help="the MSB, drops and split table")
    ap.add_argument("--sizes", default="", help="frame sizes for an MSB curve, e.g. 64-128 or 64,65,128")
    ap.add_argument("--size-traffic", choices=("uni", "bidir"), default="uni", help="the size curve's directions")
    ap.add_argument("--dca", choices=("on", "off"), default="on",
                    help="the preset's DCA (off: device writes go to DRAM, mem.llc.dca.enabled=false)")
    ap.add_argument("--keep-crc", action="store_true",
                    help="the NIC writes the FCS into the buffer too (nic.keep_crc; DPDK 2.x examples' hw_strip_crc = 0)")
    a = ap.parse_args()
    OPTIONS["dca"] = a.dca == "on"
    OPTIONS["keep_crc"] = a.keep_crc
    systems = [s for s in a.systems.split(",") if s]
    if a.table == "yes":
        table(systems, a.preset)
    freqs = [f for f in a.freqs.split(",") if f]
    if freqs:
        print()
        print(f"{'system':>8} " + " ".join(f"{f + ' GHz':>9}" for f in freqs) + "   (one-way MSB, Mpps)")
        for s in systems:
            row = [msb(config(s, a.preset, "uni", f"{f}GHz"))["pps"] / 1e6 for f in freqs]
            print(f"{s:>8} " + " ".join(f"{x:>9.2f}" for x in row), flush=True)
    if a.sizes:
        lo, _, hi = a.sizes.partition("-")
        sizes = list(range(int(lo), int(hi) + 1)) if hi else [int(x) for x in a.sizes.split(",")]
        print()
        print(f"{'size B':>6} " + " ".join(f"{s:>8}" for s in systems) + f"   ({a.size_traffic} MSB, Mpps; line rate)")
        for size in sizes:
            row = [msb(config(s, a.preset, a.size_traffic, size=size)) for s in systems]
            line = row[0]["line_rate_pps"] / 1e6
            print(f"{size:>6} " + " ".join(f"{m['pps'] / 1e6:>8.3f}" for m in row) + f"   {line:.3f}", flush=True)


def table(systems: list, preset: str) -> None:
    print(f"{'system':>8} {'uni Mpps':>8} {'bidir Mpps':>10}  {'drops at line rate (uni / bidir)':<36} "
          f"cycles/pkt RX / TX / mem / skb / decision  (Table II)")
    for s in systems:
        uni, bi = msb(config(s, preset, "uni")), msb(config(s, preset, "bidir"))
        below = at(config(s, preset, "uni"), 0.9 * uni["pps"])
        sp = " / ".join(f"{x:.0f}" for x in split(below))
        ref = " / ".join(str(x) for x in TABLE_II[s]) if s in TABLE_II else "-"
        d = f"{drops(uni)} / {drops(bi)}"
        print(f"{s:>8} {uni['pps'] / 1e6:>8.2f} {bi['pps'] / 1e6:>10.2f}  {d:<36} {sp:<40} ({ref})", flush=True)


if __name__ == "__main__":
    main()
