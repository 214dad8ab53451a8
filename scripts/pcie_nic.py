#!/usr/bin/env python3
"""A PCIe-bound NIC against pcie-bench's closed form (issue 15): a preset's
PCIe link carrying 64 B frames (or `--sizes`) in both directions.

For each size, prints pcie-bench's 82599 + DPDK model on the preset's
`host.pcie` (`pcie::nic_model`: link bytes per packet up and down, and the
packets per second each way the link allows; as published and with the RX
descriptor requests the published code leaves out), then the simulator's
l2fwd forwarding between the preset's two ports in both directions on
`--cores` cores: its MSB (packets per second each way) and, from one trial
at 90 % of the MSB, the PCIe bytes per packet each way and the share of the
link each direction was busy.

    .venv/bin/python scripts/pcie_nic.py                              # xeon-e3-1230v2-x540, 64 B
    .venv/bin/python scripts/pcie_nic.py --sizes 64,128,256 --cores 2
"""

from __future__ import annotations

import argparse
import json

import hostsim
from hostsim import _core


def config(preset: str, size: int, cores: int) -> dict:
    return {"preset": preset, "app": "l2fwd", "host": {"ports": 2, "cores": cores, "queues": 1},
            "loadgen": {"size": size, "traffic": "bidir"}}


def simulated(preset: str, size: int, cores: int) -> dict:
    cfg = config(preset, size, cores)
    pps = hostsim.msb(cfg).msb.pps
    trial = dict(cfg, loadgen=dict(cfg["loadgen"], rate=f"{0.9 * pps:.0f}pps"), sim={"duration": "4ms", "warmup": "1ms"})
    r = hostsim.simulate(trial).to_dict()
    p, n = r["nics"][0]["pcie"], max(r["loadgen"]["rx_packets"], 1)
    return {"pps": pps, "up": p["up_bytes"] / n, "down": p["down_bytes"] / n, "up_util": p["up_util"], "down_util": p["down_util"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="xeon-e3-1230v2-x540")
    ap.add_argument("--sizes", default="64")
    ap.add_argument("--cores", type=int, default=1)
    a = ap.parse_args()
    pcie = json.loads(_core.host_preset(a.preset))["pcie"]
    print(f"{a.preset}: PCIe gen{pcie['gen']} x{pcie['lanes']}, MPS {pcie['mps_bytes']}, MRRS {pcie['mrrs_bytes']}; "
          f"l2fwd between 2 ports, both directions, {a.cores} core(s)")
    print(f"{'size':>5} {'source':<28} {'Mpps each way':>13} {'up B/pkt':>9} {'down B/pkt':>10} {'up util':>8} {'down util':>9}")
    for size in (int(s) for s in a.sizes.split(",")):
        model = json.loads(_core.pcie_nic_model(json.dumps(pcie), size - 4))
        for name in ("published", "described"):
            m = model[name]
            print(f"{size:>5} {'pcie-bench (' + name + ')':<28} {m['pps'] / 1e6:>13.2f} {m['up_bytes']:>9.1f} {m['down_bytes']:>10.1f}")
        s = simulated(a.preset, size, a.cores)
        print(f"{size:>5} {'hostsim (MSB; bytes at 90 %)':<28} {s['pps'] / 1e6:>13.2f} {s['up']:>9.1f} {s['down']:>10.1f} "
              f"{s['up_util'] * 100:>7.1f}% {s['down_util'] * 100:>8.1f}%")


if __name__ == "__main__":
    main()
