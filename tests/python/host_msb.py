"""The bandwidth tests behind the host acceptance tests (``test_host_acceptance.py``,
``test_touch_acceptance.py``), cached per configuration within a process.

Every test runs the real bandwidth test (``hostsim.msb``) or a single run on
the ``altra`` preset with the default seed and a constant-rate load. Trials
are 5 ms (1 ms warm-up): the RX FIFO (512 KiB, thousands of small frames)
absorbs an overload for a while, and a trial much shorter than the time it
takes to fill would report an MSB far above what the host sustains. The link
propagation is cut to 1 us so drains are short; nothing else is changed
from the preset unless the test says so. MSBs are cached per configuration,
so tests that share one (testpmd at 1518 B, say) run it once.

"Drops at the knee" are those of the first failing trial above the MSB.
"""

from __future__ import annotations

import functools
import json
from typing import Any, Dict, Tuple

import hostsim
from conftest import deep_merge

SIZES = (64, 128, 256, 512, 1024, 1518)
RESOLUTION = 0.02
TRIAL = {
    "preset": "altra",
    "sim": {"duration": "5ms", "warmup": "1ms", "drain": "1ms"},
    "link": {"propagation": "1us"},
}


def config(app: str, size: int, host: Dict[str, Any] = None, **sections: Any) -> Dict[str, Any]:
    return deep_merge(TRIAL, dict(sections, app=app, loadgen=dict(sections.get("loadgen", {}), size=size),
                                  host=host or {}))


@functools.lru_cache(maxsize=None)
def _msb(app: str, size: int, host_json: str) -> hostsim.MsbResult:
    return hostsim.msb(config(app, size, json.loads(host_json)), resolution=RESOLUTION, progress=False)


def msb(application: str, size: int, **host: Any) -> hostsim.MsbResult:
    """The bandwidth test of ``application`` at ``size`` with host overrides (nested dicts)."""
    return _msb(application, size, json.dumps(host, sort_keys=True))


def gbps(application: str, size: int, **host: Any) -> float:
    return msb(application, size, **host).msb.bps / 1e9


def knee_drops(m: hostsim.MsbResult) -> Tuple[int, int, int]:
    """(DmaDrops, CoreDrops, TxDrops) of the first failing trial above the MSB."""
    above = m.msb.knee.above
    assert above is not None, "every trial passed: no knee"
    d = above["drops"]
    return d["dma"], d["core"], d["tx"]


def share(drops: Tuple[int, int, int], which: int) -> float:
    total = sum(drops)
    assert total > 0, f"the failing trial above the MSB dropped nothing in the NIC: {drops}"
    return drops[which] / total


DMA, CORE, TX = 0, 1, 2
GHZ2 = {"cpu": {"freq": "2GHz"}}
GHZ3 = {"cpu": {"freq": "3GHz"}}
IN_ORDER = {"cpu": {"out_of_order": False}}
NO_DCA = {"mem": {"llc": {"dca": {"enabled": False}}}}
