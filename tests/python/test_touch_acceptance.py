"""Issue 3 acceptance, TouchFwd and RXpTX: where the core binds, drops move to
the core (the bandwidth tests and their conditions: ``host_msb.py``). A file
of its own so that its searches run beside testpmd's on another worker.
"""

from __future__ import annotations

import pytest

from host_msb import CORE, DMA, IN_ORDER, SIZES, gbps, knee_drops, msb, share


# ---------------------------------------------------------------- 2. touchfwd


#: The largest sizes' searches run in `make test-long` (with the out-of-order test, which shares them).
def _sizes(sizes):
    return [pytest.param(s, marks=pytest.mark.long) if s >= 1024 else s for s in sizes]


@pytest.mark.parametrize("size", _sizes(SIZES[1:]))
def test_touchfwd_msb_below_testpmd(size):
    assert gbps("touchfwd", size) < gbps("testpmd", size)


@pytest.mark.parametrize("size", _sizes(SIZES))
def test_touchfwd_knee_drops_are_mostly_core_drops(size):
    drops = knee_drops(msb("touchfwd", size))
    assert share(drops, CORE) > 0.5, f"(dma, core, tx) = {drops}"


@pytest.mark.long
def test_touchfwd_gains_far_more_than_testpmd_from_out_of_order_at_1518b():
    touch = gbps("touchfwd", 1518) / gbps("touchfwd", 1518, **IN_ORDER) - 1
    testpmd = gbps("testpmd", 1518) / gbps("testpmd", 1518, **IN_ORDER) - 1
    assert touch >= 0.10 + testpmd and touch >= 2 * max(testpmd, 0.0), (touch, testpmd)


# ---------------------------------------------------------------- 3. rxptx


def test_rxptx_longer_processing_lowers_msb_and_moves_drops_to_the_core():
    short = msb("rxptx", 1518, app={"proc_time": "10ns", "proc_per": "packet"})
    long = msb("rxptx", 1518, app={"proc_time": "1us", "proc_per": "packet"})
    assert long.msb.bps < short.msb.bps
    d_short, d_long = knee_drops(short), knee_drops(long)
    assert share(d_long, CORE) > share(d_short, CORE), (d_short, d_long)
    assert share(d_long, CORE) > 0.5, d_long


def test_rxptx_short_processing_knee_drops_are_dma_drops():
    assert share(knee_drops(msb("rxptx", 1518, app={"proc_time": "10ns", "proc_per": "packet"})), DMA) > 0.5
