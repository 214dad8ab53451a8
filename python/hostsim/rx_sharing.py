"""One receive queue, several cores: the pieces of the single-queue study.

The study (SPEC §1, study 3) compares four ways for cores to share one NIC
receive queue — ``none``, ``arbitration``, ``range`` and ``parent_worker``
(``host.rx_sharing``) — on ``i9-7940x-cx5``: one flow of 64 B frames offered
at 100 GbE line rate, testpmd in ``macswap`` (l2fwd-style, out on the same
port) or ``rxonly``. Each point is one config (:func:`point`); a result
becomes one row of the table (:func:`row`): throughput, cycles per packet by
category, L2 misses per packet and the median batch, with the per-core
figures and batch-size CDFs behind them (:func:`batch_cdf`).

``range`` and ``parent_worker`` split the queue by index bits, so they take
a power-of-two core count; other counts are a ``ConfigError`` naming
``host.cores``.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Mapping, Sequence, Tuple

DESIGNS = ("none", "arbitration", "range", "parent_worker")
#: The categories the study draws, in its order.
CATEGORIES = ("rx", "cas", "join", "buffer", "mempool", "app", "tx", "idle")


def point(design: str, cores: int, mode: str = "macswap", duration: str = "2ms", warmup: str = "500us",
          preset: str = "i9-7940x-cx5") -> Dict[str, Any]:
    """The config of one study point: ``cores`` cores sharing the queue by
    ``design``. Overrides go to :func:`hostsim.simulate` beside it."""
    if design not in DESIGNS:
        raise ValueError(f"design {design!r}: one of {', '.join(DESIGNS)}")
    return {
        "app": "testpmd",
        "preset": preset,
        "sim": {"duration": duration, "warmup": warmup},
        "loadgen": {"size": 64, "flows": 1},
        "host": {"cores": cores, "rx_sharing": design, "app": {"forward_mode": mode}},
    }


def points(cores: Iterable[int] = (1, 2, 4), designs: Sequence[str] = DESIGNS, **kw: Any) -> List[Tuple[str, int, Dict[str, Any]]]:
    """Every (design, cores, config) of the grid; ``none`` only at one core (it owns the queue)."""
    return [(d, c, point(d, c, **kw)) for d in designs for c in cores if d != "none" or c == 1]


def median_batch(hist: Sequence[int]) -> int:
    """The median of a packets-per-loop histogram (index = packets)."""
    total = sum(hist)
    acc = 0
    for n, count in enumerate(hist):
        acc += count
        if total and 2 * acc >= total:
            return n
    return 0


def _summed(hists: Sequence[Sequence[int]]) -> List[int]:
    """Histograms of different lengths added index by index."""
    out = [0] * max((len(h) for h in hists), default=0)
    for h in hists:
        for i, n in enumerate(h):
            out[i] += n
    return out


def batch_cdf(hist: Sequence[int]) -> List[Tuple[int, float]]:
    """(packets per loop, fraction of loops with at most that many), for the sizes seen."""
    total = sum(hist)
    out, acc = [], 0
    for n, count in enumerate(hist):
        acc += count
        if count and total:
            out.append((n, acc / total))
    return out


def row(result: Mapping[str, Any], design: str, cores: int) -> Dict[str, Any]:
    """One row of the study's table from a run's result (a :class:`hostsim.Result` or its dict).

    ``cycles`` is the whole host's cycles per packet by category (every
    core's cycles over the packets taken); ``per_core`` has each core's own
    figures: packets, cycles per packet by category, L2 misses per packet,
    median batch and role. ``median_batch`` is the median packets per
    rx_burst over the cores that take packets in bursts; a parent's loop
    reads completions instead, up to the ring (``parent_median_batch``).
    """
    r = result
    per_core = []
    bursts: List[Sequence[int]] = []
    parent_batch = None
    for c in r["cores"]:
        cpp = c["cycles_per_packet"]
        role = (c.get("pmd") or {}).get("role", "")
        hist = c["rx_burst_packets"]
        per_core.append({
            "core": c["core"],
            "role": role,
            "packets": c["packets"],
            "cycles": {k: cpp.get(k, 0.0) for k in CATEGORIES},
            "cycles_total": cpp["total"],
            "l2_misses_per_packet": c["cache_misses_per_packet"]["l2"],
            "median_batch": median_batch(hist),
        })
        if role == "parent":
            parent_batch = median_batch(hist)
            continue
        bursts.append(hist)
    cpp = r["cpu"]["cycles_per_packet"]
    packets = sum(c["packets"] for c in per_core) or 1
    l2 = sum(c["l2_misses_per_packet"] * c["packets"] for c in per_core) / packets
    drops = r["drops"]
    return {
        "design": design,
        "cores": cores,
        "mpps": r["loadgen"]["achieved_pps"] / 1e6,
        "cycles": {k: cpp.get(k, 0.0) for k in CATEGORIES},
        "cycles_total": cpp["total"],
        "l2_misses_per_packet": l2,
        "median_batch": median_batch(_summed(bursts)) if bursts else parent_batch,
        "parent_median_batch": parent_batch,
        "drops": {k: drops[k] for k in ("dma", "core", "tx")},
        "pcie_up_util": r["nics"][0]["pcie"]["up_util"],
        "per_core": per_core,
    }


def table_cells(rows: Sequence[Mapping[str, Any]]) -> List[List[str]]:
    """The study's table as cells, header first: design × cores, Mpps, cycles per packet by category,
    L2 misses per packet, median batch, drops, PCIe upstream utilisation."""
    head = ["design", "cores", "Mpps"] + list(CATEGORIES) + ["total", "L2/pkt", "batch", "parent", "drops dma/core/tx", "PCIe up"]
    lines = [head]
    for x in rows:
        d = x["drops"]
        lines.append([x["design"], str(x["cores"]), f"{x['mpps']:.2f}"] + [f"{x['cycles'][c]:.1f}" for c in CATEGORIES]
                     + [f"{x['cycles_total']:.1f}", f"{x['l2_misses_per_packet']:.2f}", str(x["median_batch"]),
                        "-" if x["parent_median_batch"] is None else str(x["parent_median_batch"]),
                        f"{d['dma']}/{d['core']}/{d['tx']}", f"{100 * x['pcie_up_util']:.1f} %"])
    return lines


def table(rows: Sequence[Mapping[str, Any]]) -> str:
    """The study's table as text (:func:`table_cells`, right-aligned)."""
    lines = table_cells(rows)
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    return "\n".join("  ".join(cell.rjust(w) for cell, w in zip(line, widths)) for line in lines)
