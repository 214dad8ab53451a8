#!/usr/bin/env python3
"""The training runs of the profile-guided build (scripts/setup).

    .venv/bin/python scripts/pgo_train.py

`scripts/setup` first builds the core with LLVM's instrumentation, runs
this script against that build, and builds the core again with the branch
and call counts it recorded, so the compiler lays out and inlines the hot
paths the simulations take. The runs are the standard workloads of
`hostsim bench` (`hostsim.bench.WORKLOADS`: the reflector harness, the
PMD's apps, l2fwd on four cores, the kernel stack, memcached on both
stacks), once each at their bench load and length, plus one short
bandwidth search. The single-queue designs (`host.rx_sharing`) are left
out on purpose: their speed measures how well the profile carries over to
code paths it did not train on.

Training changes how fast the core runs, never what it computes: a
simulation's result does not depend on the build.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))

import hostsim  # noqa: E402
from hostsim.bench import WORKLOADS  # noqa: E402


def main() -> int:
    start = time.monotonic()
    for w in WORKLOADS:
        hostsim.simulate(w.config, w.overrides)
    # One search: its trials start and stop many short simulations.
    hostsim.msb({"app": "reflector", "loadgen": {"size": 64}, "sim": {"duration": "5ms", "warmup": "1ms"},
                 "reflector": {"service_time": "100ns", "queue_frames": 64}})
    print(f"pgo_train: {len(WORKLOADS)} workloads and one search in {time.monotonic() - start:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
