#!/usr/bin/env python3
"""A switch against the number of active flows: the forwarding decision's
cycles and the L1/L2/LLC misses per packet as the flow table's working set
outgrows each cache (issue 13). The DPDK vswitch (poll-mode driver, one
core) or Open vSwitch's kernel datapath (`--app ovs`: kernel stack, one
core).

    .venv/bin/python scripts/flow_sweep.py                   # vswitch, OvS-kernel-sized entries
    .venv/bin/python scripts/flow_sweep.py --entry-bytes 128 --key-lines 1
    .venv/bin/python scripts/flow_sweep.py --app ovs         # its own 576 B entries
    .venv/bin/python scripts/flow_sweep.py --app ovs --skew 1   # Zipf popularity (rank r weighs 1/r)

With `--msb` each point also runs the bandwidth test (one way, 64 B; slow
for the kernel stack), otherwise its column is nan. Each point warms up long enough for every flow's upcall (twice their
instructions at the preset's CPI and clock, plus 10 ms) and measures 3 ms
after it.
"""

from __future__ import annotations

import argparse

import hostsim


def point(app: str, flows: int, entry_bytes: int, key_lines: int, rate: str, preset: str, with_msb: bool,
          skew: float = 0.0) -> dict:
    section = "ovs" if app == "ovs" else "flow_table"
    stack = "kernel" if app == "ovs" else "pmd"
    host = hostsim.resolve({"preset": preset, "app": app, "stack": stack})["host"]
    upcall_s = host["app"][section]["upcall_instr"] * host["cpu"]["base_cpi"] / host["cpu"]["freq_hz"]
    # Twice the upcalls' time: frames that arrive while the core is busy
    # with upcalls are dropped, and their flows come back later.
    warm_ms = int(2 * flows * upcall_s * 1e3) + 10
    table = {"entries": max(1 << 16, 1 << (2 * flows - 1).bit_length())}
    if entry_bytes:
        table["entry_bytes"] = entry_bytes
    if key_lines:
        table["key_lines"] = key_lines
    cfg = {
        "preset": preset, "app": app, "stack": stack,
        "host": {"ports": 2, "cores": 1, "app": {section: table}},
        "loadgen": {"size": 64, "rate": rate, "flows": flows, "flow_skew": skew, "traffic": "uni"},
        "sim": {"warmup": f"{warm_ms}ms", "duration": f"{warm_ms + 3}ms"}}
    r = hostsim.simulate(cfg)
    n, m = r["cpu"]["packets"], r["mem"]
    cpp = r["cores"][0]["cycles_per_packet"]
    # The bandwidth test of the same config (its trials warm up at least as long).
    mpps = hostsim.msb(cfg).to_dict()["msb"]["pps"] / 1e6 if with_msb else float("nan")
    return {"flows": flows, "app": cpp["app"], "msb": mpps,
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
    ap.add_argument("--msb", action="store_true", help="run the bandwidth test at each point too")
    ap.add_argument("--skew", type=float, default=0.0, help="Zipf exponent of flow popularity (0: flows in turn)")
    a = ap.parse_args()
    vs = a.app == "vswitch"
    entry_bytes = a.entry_bytes or (576 if vs else 0)
    key_lines = a.key_lines or (3 if vs else 0)
    rate = a.rate or ("4Mpps" if vs else "0.5Mpps")
    print(f"{'flows':>7} {'app cyc/pkt':>11} {'MSB Mpps':>8} {'L1/pkt':>7} {'L2/pkt':>7} {'LLC/pkt':>7} {'upcalls':>7} {'drop':>7} {'warn':>4}")
    for f in (int(x) for x in a.flows.split(",")):
        p = point(a.app, f, entry_bytes, key_lines, rate, a.preset, a.msb, a.skew)
        print(f"{p['flows']:>7} {p['app']:>11.1f} {p['msb']:>8.2f} {p['l1']:>7.2f} {p['l2']:>7.2f} {p['llc']:>7.2f} "
              f"{p['upcalls']:>7} {p['drop']:>7.4f} {p['warnings']:>4}", flush=True)


if __name__ == "__main__":
    main()
