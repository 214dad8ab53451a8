"""Results and the result store as pandas DataFrames.

* :func:`result_frame`: one run as one row, its nested fields as dotted
  columns (``loadgen.achieved_pps``, ``drops.dma``...); lists stay objects.
* :func:`msb_frame`: a bandwidth test's curve, a row per trial point.
* :func:`load`: the store's points, a row each, with every axis value as a
  column of its own (``loadgen.size``), the summary columns and the result.
"""

from __future__ import annotations

import os
from typing import Any, Mapping, Optional, Union


def _pandas() -> Any:
    try:
        import pandas
    except ImportError:  # pragma: no cover - pandas is a dependency
        raise RuntimeError("DataFrames need pandas (pip install pandas; scripts/setup installs it)") from None
    return pandas


def result_frame(result: Mapping[str, Any]) -> Any:
    """One result (a :class:`hostsim.Result` or its dict) as a one-row DataFrame of dotted columns."""
    data = result.to_dict() if hasattr(result, "to_dict") else dict(result)
    data.pop("config", None)
    return _pandas().json_normalize(data)


def msb_frame(result: Mapping[str, Any]) -> Any:
    """A bandwidth test's curve as a DataFrame: a row per point, sorted by offered rate."""
    data = result.to_dict() if hasattr(result, "to_dict") else dict(result)
    return _pandas().json_normalize(data["msb"]["curve"])


def load(store: Union[str, "os.PathLike[str]"] = "hostsim.duckdb", sweep: Optional[str] = None) -> Any:
    """The store's points (of one ``sweep``, or all) as a DataFrame: sweep, idx, kind, key, each axis
    value as a column named by its key, the summary columns, wall_s, and the decoded result and config."""
    from .store import SUMMARY_COLUMNS, Store

    with Store(store, read_only=True) as db:
        rows = db.rows(sweep=sweep)
    front = ("sweep", "idx", "kind", "key")
    records = [dict({k: r[k] for k in front}, **r["params"], **{k: r.get(k) for k in SUMMARY_COLUMNS},
                    wall_s=r.get("wall_s"), result=r["result"], config=r["config"]) for r in rows]
    return _pandas().DataFrame.from_records(records)
