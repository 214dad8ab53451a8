#!/usr/bin/env python3
"""Standard runs of the host model, for checking that a refactor changes no result.

    scripts/golden.py record FILE     run every standard config, write the results (flattened)
    scripts/golden.py compare FILE    run them again and list every field that differs

FILE may be gzipped (`.gz`). `scripts/golden/current.json.gz` holds the runs
as they are now (`make golden` compares against it); record it again when a
change is meant to alter results, and say why in the commit.
`scripts/golden/pre-redesign.json.gz` holds them as recorded at commit
37e729c, before the host became composable parts (issue 10); up to commit
91de916 they compared identical but for the changes in `EXPLAINED`. Since the
device's counters start one propagation delay after warm-up (when the first
measured frame reaches it), its counters differ from that file by the frames
of that 1 µs.

Each run is one simulation through the Python API with a fixed seed; the
results are flattened to dotted keys (lists by index). Wall-clock fields
(`sim.wall_s`, `sim.packets_per_wall_s`) are left out. `compare` maps a key
of the recorded file to its new name through `RENAMES` (longest prefix
first), so a result whose shape changed is still compared field by field;
recorded keys that no longer exist are listed as missing, new keys are not
reported.
"""

from __future__ import annotations

import gzip
import json
import sys
from typing import Any, Dict, Iterator, List, Tuple

import hostsim

MS = "ms"

#: name -> (config, overrides). Loads sit at or above each run's knee so
#: that drops, the drop classes and back-pressure are exercised.
RUNS: Dict[str, Tuple[Dict[str, Any], Dict[str, Any]]] = {
    "testpmd-64": ({"app": "testpmd", "preset": "altra", "loadgen": {"size": 64, "rate": "35Mpps"}}, {}),
    "testpmd-1518": ({"app": "testpmd", "preset": "altra", "loadgen": {"size": 1518, "rate": "100%"}}, {}),
    "testpmd-io-64": ({"app": "testpmd", "preset": "altra", "loadgen": {"size": 64, "rate": "20Mpps"}},
                      {"host.app.forward_mode": "io"}),
    "testpmd-txonly": ({"app": "testpmd", "preset": "altra", "loadgen": {"size": 64, "rate": "1Mpps"}},
                       {"host.app.forward_mode": "txonly"}),
    "touchfwd-1518": ({"app": "touchfwd", "preset": "altra", "loadgen": {"size": 1518, "rate": "6Mpps"}}, {}),
    "touchdrop-512": ({"app": "touchdrop", "preset": "altra", "loadgen": {"size": 512, "rate": "15Mpps"}}, {}),
    "rxptx-1us": ({"app": "rxptx", "preset": "altra", "loadgen": {"size": 64, "rate": "2Mpps"}},
                  {"host.app.proc_time": "1us"}),
    "l2fwd-xeon": ({"app": "l2fwd", "preset": "xeon-e3-1230v2", "loadgen": {"size": 64, "rate": "100%"}}, {}),
    "udp-echo-kernel": ({"app": "udp-echo", "stack": "kernel", "preset": "altra",
                         "loadgen": {"size": 64, "rate": "0.6Mpps"}}, {}),
    "memcached-pmd": ({"app": "memcached", "preset": "altra",
                       "loadgen": {"size": 64, "rate": "1.5Mpps",
                                   "memcached": {"keys": 1000, "populate": True, "get_ratio": 0.9}}}, {}),
    "memcached-kernel": ({"app": "memcached", "stack": "kernel", "preset": "altra",
                          "loadgen": {"size": 64, "rate": "0.4Mpps",
                                      "memcached": {"keys": 1000, "populate": True, "get_ratio": 0.9}}}, {}),
    "memcached-closed": ({"app": "memcached", "preset": "altra",
                          "loadgen": {"size": 64, "memcached": {"keys": 1000, "populate": True, "get_ratio": 0.9},
                                      "closed_loop": {"outstanding": 32}}}, {}),
    "iperf-kernel": ({"app": "iperf", "stack": "kernel", "preset": "altra",
                      "loadgen": {"size": 1518, "rate": "30Gbps", "protocol": "tcp", "dst_port": 5201}}, {}),
    "touchfwd-inorder": ({"app": "touchfwd", "preset": "a72-quad", "loadgen": {"size": 1518, "rate": "2Mpps"}},
                         {"host.cpu.out_of_order": False}),
    # The core's application unit held to the event loop (stop 48).
    "touchfwd-horizon": ({"app": "touchfwd", "preset": "a72-quad", "loadgen": {"size": 1518, "rate": "2.1Mpps"}},
                         {"sim.core_horizon": True}),
}

TIMING = {"duration": "4ms", "warmup": "1ms", "seed": 7, "propagation": "1us"}
SKIP = ("sim.wall_s", "sim.packets_per_wall_s", "sim.sample.represented_packets_per_wall_s")

# What changed on purpose since the pre-redesign recording (these apply
# only when comparing against that file; see `SINCE`).

#: Recorded key prefix -> new key prefix, for results whose shape changed
#: (the host's result shaped like the machine: per core, per NIC, the app's own counters).
RENAMES: Dict[str, str] = {
    "cpu.core0": "cores.0",
    "pmd.touch_digest": "app.touch_digest",
    "pmd.txonly_built": "app.txonly_built",
    "pcie": "nics.0.pcie",
    "kvs": "app",
}


#: Recorded keys whose values changed on purpose, and why (listed, not counted as differences).
EXPLAINED: Dict[str, str] = {
    "pcie.up_util": "PCIe utilisation over warm-up end to the end of the run (was over the measured "
                    "window while the drain's traffic counted too: testpmd at 1518 B read 101 %)",
    "pcie.down_util": "as pcie.up_util",
}


#: Parameters whose default changed on purpose since the recording: `compare`
#: runs these with the recorded value, so the run must still be identical.
OLD_DEFAULTS: Dict[str, Tuple[Dict[str, Any], str]] = {
    "touchfwd-inorder": ({"host.mem.transfer_cycles": 150},
                         "a72-quad's core-to-core transfer is now 170 cycles (85 ns measured between "
                         "Cortex-A72 cores), was an estimate of 150"),
}


#: Recording file name -> (renames, explained changes, old defaults) since it was made.
SINCE: Dict[str, Tuple[Dict[str, str], Dict[str, str], Dict[str, Tuple[Dict[str, Any], str]]]] = {
    "pre-redesign.json.gz": (RENAMES, EXPLAINED, OLD_DEFAULTS),
}


def flatten(value: Any, prefix: str = "") -> Iterator[Tuple[str, Any]]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield from flatten(v, f"{prefix}.{k}" if prefix else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from flatten(v, f"{prefix}.{i}")
    else:
        yield prefix, value


def run(name: str, old_defaults: Dict[str, Tuple[Dict[str, Any], str]]) -> Dict[str, Any]:
    cfg, overrides = RUNS[name]
    if name in old_defaults:
        overrides = dict(overrides, **old_defaults[name][0])
    cfg = json.loads(json.dumps(cfg))
    cfg.setdefault("sim", {}).update({"duration": TIMING["duration"], "warmup": TIMING["warmup"]})
    cfg["seed"] = TIMING["seed"]
    cfg.setdefault("link", {})["propagation"] = TIMING["propagation"]
    r = hostsim.simulate(cfg, overrides).to_dict()
    r.pop("config", None)
    return {k: v for k, v in flatten(r) if not k.startswith(SKIP) and not k.startswith("stats.")}


def renamed(key: str, renames: Dict[str, str]) -> str:
    for old in sorted(renames, key=len, reverse=True):
        if key == old or key.startswith(old + "."):
            return renames[old] + key[len(old):]
    return key


def main(argv: List[str]) -> int:
    if len(argv) != 3 or argv[1] not in ("record", "compare"):
        print(__doc__, file=sys.stderr)
        return 2
    mode, path = argv[1], argv[2]
    if mode == "record":
        out = {name: run(name, {}) for name in RUNS}
        with (gzip.open(path, "wt") if path.endswith(".gz") else open(path, "w")) as f:
            json.dump(out, f, indent=1, sort_keys=True)
        print(f"recorded {len(out)} runs in {path}")
        return 0
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        old = json.load(f)
    renames, why_changed, old_defaults = SINCE.get(path.rsplit("/", 1)[-1], ({}, {}, {}))
    bad = 0
    explained: Dict[str, int] = {}
    for name, fields in old.items():
        new = run(name, old_defaults)
        diffs = []
        for k, v in fields.items():
            nk = renamed(k, renames)
            if nk not in new:
                # A null section (kvs: null) may now be an object, and an
                # application reports only its own counters (the old pmd
                # object listed every application's, zero when not its).
                if v is not None and not (nk.startswith("app.") and v == 0):
                    diffs.append(f"  missing {k} (as {nk})")
            elif new[nk] != v:
                if k in why_changed:
                    explained[k] = explained.get(k, 0) + 1
                else:
                    diffs.append(f"  {k}: {v} -> {new[nk]}")
        print(f"{name}: {'identical' if not diffs else f'{len(diffs)} differences'} ({len(fields)} fields)")
        for d in diffs[:40]:
            print(d)
        bad += bool(diffs)
    since = " but for the changes explained:" if explained or old_defaults else ""
    print(f"{len(old) - bad} of {len(old)} runs identical{since}")
    for k, n in explained.items():
        print(f"  {k} ({n} runs): {why_changed[k]}")
    for name, (values, why) in old_defaults.items():
        print(f"  {name} ran with {values}: {why}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
