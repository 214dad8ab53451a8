#!/usr/bin/env python3
"""A switch against the number of active flows: the forwarding decision's
cycles and the L1/L2/LLC misses per packet as the flow table's working set
outgrows each cache (issue 13). The DPDK vswitch (poll-mode driver, one
core) or Open vSwitch's kernel datapath (`--app ovs`: kernel stack, a core
per port).

    .venv/bin/python scripts/flow_sweep.py                   # vswitch, OvS-kernel-sized entries
    .venv/bin/python scripts/flow_sweep.py --entry-bytes 128 --key-lines 1
    .venv/bin/python scripts/flow_sweep.py --app ovs         # its own 576 B entries

Each point warms up long enough for every flow's upcall (its instructions
at the preset's CPI and clock, plus 10 ms) and measures 3 ms after it.
"""

from __future__ import annotations

import argparse

import hostsim


def point(app: str, flows: int, entry_bytes: int, key_lines: int, rate: str, preset: str) -> dict:
    section = "ovs" if app == "ovs" else "flow_table"
    host = hostsim.resolve({"preset": preset, "app": app})["host"]
    upcall_s = host["app"][section]["upcall_instr"] * host["cpu"]["base_cpi"] / host["cpu"]["freq_hz"]
    warm_ms = int(flows * upcall_s * 1e3) + 10
    table = {"entries": max(1 << 16, 1 << (2 * flows - 1).bit_length())}
    if entry_bytes:
        table["entry_bytes"] = entry_bytes
    if key_lines:
        table["key_lines"] = key_lines
    cfg = {
        "preset": preset, "app": app,
        # The kernel stack serves a queue pair per core: one core per port.
        "host": {"ports": 2, "cores": 2 if app == "ovs" else 1, "app": {section: table}},
        "loadgen": {"size": 64, "rate": rate, "flows": flows, "traffic": "uni"},
        "sim": {"warmup": f"{warm_ms}ms", "duration": f"{warm_ms + 3}ms"}}
    if app == "ovs":
        cfg["stack"] = "kernel"
    r = hostsim.simulate(cfg)
    n, m = r["cpu"]["packets"], r["mem"]
    return {"flows": flows, "app": r["cores"][0]["cycles_per_packet"]["app"],
            "l1": m["l1d"]["misses"] / n, "l2": m["l2"]["misses"] / n, "llc": m["llc"]["misses"] / n,
            "upcalls": r["app"]["misses"], "drop": r["loadgen"]["drop_rate"], "warnings": len(r["warnings"])}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--app", choices=("vswitch", "ovs"), default="vswitch")
    ap.add_argument("--flows", default="1,10,100,1000,2000,20000,60000")
    ap.add_argument("--entry-bytes", type=int, default=None, help="default: 576 (vswitch), the preset's (ovs)")
    ap.add_argument("--key-lines", type=int, default=None, help="default: 3 (vswitch), the preset's (ovs)")
    ap.add_argument("--rate", default=None, help="default: 4Mpps (vswitch), 0.5Mpps (ovs)")
    ap.add_argument("--preset", default="xeon-e3-1230v2")
    a = ap.parse_args()
    vs = a.app == "vswitch"
    entry_bytes = a.entry_bytes or (576 if vs else 0)
    key_lines = a.key_lines or (3 if vs else 0)
    rate = a.rate or ("4Mpps" if vs else "0.5Mpps")
    print(f"{'flows':>7} {'app cyc/pkt':>11} {'L1/pkt':>7} {'L2/pkt':>7} {'LLC/pkt':>7} {'upcalls':>7} {'drop':>7} {'warn':>4}")
    for f in (int(x) for x in a.flows.split(",")):
        p = point(a.app, f, entry_bytes, key_lines, rate, a.preset)
        print(f"{p['flows']:>7} {p['app']:>11.1f} {p['l1']:>7.2f} {p['l2']:>7.2f} {p['llc']:>7.2f} "
              f"{p['upcalls']:>7} {p['drop']:>7.4f} {p['warnings']:>4}", flush=True)


if __name__ == "__main__":
    main()
