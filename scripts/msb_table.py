#!/usr/bin/env python3
"""MSB of the benchmark suite's standard runs (issue 15's before/after
table): each benchmark at 64, 512 and 1518 B on each preset, with the
benchmarks' default settings, one MSB search per cell.

    .venv/bin/python scripts/msb_table.py                       # altra, altra-gem5, a72-quad
    .venv/bin/python scripts/msb_table.py --presets altra --apps testpmd --sizes 64
    .venv/bin/python scripts/msb_table.py --set host.mem.dram.write_queue.entries=0

Prints one row per cell: preset, app, size, MSB in Mpps and Gb/s (frame
bits). A preset the
installed version does not know is printed as `n/a`, so the same script
runs against an older checkout for the "before" column. `--set KEY=VALUE`
(as `hostsim run --set`, repeatable) gives the column of a default changed
back in the same build.
"""

from __future__ import annotations

import argparse

import hostsim
from hostsim.config import apply_assignments


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--presets", default="altra,altra-gem5,a72-quad")
    ap.add_argument("--apps", default="testpmd,touchfwd,touchdrop,rxptx")
    ap.add_argument("--sizes", default="64,512,1518")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a field override, as `hostsim run --set`")
    a = ap.parse_args()
    print(f"{'preset':<10} {'app':<10} {'size':>5} {'Mpps':>8} {'Gb/s':>7}")
    for preset in a.presets.split(","):
        for app in a.apps.split(","):
            for size in (int(s) for s in a.sizes.split(",")):
                try:
                    cfg = hostsim.Config.from_dict({"app": app, "preset": preset, "loadgen": {"size": size}})
                    m = hostsim.msb(apply_assignments(cfg, a.set)).msb
                    cells = f"{m.pps / 1e6:>8.3f} {m.bps / 1e9:>7.2f}"
                except Exception as e:  # an unknown preset in an older version
                    if "preset" not in str(e):
                        raise
                    cells = f"{'n/a':>8} {'n/a':>7}"
                print(f"{preset:<10} {app:<10} {size:>5} {cells}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
