#!/usr/bin/env python3
"""MSB against the L1I, L1D and L2 sizes (issue 15, instruction side): for
iperf (kernel TCP receive, 1518 B), memcached on the kernel stack and
TestPMD (64 B), one MSB search per size with the other sizes at the
preset's, and the instruction lines missed per packet at the MSB.

    .venv/bin/python scripts/cache_sizes.py                     # altra
    .venv/bin/python scripts/cache_sizes.py --preset xeon-e3-1230v2 --levels l1i

The L1I holds code regions (each path's executed footprint: the driver,
the kernel's receive, recvfrom and sendto paths, memcached's GET); see
`mem/code.rs` and docs/reference/code-footprints.md.
"""

from __future__ import annotations

import argparse

import hostsim

KIB = 1024

#: (name, config) of each workload.
WORKLOADS = [
    ("iperf (kernel)", {"app": "iperf", "stack": "kernel", "loadgen": {"size": 1518, "protocol": "tcp"}}),
    ("memcached (kernel)", {"app": "memcached", "stack": "kernel"}),
    ("testpmd (pmd)", {"app": "testpmd", "loadgen": {"size": 64}}),
]

#: Sizes swept per level (bytes). The L1D and L2 keep their ways; the
#: sizes are powers of two so their set counts stay powers of two.
SIZES = {
    "l1i": [8 * KIB, 16 * KIB, 32 * KIB, 64 * KIB],
    "l1d": [16 * KIB, 32 * KIB, 64 * KIB, 128 * KIB],
    "l2": [256 * KIB, 512 * KIB, 1024 * KIB, 2048 * KIB],
}


def measure(cfg: dict, preset: str, level: str, size: int) -> tuple[float, float]:
    """The MSB (pps), and L1I misses per packet in one 2 ms trial at it."""
    over = {f"host.mem.{level}.size_bytes": size}
    c = {**cfg, "preset": preset}
    pps = hostsim.msb(c, overrides=over).msb.pps
    r = hostsim.simulate(c, overrides={**over, "loadgen.rate": f"{pps:.0f}pps", "sim.duration": "2ms"})
    rx = max(r.loadgen.rx_packets, 1)
    return pps, r.mem.l1i.misses / rx


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="altra")
    ap.add_argument("--levels", default="l1i,l1d,l2")
    ap.add_argument("--apps", default=",".join(n.split()[0] for n, _ in WORKLOADS))
    a = ap.parse_args()
    apps = a.apps.split(",")
    print(f"{a.preset}: MSB (Mpps, loss <= 1 %) and L1I lines missed per packet, one cache level resized at a time")
    print(f"{'workload':<20} {'level':<5} {'size KiB':>8} {'MSB Mpps':>9} {'L1I miss/pkt':>13}")
    for name, cfg in WORKLOADS:
        if name.split()[0] not in apps:
            continue
        for level in a.levels.split(","):
            for size in SIZES[level]:
                pps, imiss = measure(cfg, a.preset, level, size)
                print(f"{name:<20} {level:<5} {size // KIB:>8} {pps / 1e6:>9.3f} {imiss:>13.1f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
