#!/usr/bin/env python3
"""RX burst 32 against 1024 on `a72-quad` with DCA on (issue 15): where do
the LLC's lines go when a whole burst is DMA-written into it at once?

    .venv/bin/python scripts/burst_writebacks.py [--sizes 64,1518] [--duration 2ms]

Both bursts run with the same rings (2048 RX and TX descriptors, 16384
mbufs: a burst of 1024 needs rings that large), testpmd macswap offered at
line rate. Per run: the throughput, the LLC's write-backs to DRAM
(`mem.llc.writebacks`), the L2 victims written into the LLC, the DCA leaks
(device-written lines evicted before a core read them) and the DRAM bytes
written for the device and for the cores.
"""

from __future__ import annotations

import argparse

import hostsim

COLUMNS = ("burst", "bytes", "Mpps", "llc_writebacks", "victim_fills", "dca_leaks", "dram_wr_dev_MB", "dram_wr_core_MB")


def point(burst: int, size: int, duration: str) -> dict:
    return {
        "app": "testpmd",
        "preset": "a72-quad",
        "sim": {"duration": duration, "warmup": "500us"},
        "loadgen": {"size": size, "rate": "100%"},
        "host": {
            "mem": {"llc": {"dca": {"enabled": True}}},
            "pmd": {"burst": burst, "rxd": 2048, "txd": 2048, "mempool": {"mbufs": 16384}},
        },
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="64,1518")
    ap.add_argument("--duration", default="2ms")
    a = ap.parse_args()
    print("  ".join(f"{c:>15}" for c in COLUMNS))
    for size in (int(s) for s in a.sizes.split(",")):
        for burst in (32, 1024):
            r = hostsim.simulate(point(burst, size, a.duration))
            m = r["mem"]
            row = (burst, size, f"{r['loadgen']['achieved_pps'] / 1e6:.3f}", m["llc"]["writebacks"], m["llc"]["victim_fills"],
                   m["dca_leaks"], f"{m['dram']['bytes_written_device'] / 1e6:.2f}", f"{m['dram']['bytes_written_core'] / 1e6:.2f}")
            print("  ".join(f"{v:>15}" for v in row))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
