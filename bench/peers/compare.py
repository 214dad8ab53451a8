#!/usr/bin/env python3
"""hostsim and ns-3 side by side on the harness workload (issue 17, item 5).

The workload, the same on both sides: a 100 Gb/s point-to-point link with
a one-way delay of 1 µs; 64 B frames (ns-3: PPP frames of the same length
on the wire, see `ns3_echo.py`) sent at a constant 74.4 Mpps (50 % of
100 GbE line rate) for 10 simulated ms into an echo responder that serves
one frame at a time for a fixed 10 ns and returns it. hostsim runs it as
its generator and reflector (`app = reflector`); ns-3 (the `ns3` package,
`make peer` installs it) runs in a child process. Prints each side's frames
sent and echoed, its wall time and simulated packets per wall-clock second
(frames sent / wall time of the simulation loop), and their ratio.

    .venv/bin/python bench/peers/compare.py [--duration 10ms] [--rate-pps 74.4e6] [--service 10ns]
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import hostsim
from hostsim.units import parse_time_ps

HERE = Path(__file__).resolve().parent


def run_hostsim(pps: float, service: str, duration: str, delay: str) -> dict:
    cfg = {
        "app": "reflector",
        "loadgen": {"size": 64, "rate": f"{pps}pps", "interarrival": "constant"},
        "reflector": {"service": "fixed", "service_time": service},
        "link": {"rate": "100Gbps", "propagation": delay},
        "sim": {"duration": duration, "warmup": "0ps"},
    }
    r = hostsim.simulate(cfg).to_dict()
    return {
        "simulator": "hostsim", "sent": r["loadgen"]["tx_packets"], "echoed": r["loadgen"]["rx_packets"],
        "wall_s": r["sim"]["wall_s"], "packets_per_wall_s": r["sim"]["packets_per_wall_s"],
    }


def run_ns3(pps: float, service: str, duration: str, delay: str) -> dict:
    cmd = [sys.executable, str(HERE / "ns3_echo.py"), "--rate-pps", str(pps), "--service", service,
           "--duration", duration, "--delay", delay]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"ns-3 side failed (is the ns3 package installed? `make peer` installs it):\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    sys.path.insert(0, str(HERE))
    from ns3_echo import workload_args  # imports no ns-3 until it runs

    a = workload_args(__doc__).parse_args()
    parse_time_ps(a.duration, "--duration")
    sides = [run_hostsim(a.rate_pps, a.service, a.duration, a.delay), run_ns3(a.rate_pps, a.service, a.duration, a.delay)]
    print(f"workload: 100 Gb/s link, {a.delay} one-way, 64 B frames at {a.rate_pps / 1e6:g} Mpps constant, "
          f"echo with {a.service} fixed service, {a.duration} simulated")
    print(f"{'simulator':<10} {'sent':>10} {'echoed':>10} {'wall s':>8} {'packets/wall-s':>15}")
    for s in sides:
        print(f"{s['simulator']:<10} {s['sent']:>10} {s['echoed']:>10} {s['wall_s']:>8.3f} {s['packets_per_wall_s']:>15,.0f}")
    print(f"ratio hostsim / ns-3: {sides[0]['packets_per_wall_s'] / sides[1]['packets_per_wall_s']:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
