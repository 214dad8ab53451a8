#!/usr/bin/env python3
"""DRAM bandwidth against channel count (issue 15, DRAM banks and rows):
TestPMD with 1518 B frames from a 100 GbE generator on a preset with DCA off,
so every frame is written to DRAM by the NIC and read back for transmit,
for 1, 2, 4, 8 and 16 channels, with the banks model (`mem.dram.model =
banks`) and with plain channels (`channel`). Prints, per row: the MSB
(`hostsim.msb`, 1 % loss), then from one 2 ms trial at the MSB: DRAM bytes
per packet and the DRAM bandwidth at the MSB, the shares of row hits,
misses and conflicts, and the mean wait per line. `--write-queue 0,64`
runs each point without and with the controller's write queue
(`mem.dram.write_queue.entries`).

    .venv/bin/python scripts/dram_channels.py                      # altra
    .venv/bin/python scripts/dram_channels.py --preset i9-7940x-cx5 --map RoCoRaBaCh
    .venv/bin/python scripts/dram_channels.py --channels 1,2 --models banks --write-queue 0,64
"""

from __future__ import annotations

import argparse

import hostsim


def config(preset: str, channels: int, model: str, addr_map: str, write_queue: int = 64) -> dict:
    return {
        "app": "testpmd", "preset": preset,
        "loadgen": {"size": 1518},
        "host": {"mem": {"llc": {"dca": {"enabled": False}},
                         "dram": {"channels": channels, "model": model, "address_map": addr_map,
                                  "write_queue": {"entries": write_queue}}}},
    }


def measure(preset: str, channels: int, model: str, addr_map: str, write_queue: int = 64) -> dict:
    """The MSB, then one trial at it for the DRAM counters."""
    cfg = config(preset, channels, model, addr_map, write_queue)
    pps = hostsim.msb(cfg).msb.pps
    r = hostsim.simulate({**cfg, "loadgen": {"size": 1518, "rate": f"{pps}pps"}, "sim": {"duration": "2ms"}}).to_dict()
    d, lg = r["mem"]["dram"], r["loadgen"]
    moved = sum(d[k] for k in d if k.startswith("bytes_"))
    per_packet = moved / max(lg["rx_packets"], 1)
    rows = d.get("row_hits", 0) + d.get("row_misses", 0) + d.get("row_conflicts", 0)
    share = (lambda k: d[k] / rows * 100) if rows else (lambda k: float("nan"))
    return {
        "mpps": pps / 1e6, "gbps": pps * 1518 * 8 / 1e9,
        "bytes_per_packet": per_packet,
        "gbs": per_packet * pps / 1e9,
        "hit": share("row_hits"), "miss": share("row_misses"), "conflict": share("row_conflicts"),
        "wait_ns": d["queue_wait_ps"] / (moved / 64) / 1e3 if moved else 0.0,
        "switches": d.get("rw_switches", 0) / max(lg["rx_packets"], 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="altra")
    ap.add_argument("--map", default="RoRaBaCoCh", help="mem.dram.address_map for the banks model")
    ap.add_argument("--channels", default="1,2,4,8,16")
    ap.add_argument("--models", default="banks,channel", help="mem.dram.model values to run")
    ap.add_argument("--write-queue", default="64", help="mem.dram.write_queue.entries values to run (64: the default; 0: none)")
    a = ap.parse_args()
    print(f"TestPMD 1518 B MSB (loss <= 1 %), DCA off, {a.preset}, address map {a.map}")
    print(f"{'channels':>8} {'model':>8} {'wq':>4} {'MSB Mpps':>9} {'Gb/s':>6} {'DRAM B/pkt':>11} {'DRAM GB/s':>10} "
          f"{'hit %':>6} {'miss %':>7} {'confl %':>8} {'wait ns':>8} {'rw sw/pkt':>10}")
    for ch in (int(c) for c in a.channels.split(",")):
        for model in a.models.split(","):
            for wq in (int(w) for w in a.write_queue.split(",")):
                m = measure(a.preset, ch, model, a.map, wq)
                print(f"{ch:>8} {model:>8} {wq:>4} {m['mpps']:>9.3f} {m['gbps']:>6.1f} {m['bytes_per_packet']:>11.0f} "
                      f"{m['gbs']:>10.2f} {m['hit']:>6.1f} {m['miss']:>7.1f} {m['conflict']:>8.1f} {m['wait_ns']:>8.1f} "
                      f"{m['switches']:>10.2f}", flush=True)


if __name__ == "__main__":
    main()
