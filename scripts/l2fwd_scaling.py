#!/usr/bin/env python3
"""l2fwd on altra at 1 GHz, 80 Mpps offered, one core against four (a queue
each, 64 flows): the forwarded rate, the 4-core / 1-core ratio, and the
mean DRAM wait per line of the 4-core run with the data buses' busy share.
Rings of 256 and of 512 (the default): four rings of 512 buffers outgrow
altra's DCA ways, so device writes leak to DRAM among the cores' accesses
booked ahead of them (issue 15, DRAM served in simulated-time order). The
same set-up as `tests/topology.rs`'s scaling test.

    .venv/bin/python scripts/l2fwd_scaling.py
"""

from __future__ import annotations

import hostsim


def run(cores: int, rxd: int) -> tuple[float, float, float]:
    r = hostsim.simulate({
        "preset": "altra", "app": "l2fwd", "loadgen": {"size": 64, "rate": "80Mpps", "flows": 64},
        "host": {"cpu": {"freq_hz": 1_000_000_000}, "queues": cores, "cores": cores,
                 "nic": {"rx_fifo_bytes": 65536}, "pmd": {"rxd": rxd}},
        "sim": {"duration": "3ms", "warmup": "1ms"}})
    d = r["mem"]["dram"]
    lines = sum(v for k, v in d.items() if k.startswith("bytes_")) / 64
    return r["loadgen"]["achieved_pps"], d["queue_wait_ps"] / max(lines, 1) / 1e3, d["util"]


def main() -> int:
    print(f"{'rxd':>4} {'1 core Mpps':>12} {'4 cores Mpps':>13} {'ratio':>6} {'DRAM wait ns/line':>18} {'bus busy %':>11}")
    for rxd in (256, 512):
        one, four = run(1, rxd), run(4, rxd)
        print(f"{rxd:>4} {one[0] / 1e6:>12.3f} {four[0] / 1e6:>13.3f} {four[0] / one[0]:>6.3f} {four[1]:>18.1f} {four[2] * 100:>11.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
