"""The single-queue study's table: the four designs of host.rx_sharing at
1, 2, 3 and 4 cores on i9-7940x-cx5, 64 B, one flow, 100 GbE offered.

    .venv/bin/python scripts/rx_sharing.py [--mode macswap|rxonly] [--duration 2ms]
        [--set host.nic.max_pps=40000000] [--json rows.json]
    .venv/bin/python scripts/rx_sharing.py --cores 4 --duration 5ms --speed 5

Prints one row per point (throughput, cycles per packet by category, L2
misses per packet, median packets per rx_burst and a parent's completions per loop, drops by class, PCIe upstream
utilisation), then each core's figures; a point a design cannot run (three
cores split by index bits) prints its error. With `--speed N`, it prints
instead how fast each design's point at the most cores simulates (frames
sent per wall-second, N runs): the figure issue 12 asks to be at least 1 M.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys

import hostsim
from hostsim import rx_sharing as study
from hostsim.config import parse_assignment


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mode", default="macswap", help="testpmd forwarding mode: macswap (l2fwd-style) or rxonly")
    ap.add_argument("--duration", default="2ms")
    ap.add_argument("--warmup", default="500us")
    ap.add_argument("--cores", default="1,2,3,4")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="any config field")
    ap.add_argument("--json", help="write the rows as JSON")
    ap.add_argument("--speed", type=int, default=0, metavar="N",
                    help="instead of the table, run each sharing design at the largest of --cores N times and "
                         "print its simulated packets per wall-second (issue 12's point: --duration 5ms)")
    a = ap.parse_args()
    overrides = dict(parse_assignment(kv) for kv in a.set)
    if a.speed > 0:
        return speed(a, overrides)
    rows, errors = [], []
    cores = [int(c) for c in a.cores.split(",")]
    for design, n, cfg in study.points(cores, mode=a.mode, duration=a.duration, warmup=a.warmup):
        try:
            r = hostsim.simulate(cfg, overrides)
        except hostsim.ConfigError as e:
            errors.append(f"{design} × {n} cores: {e}")
            continue
        rows.append(study.row(r, design, n))
        for w in r["warnings"]:
            print(f"warning ({design} × {n}): {w}", file=sys.stderr)
    print(study.table(rows))
    for e in errors:
        print(e)
    print()
    for x in rows:
        for c in x["per_core"]:
            cyc = " ".join(f"{k} {v:.1f}" for k, v in c["cycles"].items() if v > 0.05)
            print(f"{x['design']} × {x['cores']}  core {c['core']} {c['role']:9} {c['packets']:>8,} packets  "
                  f"{cyc}  total {c['cycles_total']:.1f}  L2/pkt {c['l2_misses_per_packet']:.2f}  batch {c['median_batch']}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


def speed(a: argparse.Namespace, overrides: dict) -> int:
    """Each design's point at the most cores, `a.speed` runs: frames sent per wall-second."""
    n = max(int(c) for c in a.cores.split(","))
    for design in study.DESIGNS[1:]:
        cfg = study.point(design, n, mode=a.mode, duration=a.duration, warmup=a.warmup)
        sims = [hostsim.simulate(cfg, overrides).sim for _ in range(a.speed)]
        runs = sorted(s.packets_per_wall_s / 1e6 for s in sims)
        print(f"{design:>13} × {n} cores, {a.duration}, {sims[0].packets:,} frames: "
              f"{', '.join(f'{x:.2f}' for x in runs)} M packets/wall-s (median {statistics.median_low(runs):.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
