"""hostsim: a fast simulator of a server's network datapath with a hardware-style load generator.

The Python package resolves configs (presets, overrides, unit strings) into
the core's contract, runs the Rust core (``hostsim._core``) and wraps its
results::

    import hostsim
    r = hostsim.simulate({"loadgen": {"rate": "10Gbps"}})
    r.loadgen.achieved_bps
    r.typed().loadgen.achieved_pps   # the pydantic model, hostsim.models.RunResult
    m = hostsim.msb({"reflector": {"service_time": "100ns"}}, threshold=0.01)
    m.msb.pps
    rows = hostsim.run_sweep("sizes.toml", store="hostsim.duckdb", jobs=2)
    hostsim.Store("hostsim.duckdb").rows(sweep="sizes")
"""

from __future__ import annotations

from . import models, presets
from .config import Config, Link, Loadgen, Reflector, Timing, load_config, resolve
from .frames import load
from .msb import msb
from .result import MsbResult, Result
from .runner import simulate
from .store import Store, StoreError
from .sweep import Sweep, SweepError, load_sweep, run_sweep
from .units import ConfigError


def _find_version() -> str:
    try:
        from ._core import __version__ as core_version  # type: ignore[attr-defined]

        return str(core_version)
    except ImportError:
        pass
    try:
        from importlib.metadata import version

        return version("hostsim")
    except Exception:  # not installed: running from a source tree
        return "0+unknown"


__version__ = _find_version()

__all__ = [
    "Config",
    "ConfigError",
    "Link",
    "Loadgen",
    "MsbResult",
    "Reflector",
    "Result",
    "Store",
    "StoreError",
    "Sweep",
    "SweepError",
    "Timing",
    "__version__",
    "load",
    "load_config",
    "load_sweep",
    "msb",
    "presets",
    "resolve",
    "run_sweep",
    "simulate",
]
