#!/usr/bin/env python3
"""In-order against out-of-order cores (issue 15, core models): for each
benchmark, the MSB on a preset with `host.cpu.out_of_order` true (the
preset's) and false, and their ratio, at `--sizes`.

    .venv/bin/python scripts/core_models.py                      # altra, 64 and 1518 B
    .venv/bin/python scripts/core_models.py --preset a72-quad --sizes 64
    .venv/bin/python scripts/core_models.py --apps iperf,l3fwd
"""

from __future__ import annotations

import argparse

import hostsim

#: (app, stack, extra overrides)
BENCHMARKS = [
    ("testpmd", "pmd", {}),
    ("touchfwd", "pmd", {}),
    ("touchdrop", "pmd", {}),
    ("rxptx", "pmd", {"host.app.proc_time": "1us"}),
    ("l2fwd", "pmd", {}),
    ("vswitch", "pmd", {}),
    ("l3fwd", "pmd", {}),
    ("udp-echo", "kernel", {}),
    ("memcached", "pmd", {}),
    ("memcached", "kernel", {}),
    ("ipfwd", "kernel", {}),
    ("iperf", "kernel", {}),
]
# Not here: the Linux bridge and Open vSwitch, which forward only between
# two ports by the stations' addresses (scripts/forwarding.py sets them up).

#: Apps run at one size only: memcached's requests are small, iperf sends full-sized TCP segments.
ONE_SIZE = {"memcached": 64, "iperf": 1518}


def msb(app: str, stack: str, preset: str, size: int, ooo: bool, extra: dict) -> float:
    cfg = {"app": app, "stack": stack, "preset": preset, "loadgen": {"size": size}}
    return hostsim.msb(cfg, overrides={**extra, "host.cpu.out_of_order": ooo}).msb.pps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="altra")
    ap.add_argument("--sizes", default="64,1518")
    ap.add_argument("--apps", help="only these apps, comma-separated (e.g. iperf,l3fwd)")
    a = ap.parse_args()
    only = set(a.apps.split(",")) if a.apps else None
    print(f"{a.preset}: MSB (Mpps, loss <= 1 %) with out-of-order and in-order cores")
    print(f"{'benchmark':<20} {'size':>5} {'OoO Mpps':>9} {'in-order':>9} {'OoO / in-order':>15}")
    for app, stack, extra in BENCHMARKS:
        if only is not None and app not in only:
            continue
        sizes = [ONE_SIZE[app]] if app in ONE_SIZE else [int(s) for s in a.sizes.split(",")]
        for size in sizes:
            o, i = (msb(app, stack, a.preset, size, ooo, extra) for ooo in (True, False))
            name = f"{app} ({stack})"
            print(f"{name:<20} {size:>5} {o / 1e6:>9.3f} {i / 1e6:>9.3f} {o / i:>15.2f}", flush=True)


if __name__ == "__main__":
    main()
