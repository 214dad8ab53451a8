#!/usr/bin/env python3
"""The fast fidelity against the full model over random runs: each run at
both fidelities, the full run's loss rate beside the fast run's predicted
one (the sample's own where the run was not sampled).

    .venv/bin/python scripts/fast_agreement.py --seed 1 --runs 60

Runs draw an application and its stack, a preset, a frame size (or IMIX),
a load of 1-120 % of the line rate, 3-12 ms with a 0.2 or 1 ms warm-up
and no drain, as the property test does (tests/python/test_properties.py).
Each line ends with `<<<` where the two differ by more than `--flag`
(2 points by default); the last line sums up the sampled runs.
"""

from __future__ import annotations

import argparse
import json
import random
import time

import hostsim
from hostsim import host


def draw(rng: random.Random) -> dict:
    apps = sorted({"reflector", *host.pmd_apps(), *host.kernel_apps()})
    app = rng.choice(apps)
    stack = "pmd"
    if app in host.kernel_apps() and (app not in host.pmd_apps() or rng.random() < 0.5):
        stack = "kernel"
    size = 1518 if app == "iperf" else rng.choice([64, 128, 512, 1518, "imix"])
    cfg = {"app": app, "stack": stack, "preset": rng.choice(host.host_presets()), "seed": rng.randint(0, 65535),
           "sim": {"duration": f"{rng.randint(3, 12)}ms", "warmup": rng.choice(["200us", "1ms"]), "drain": "0us"},
           "loadgen": {"size": size, "rate": f"{rng.randint(1, 120)}%"}}
    if app == "memcached":
        cfg["loadgen"]["memcached"] = {"keys": rng.randint(10, 500)}
    return cfg


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=1, help="seed of the draw (default 1)")
    ap.add_argument("--runs", type=int, default=60, help="how many runs (default 60)")
    ap.add_argument("--flag", type=float, default=0.02, help="mark differences above this (default 0.02)")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    diffs = []
    for i in range(args.runs):
        cfg = draw(rng)
        t = time.time()
        full = hostsim.simulate(cfg).to_dict()
        fast_cfg = json.loads(json.dumps(cfg))
        fast_cfg["sim"]["fidelity"] = "fast"
        fast = hostsim.simulate(fast_cfg).to_dict()
        wall = time.time() - t
        s = fast["sim"]["sample"]
        lf = full["loadgen"]["loss_rate"]
        ls = s["predicted"]["loss_rate"] if s["sampled"] else fast["loadgen"]["loss_rate"]
        if s["sampled"]:
            diffs.append(abs(lf - ls))
        mark = "  <<<" if abs(lf - ls) > args.flag else ""
        lg = cfg["loadgen"]
        print(f"{i:3d} {cfg['app']:10} {cfg['stack']:6} {cfg['preset']:20} {str(lg['size']):5} {lg['rate']:>5} "
              f"{cfg['sim']['duration']:>5} warm-up {cfg['sim']['warmup']:>5}  full {lf:.4f}  fast {ls:.4f}  "
              f"sampled {str(s['sampled']):5} {wall:5.1f} s{mark}", flush=True)
        if mark:
            print(f"    {json.dumps(cfg)}", flush=True)
    if diffs:
        print(f"{len(diffs)} of {args.runs} runs sampled: loss rates differ by {sum(diffs) / len(diffs) * 100:.2f} points "
              f"on average, {max(diffs) * 100:.2f} at most")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
