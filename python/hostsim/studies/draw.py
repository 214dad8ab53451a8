"""The studies' figure helpers: panels in a row, grouped or stacked bars, SVG/PNG by extension.

matplotlib's Agg backend, so no display is needed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Sequence, Tuple


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def figure(panels: int, xlabel: str, ylabel: str) -> Tuple[Any, List[Any]]:
    """A figure of ``panels`` axes side by side, each labelled."""
    plt = _plt()
    fig, axes = plt.subplots(1, max(panels, 1), figsize=(4.2 * max(panels, 1), 3.6), dpi=110, squeeze=False)
    for ax in axes[0]:
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.grid(True, linewidth=0.3)
    return fig, list(axes[0])


def save(fig: Any, path: Path) -> Path:
    """Writes the figure (format from the extension) and closes it."""
    fig.tight_layout()
    fig.savefig(path)
    _plt().close(fig)
    return path


def bars(labels: Sequence[str], series: Dict[str, Sequence[float]], ylabel: str, path: Path,
         stacked: bool = False, xlabel: str = "") -> Path:
    """Bars per label: one per series side by side, or the series stacked."""
    fig, (ax,) = figure(1, xlabel, ylabel)
    fig.set_size_inches(max(6.0, 0.55 * len(labels) + 2), 4.0)
    n = max(len(series), 1)
    width = 0.8 if stacked else 0.8 / n
    bottom = [0.0] * len(labels)
    for i, (name, values) in enumerate(series.items()):
        xs = list(range(len(labels))) if stacked else [x - 0.4 + width * (i + 0.5) for x in range(len(labels))]
        ax.bar(xs, values, width, bottom=bottom if stacked else None, label=name)
        if stacked:
            bottom = [b + v for b, v in zip(bottom, values)]
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, fontsize=7)
    ax.legend(fontsize=7)
    return save(fig, path)
