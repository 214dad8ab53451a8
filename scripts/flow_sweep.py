#!/usr/bin/env python3
"""vswitch against the number of active flows: the forwarding decision's
cycles and the L1/L2/LLC misses per packet as the flow table's working set
outgrows each cache (issue 13).

    .venv/bin/python scripts/flow_sweep.py                   # OvS-kernel-sized entries
    .venv/bin/python scripts/flow_sweep.py --entry-bytes 128 --key-lines 1

Each point warms up long enough for every flow's upcall (about 6 µs each at
3.3 GHz, plus 10 ms) and measures 3 ms after it.
"""

from __future__ import annotations

import argparse

import hostsim


def point(flows: int, entry_bytes: int, key_lines: int, rate: str, preset: str) -> dict:
    warm_ms = flows * 6 // 1000 + 10
    r = hostsim.simulate({
        "preset": preset, "app": "vswitch",
        "host": {"ports": 2, "cores": 1,
                 "app": {"flow_table": {"entry_bytes": entry_bytes, "key_lines": key_lines,
                                        "entries": max(1 << 16, 1 << (2 * flows - 1).bit_length())}}},
        "loadgen": {"size": 64, "rate": rate, "flows": flows, "traffic": "uni"},
        "sim": {"warmup": f"{warm_ms}ms", "duration": f"{warm_ms + 3}ms"}})
    n, m = r["cpu"]["packets"], r["mem"]
    return {"flows": flows, "app": r["cpu"]["cycles_per_packet"]["app"],
            "l1": m["l1d"]["misses"] / n, "l2": m["l2"]["misses"] / n, "llc": m["llc"]["misses"] / n,
            "upcalls": r["app"]["misses"], "drop": r["loadgen"]["drop_rate"], "warnings": len(r["warnings"])}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--flows", default="1,10,100,1000,2000,20000,60000")
    ap.add_argument("--entry-bytes", type=int, default=576)
    ap.add_argument("--key-lines", type=int, default=3)
    ap.add_argument("--rate", default="4Mpps")
    ap.add_argument("--preset", default="xeon-e3-1230v2")
    a = ap.parse_args()
    print(f"{'flows':>7} {'app cyc/pkt':>11} {'L1/pkt':>7} {'L2/pkt':>7} {'LLC/pkt':>7} {'upcalls':>7} {'drop':>7} {'warn':>4}")
    for f in (int(x) for x in a.flows.split(",")):
        p = point(f, a.entry_bytes, a.key_lines, a.rate, a.preset)
        print(f"{p['flows']:>7} {p['app']:>11.1f} {p['l1']:>7.2f} {p['l2']:>7.2f} {p['llc']:>7.2f} "
              f"{p['upcalls']:>7} {p['drop']:>7.4f} {p['warnings']:>4}", flush=True)


if __name__ == "__main__":
    main()
