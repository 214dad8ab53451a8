#!/usr/bin/env python3
"""What a core's read of a DCA-written line does to the LLC (issue 15 item 9):
`host.mem.llc.on_core_read = copy` leaves the line in its DCA way, `move`
hands it to the core's L2 and frees the way (non-inclusive LLCs), `migrate`
puts it in the inclusive ways (`dca.held_ways`) and a copy in the L2 (A4's
reading). `--clean-victims fill,drop` also runs each point with the LLC
taking or dropping clean L2 victims (`host.mem.llc.clean_victims`).

    .venv/bin/python scripts/ddio_move.py [--presets altra,i9-7940x-cx5] [--modes copy,move]
        [--sizes 64,1518] [--rxd 1024,4096] [--duration 2ms] [--clean-victims fill]

testpmd macswap (or `--app touchfwd`) on one core, offered at line rate, 16384 mbufs. Per run,
per packet the generator received back: the DCA leaks (device-written lines evicted before a
core read them), the lines moved to an L2, the L2 victims written into the
LLC, the clean ones it dropped, the lines migrated to the inclusive ways, the
LLC's write-backs to DRAM and the DRAM bytes read and written.
`--modes default` runs each preset as it is; `--held-ways N` sets
`host.mem.llc.dca.held_ways` (a device write to a line a core held
allocates in the N lowest ways; 0: in the DCA ways).
"""

from __future__ import annotations

import argparse

import hostsim

COLUMNS = ("preset", "mode", "victims", "bytes", "rxd", "Mpps", "leaks/p", "moves/p", "migr/p", "vfills/p", "drops/p",
           "llc_wb/p", "dram_rd_B/p", "dram_wr_B/p")


def point(app: str, preset: str, mode: str, size: int, rxd: int, duration: str, held_ways: int | None,
          clean_victims: str = "fill") -> dict:
    llc: dict = {"clean_victims": clean_victims}
    if mode != "default":
        llc["on_core_read"] = mode
    if held_ways is not None:
        llc["dca"] = {"held_ways": held_ways}
    return {
        "app": app,
        "preset": preset,
        "sim": {"duration": duration, "warmup": "500us"},
        "loadgen": {"size": size, "rate": "100%"},
        "host": {"mem": {"llc": llc}, "pmd": {"rxd": rxd, "txd": 1024, "mempool": {"mbufs": 16384}}},
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--app", default="testpmd", help="testpmd (macswap: reads the header) or touchfwd (reads every line)")
    ap.add_argument("--presets", default="altra,i9-7940x-cx5")
    ap.add_argument("--modes", default="copy,move")
    ap.add_argument("--sizes", default="64,1518")
    ap.add_argument("--rxd", default="1024,4096")
    ap.add_argument("--duration", default="2ms")
    ap.add_argument("--held-ways", type=int, default=None,
                    help="host.mem.llc.dca.held_ways for every run (default: each preset's)")
    ap.add_argument("--clean-victims", default="fill", help="host.mem.llc.clean_victims values to run: fill, drop or both")
    a = ap.parse_args()
    print("  ".join(f"{c:>12}" for c in COLUMNS))
    for preset in a.presets.split(","):
        for size in (int(s) for s in a.sizes.split(",")):
            for rxd in (int(s) for s in a.rxd.split(",")):
                for mode, victims in ((m, v) for m in a.modes.split(",") for v in a.clean_victims.split(",")):
                    r = hostsim.simulate(point(a.app, preset, mode, size, rxd, a.duration, a.held_ways, victims))
                    m, rx = r["mem"], max(r["loadgen"]["rx_packets"], 1)
                    d = m["dram"]
                    rd = d["bytes_read_core"] + d["bytes_read_device"] + d["bytes_read_engine"]
                    wr = d["bytes_written_core"] + d["bytes_written_device"] + d["bytes_written_engine"]
                    per = lambda v: f"{v / rx:.3f}"  # noqa: E731
                    row = (preset, mode, victims, size, rxd, f"{r['loadgen']['achieved_pps'] / 1e6:.3f}", per(m["dca_leaks"]),
                           per(m["llc"]["moves"]), per(m["llc"]["migrations"]), per(m["llc"]["victim_fills"]),
                           per(m["llc"]["dropped_clean_victims"]), per(m["llc"]["writebacks"]),
                           f"{rd / rx:.1f}", f"{wr / rx:.1f}")
                    print("  ".join(f"{v:>12}" for v in row), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
