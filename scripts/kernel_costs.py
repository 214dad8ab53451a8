#!/usr/bin/env python3
"""The kernel stack's costs against published measurements (issue 15,
sourced costs): the per-packet cycle composition of kernel IP forwarding on
Emmerich et al.'s machine next to their Table II (Linux 3.7), and the MSB
of udp-echo and memcached on the kernel stack with the core time per
request next to published single-core memcached figures.

    .venv/bin/python scripts/kernel_costs.py
    .venv/bin/python scripts/kernel_costs.py --presets altra

The costs are derived from Linux 4.12-5.4 measurements
(docs/reference/host-costs.md §6); none of the comparisons was used to
choose them.
"""

from __future__ import annotations

import argparse

import hostsim

#: Emmerich et al. 2015, Table II, Linux IP forwarding, cycles per packet
#: (params.md §7b): RX, TX, memory management, skb, processing.
TABLE_II = {"RX": 453, "TX": 463, "memory": 101, "skb": 292, "processing": 757}

#: Linux 4.18 forwarding with one route on one core (XDP paper's raw data,
#: tohojo/xdp-paper benchmarks/bench04_fwd.org; host-costs.md §7.1a).
LINUX_418_PPS = 1_739_672

#: The model's categories in Table II's columns.
COLUMNS = {
    "RX": ("irq", "rx"),
    "TX": ("tx", "qdisc"),
    "memory": ("mempool",),
    "skb": ("skb",),
    "processing": ("proto", "app"),
}


def forwarding() -> None:
    preset = "xeon-e3-1230v2"
    cfg = {"app": "ipfwd", "stack": "kernel", "preset": preset, "loadgen": {"size": 64}}
    m = hostsim.msb(cfg).msb
    # The composition at 95 % of the MSB: loaded, no drops.
    r = hostsim.simulate(cfg, overrides={"loadgen.rate": f"{0.95 * m.pps:.0f}pps"})
    cpp = r.cpu.cycles_per_packet
    print(f"kernel IP forwarding, {preset}, 64 B: MSB {m.pps / 1e6:.3f} Mpps; cycles per packet at "
          f"{0.95 * m.pps / 1e6:.3f} Mpps against Emmerich et al. Table II (Linux 3.7)")
    print(f"{'column':<11} {'model':>8} {'Table II':>9} {'model / II':>11}   model categories")
    total_m = total_t = 0.0
    for col, cats in COLUMNS.items():
        v = sum(cpp[c] for c in cats)
        total_m += v
        total_t += TABLE_II[col]
        print(f"{col:<11} {v:>8.1f} {TABLE_II[col]:>9} {v / TABLE_II[col]:>11.2f}   {' + '.join(cats)}")
    print(f"{'total':<11} {total_m:>8.1f} {total_t:>9.0f} {total_m / total_t:>11.2f}")
    print(f"Linux 4.18, one route, one 3.6 GHz E5-1650 v4 core: {LINUX_418_PPS / 1e6:.3f} Mpps = "
          f"{3.6e9 / LINUX_418_PPS:.0f} cycles per packet (model / 4.18: {total_m / (3.6e9 / LINUX_418_PPS):.2f}; "
          "docs/reference/host-costs.md §7.1a)")
    print()


def requests(presets: list[str]) -> None:
    print("kernel stack, one core, 64 B (memcached: its request mix): MSB and core time per request")
    print("published, memcached on Linux UDP, one core: 154.0 K req/s = 6.5 us (BMC, NSDI'21; "
          "docs/reference/host-costs.md §1b); 114-175 K req/s per core (Seastar wiki)")
    print(f"{'preset':<16} {'app':<10} {'MSB Mpps':>9} {'us per request':>15}")
    for preset in presets:
        for app in ("udp-echo", "memcached"):
            m = hostsim.msb({"app": app, "stack": "kernel", "preset": preset, "loadgen": {"size": 64}}).msb
            print(f"{preset:<16} {app:<10} {m.pps / 1e6:>9.3f} {1e6 / m.pps:>15.2f}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--presets", default="altra,xeon-e3-1230v2")
    ap.add_argument("--no-forwarding", action="store_true", help="skip the Table II comparison")
    a = ap.parse_args()
    if not a.no_forwarding:
        forwarding()
    requests(a.presets.split(","))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
