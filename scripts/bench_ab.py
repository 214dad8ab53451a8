#!/usr/bin/env python3
"""Wall-clock speed of two versions of the core, in alternating runs.

    .venv/bin/python scripts/bench_ab.py REV_A REV_B [--only TEXT] [--runs N]

Builds the core's speed bench (`make bench-core`, without profile guidance)
at each git revision (a commit, a branch, or `WORKTREE` for the files as
they are now), each in a worktree and target directory of its own under
`target/bench-ab/`, then runs the two binaries in turn, A then B, `--runs`
times (default 6), for the bench rows whose name contains `--only` (all
rows if not given). Prints each row's mean and median simulated packets
per wall-second for A and B and B's change in %.

Alternating runs are what make two builds comparable on a shared machine,
whose speed drifts between runs of one binary. `scripts/bench_ir.py` counts
host instructions instead, which do not drift, but it does not see branch
mispredictions or loads waiting on stores: a change that removes those can
run faster with more instructions.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "target" / "bench-ab"


def build(rev: str, name: str) -> str:
    """The speed bench built at `rev` (`WORKTREE`: the files as they are)."""
    if rev == "WORKTREE":
        src = ROOT
    else:
        src = WORK / f"src-{name}"
        if src.exists():
            subprocess.run(["git", "worktree", "remove", "--force", str(src)], cwd=ROOT, check=True, capture_output=True)
        added = subprocess.run(["git", "worktree", "add", "--detach", str(src), rev], cwd=ROOT, capture_output=True, text=True)
        if added.returncode != 0:
            raise SystemExit(f"bench_ab: cannot check out {rev!r} (a commit, a branch or WORKTREE): {added.stderr.strip()}")
    try:
        out = subprocess.run(["cargo", "bench", "-q", "-p", "hostsim-core", "--bench", "speed", "--no-run", "--message-format=json"],
                             cwd=src, env={**os.environ, "CARGO_TARGET_DIR": str(WORK / f"target-{name}")},
                             check=True, capture_output=True, text=True).stdout
    finally:
        if src != ROOT:  # the binary stays in its target directory
            subprocess.run(["git", "worktree", "remove", "--force", str(src)], cwd=ROOT, capture_output=True)
    for line in out.splitlines():
        msg = json.loads(line)
        if msg.get("reason") == "compiler-artifact" and msg.get("target", {}).get("name") == "speed" and msg.get("executable"):
            return msg["executable"]
    raise SystemExit(f"bench_ab: no speed bench built at {rev}")


def run(binary: str, only: str | None) -> dict:
    env = {**os.environ, **({"HOSTSIM_BENCH_ONLY": only} if only else {})}
    out = subprocess.run([binary], env=env, check=True, capture_output=True, text=True).stdout
    rows = {}
    for line in out.splitlines():
        m = re.search(r"([0-9.]+) M simulated packets/s", line)
        if m:
            rows[line.split("  ")[0].strip()] = float(m.group(1))
    return rows


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--only")
    p.add_argument("--runs", type=int, default=6)
    args = p.parse_args()
    if args.runs < 1:
        raise SystemExit("bench_ab: --runs must be at least 1")
    WORK.mkdir(parents=True, exist_ok=True)
    bins = {"A": build(args.a, "a"), "B": build(args.b, "b")}
    got: dict = {"A": {}, "B": {}}
    for _ in range(args.runs):
        for k in ("A", "B"):
            for row, v in run(bins[k], args.only).items():
                got[k].setdefault(row, []).append(v)
    if not got["A"]:
        raise SystemExit(f"bench_ab: no bench row matches {args.only!r}")
    print(f"A = {args.a}, B = {args.b}, {args.runs} alternating runs; M simulated packets per wall-second")
    print(f"{'row':<46} {'A mean':>7} {'A med':>7} {'B mean':>7} {'B med':>7} {'B vs A':>7}")
    for row, a in got["A"].items():
        b = got["B"].get(row, [])
        if not b:
            continue
        ma, mb = statistics.mean(a), statistics.mean(b)
        print(f"{row[:46]:<46} {ma:>7.3f} {statistics.median(a):>7.3f} {mb:>7.3f} {statistics.median(b):>7.3f} "
              f"{(mb / ma - 1) * 100:>+6.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
