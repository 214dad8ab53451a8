"""``hostsim bench``: the standard workloads' speed in one table (issue 17).

For each workload, runs of a fixed offered load and simulated time, each in
a child process (so each has its own peak RSS; ``--runs N`` runs N and
reports the median run), at the full fidelity and at the fast one, then
optionally the MSB at each and their difference. A fast run's speed is the
packets of the configured run per wall-second: it simulates a sample of
them and predicts the rest (``sim.fidelity``, the core's ``system/sample.rs``).
``--rss`` adds the memory check: TestPMD 64 B's peak RSS after 10 ms and
after 1 s of simulated time.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from .units import ConfigError

#: The loads are run settings, at or just below each workload's MSB on
#: `altra` (the table's MSB column shows how close); testpmd 64 B, touchfwd
#: 1518 B, udp-echo and l2fwd use crates/hostsim-core/benches/speed.rs's.
@dataclass(frozen=True)
class Workload:
    name: str
    config: Dict[str, Any]
    overrides: Dict[str, Any] = field(default_factory=dict)


def _host(app: str, size: int, mpps: float, ms: int, **extra: Any) -> Dict[str, Any]:
    cfg: Dict[str, Any] = {"app": app, "preset": "altra", "loadgen": {"size": size, "rate": f"{mpps}Mpps"},
                           "sim": {"duration": f"{ms}ms"}}
    cfg.update(extra)
    return cfg


WORKLOADS: List[Workload] = [
    Workload("reflector harness 64 B, 50% line rate, 10 ns", {
        "app": "reflector", "loadgen": {"size": 64, "rate": "50%"},
        "reflector": {"service": "fixed", "service_time": "10ns"}, "sim": {"duration": "20ms"}}),
    Workload("testpmd 64 B, 29 Mpps", _host("testpmd", 64, 29.0, 20)),
    Workload("testpmd 1518 B, 8 Mpps", _host("testpmd", 1518, 8.0, 20)),
    Workload("touchfwd 64 B, 20 Mpps", _host("touchfwd", 64, 20.0, 20)),
    Workload("touchfwd 1518 B, 4 Mpps", _host("touchfwd", 1518, 4.0, 20)),
    Workload("rxptx 1 us 64 B, 4 Mpps", _host("rxptx", 64, 4.0, 20), {"host.app.proc_time": "1us"}),
    Workload("l2fwd 64 B, 4 cores, 40 Mpps", _host("l2fwd", 64, 40.0, 10),
             {"host.cores": 4, "host.queues": 4, "loadgen.flows": 64}),
    Workload("kernel udp-echo 64 B, 0.9 Mpps", _host("udp-echo", 64, 0.9, 200, stack="kernel")),
    Workload("memcached pmd", _host("memcached", 64, 2.0, 20)),
    Workload("memcached kernel", _host("memcached", 64, 0.3, 100, stack="kernel")),
]

# Peak RSS is the child's VmHWM: getrusage's ru_maxrss survives execve, so
# it would carry the parent's peak over.
_CHILD = r"""
import json, sys
import hostsim
cfg, overrides = json.loads(sys.argv[1])
r = hostsim.simulate(cfg, overrides).to_dict()
hwm_kib = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:"))
sample = r["sim"].get("sample") or {}
sampled = bool(sample.get("sampled"))
print(json.dumps({"packets": sample["represented_packets"] if sampled else r["sim"]["packets"],
                  "simulated_packets": r["sim"]["packets"], "wall_s": r["sim"]["wall_s"],
                  "pps": sample["represented_packets_per_wall_s"] if sampled else r["sim"]["packets_per_wall_s"],
                  "simulated_s": r["sim"]["simulated_s"], "sampled": sampled,
                  "rss_mib": hwm_kib / 1024}))
"""


def _at(config: Dict[str, Any], fidelity: str) -> Dict[str, Any]:
    cfg = json.loads(json.dumps(config))
    cfg.setdefault("sim", {})["fidelity"] = fidelity
    return cfg


def run_child(config: Dict[str, Any], overrides: Dict[str, Any], fidelity: str = "full") -> Dict[str, Any]:
    """One simulation in a child process: packets (of the configured run),
    wall time, packets/wall-s, peak RSS."""
    proc = subprocess.run([sys.executable, "-c", _CHILD, json.dumps([_at(config, fidelity), overrides])],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "child failed")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def msb_pps(w: Workload, fidelity: str = "full") -> float:
    import hostsim

    cfg = json.loads(json.dumps(w.config))
    cfg.get("loadgen", {}).pop("rate", None)
    cfg["sim"] = {"fidelity": fidelity}
    return hostsim.msb(cfg, overrides=w.overrides).msb.pps


def _check_runs(runs: Any) -> None:
    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
        raise ConfigError.invalid("runs", runs, "a whole number >= 1")


def _check_names(names: Optional[List[str]]) -> None:
    """Every ``--only`` text names some workload: a typo is an error, not an empty table."""
    unmatched = [n for n in names or [] if not any(n in w.name for w in WORKLOADS)]
    if unmatched:
        raise ConfigError.invalid("only", ", ".join(unmatched), "text within a workload's name: "
                                  + "; ".join(w.name for w in WORKLOADS))


def table(names: Optional[List[str]] = None, with_msb: bool = True, out=sys.stdout, runs: int = 1) -> List[Dict[str, Any]]:
    """One row per workload; with ``runs`` > 1 each workload runs that many
    times and its row is the median run's (peak RSS: the largest), with
    every run's packets/wall-s listed under it and in ``pps_runs``."""
    _check_runs(runs)
    _check_names(names)
    rows = []
    print(f"{'workload':<46} {'packets':>9} {'full pkts/wall-s':>17} {'fast pkts/wall-s':>17} "
          f"{'peak RSS MiB':>12} {'full MSB Mpps':>13} {'fast MSB':>9} {'diff %':>7}", file=out)
    for w in WORKLOADS:
        if names and not any(n in w.name for n in names):
            continue
        # Slowest first; the median run is the lower middle one of an even count.
        done = sorted((run_child(w.config, w.overrides) for _ in range(runs)), key=lambda r: r["pps"])
        fast = sorted((run_child(w.config, w.overrides, "fast") for _ in range(runs)), key=lambda r: r["pps"])
        s = dict(done[(runs - 1) // 2], rss_mib=max(r["rss_mib"] for r in done + fast))
        f = fast[(runs - 1) // 2]
        m = msb_pps(w) / 1e6 if with_msb else None
        mf = msb_pps(w, "fast") / 1e6 if with_msb else None
        diff = (mf - m) / m * 100 if m and mf is not None else None
        num = lambda x, w: f"{x:>{w}.3f}" if x is not None else f"{'-':>{w}}"  # noqa: E731
        msb_text = f"{num(m, 13)} {num(mf, 9)} " + (f"{diff:>+7.2f}" if diff is not None else f"{'-':>7}")
        fast_text = f"{f['pps']:>17,.0f}" if f["sampled"] else f"{'(not sampled)':>17}"
        print(f"{w.name:<46} {s['packets']:>9} {s['pps']:>17,.0f} {fast_text} {s['rss_mib']:>12.1f} {msb_text}",
              file=out, flush=True)
        if runs > 1:
            print(f"  {runs} runs, median above: full " + ", ".join(f"{r['pps']:,.0f}" for r in done)
                  + "; fast " + ", ".join(f"{r['pps']:,.0f}" for r in fast), file=out, flush=True)
        rows.append({"workload": w.name, **s, "pps_runs": [r["pps"] for r in done], "msb_mpps": m,
                     "fast": {"pps": f["pps"], "pps_runs": [r["pps"] for r in fast], "sampled": f["sampled"],
                              "simulated_packets": f["simulated_packets"], "msb_mpps": mf, "msb_diff_pct": diff}})
    return rows


def rss_check(out=sys.stdout) -> Dict[str, float]:
    """TestPMD 64 B at 29 Mpps: peak RSS after 10 ms and after 1 s simulated."""
    got = {}
    for label, dur in (("10ms", "10ms"), ("1s", "1s")):
        cfg = _host("testpmd", 64, 29.0, 1)
        cfg["sim"] = {"duration": dur}
        got[label] = run_child(cfg, {})["rss_mib"]
    ratio = got["1s"] / got["10ms"]
    print(f"testpmd 64 B peak RSS: {got['10ms']:.1f} MiB at 10 ms, {got['1s']:.1f} MiB at 1 s simulated "
          f"(ratio {ratio:.3f}; flat within 10 %: {'yes' if ratio <= 1.10 else 'no'})", file=out)
    return got


def main(names: Optional[List[str]], with_msb: bool, rss: bool, json_path: Optional[str], runs: int = 1) -> int:
    _check_runs(runs)
    _check_names(names)
    print("fast: sim.fidelity = fast, a sample of each run simulated and the rest predicted; "
          "its packets/wall-s counts the configured run's packets")
    rows = table(names, with_msb, runs=runs)
    extra = rss_check() if rss else None
    if json_path:
        with open(json_path, "w") as f:
            json.dump({"rows": rows, "rss_mib": extra}, f, indent=1)
    return 0
