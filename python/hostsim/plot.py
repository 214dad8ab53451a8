"""The bandwidth-versus-drop figure of a bandwidth test, as a PNG.

x: offered load (Gbps, Ethernet frame bits); left y: loss rate (%), and loss
plus buffer growth where a trial's buffers grew (what its verdict compares); right y:
achieved Gbps or p99 latency. The MSB is a vertical line, the threshold a
horizontal one. Drawn with matplotlib's Agg backend, so no display is needed.
"""

from __future__ import annotations

from typing import Any, Mapping

from .config import size_label


def plot_msb(result: Mapping[str, Any], path: str, right: str = "achieved") -> None:
    """Writes the curve of an MSB result to ``path`` (PNG or SVG, by extension).

    ``right`` chooses the right axis: ``"achieved"`` (Gbps) or ``"p99"`` (latency, us).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if right not in ("achieved", "p99"):
        raise ValueError(f"right: invalid value {right!r} (allowed: achieved, p99)")
    data = result.to_dict() if hasattr(result, "to_dict") else dict(result)
    msb = data["msb"]
    curve = msb["curve"]
    x = [p["offered_bps"] / 1e9 for p in curve]
    drop = [p["loss_rate"] * 100 for p in curve]

    fig, ax = plt.subplots(figsize=(8, 4.8), dpi=120)
    ax.plot(x, drop, "o-", color="tab:red", label="loss rate")
    # A trial also fails on frames its buffers took up (a longer one would
    # lose them): where any did, the quantity the verdict compares.
    judged = [(p["loss_rate"] + p.get("backlog_growth_rate", 0.0)) * 100 for p in curve]
    if any(j != d for j, d in zip(judged, drop)):
        ax.plot(x, judged, "x--", color="tab:orange", label="loss + buffer growth (the verdict's)")
    ax.set_xlabel("offered load (Gbps, frame bits)")
    ax.set_ylabel("loss rate (%, RFC 2544)", color="tab:red")
    ax.axhline(msb["threshold"] * 100, color="tab:red", linestyle=":", linewidth=1,
               label=f"threshold {msb['threshold']:.3g} ({msb['threshold'] * 100:g}%)")
    ax.axvline(msb["bps"] / 1e9, color="black", linestyle="--", linewidth=1,
               label=f"MSB {msb['bps'] / 1e9:.4g} Gbps = {msb['pps'] / 1e6:.4g} Mpps")
    ax.set_ylim(bottom=min(0.0, min(drop, default=0.0)))
    ax.set_xlim(left=0)

    ax2 = ax.twinx()
    if right == "achieved":
        y2 = [p["achieved_bps"] / 1e9 for p in curve]
        ax2.set_ylabel("achieved (Gbps)", color="tab:blue")
        label = "achieved"
    else:
        y2 = [(p["latency_ns"].get("p99") or 0) / 1e3 for p in curve]
        ax2.set_ylabel("p99 latency (us)", color="tab:blue")
        label = "p99 latency"
    ax2.plot(x, y2, "s-", color="tab:blue", markersize=4, label=label)
    ax2.set_ylim(bottom=0)

    config = data.get("config", {})
    size = config.get("loadgen", {}).get("size")
    title = f"MSB of {config.get('app', '?')}"
    if size:
        title += f", {size_label(size)}"
    title += f", preset {data.get('preset', '?')}"
    ax.set_title(title)
    lines = ax.get_legend_handles_labels()
    lines2 = ax2.get_legend_handles_labels()
    ax.legend(lines[0] + lines2[0], lines[1] + lines2[1], loc="center right", fontsize="small")
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
