#!/usr/bin/env python3
"""Host instructions per simulated packet, for rows of the core's speed
bench (`make bench-core`), counted by valgrind's callgrind.

    .venv/bin/python scripts/bench_ir.py "i9 rx_sharing arbitration" "altra testpmd"

Wall-clock speed on a shared machine moves by a factor of two from run to
run with the same binary; the count of instructions the simulator executes
does not move at all. It does not see branch mispredictions or loads that
wait on the host's caches or on a store, though: a change that removes
those can run faster with more instructions (stop 53's set scans, 6,542 ->
7,010 instructions per packet and 11 % faster). Compare wall-clock speed
in alternating runs with scripts/bench_ab.py as well. Each argument selects the bench rows whose name contains it (as
`HOSTSIM_BENCH_ONLY`). Needs valgrind (`apt-get install valgrind`); a row
runs about 50 times slower than natively.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def bench_binary() -> str:
    """Builds the speed bench and returns its executable."""
    out = subprocess.run(["cargo", "bench", "-q", "-p", "hostsim-core", "--bench", "speed", "--no-run", "--message-format=json"],
                         cwd=ROOT, check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        msg = json.loads(line)
        if msg.get("reason") == "compiler-artifact" and msg.get("target", {}).get("name") == "speed" and msg.get("executable"):
            return msg["executable"]
    raise SystemExit("bench_ir: cargo built no `speed` bench executable")


def count(binary: str, only: str) -> tuple:
    """(row line, instructions) for each bench row matching `only`."""
    with tempfile.TemporaryDirectory() as tmp:
        run = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={tmp}/out", binary],
                             env={**os.environ, "HOSTSIM_BENCH_ONLY": only}, capture_output=True, text=True)
    if run.returncode != 0:
        raise SystemExit(f"bench_ir: valgrind failed:\n{run.stderr[-2000:]}")
    refs = re.search(r"I\s+refs:\s+([\d,]+)", run.stderr)
    rows = [l for l in run.stdout.splitlines() if "frames sent" in l]
    if not refs or not rows:
        raise SystemExit(f"bench_ir: no row matches {only!r}")
    return rows, int(refs.group(1).replace(",", ""))


def main() -> int:
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(sys.argv) > 1 else 2
    if not shutil.which("valgrind"):
        raise SystemExit("bench_ir: valgrind is not installed (apt-get install valgrind)")
    binary = bench_binary()
    print(f"{'row':<60} {'packets':>10} {'instructions':>15} {'per packet':>11}")
    for only in sys.argv[1:]:
        rows, instructions = count(binary, only)
        packets = sum(int(re.search(r"(\d+) frames sent", r).group(1)) for r in rows)
        name = rows[0].split("  ")[0].strip() if len(rows) == 1 else f"{len(rows)} rows matching {only!r}"
        print(f"{name:<60} {packets:>10} {instructions:>15,} {instructions / packets:>11,.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
