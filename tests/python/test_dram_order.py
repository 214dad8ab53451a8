"""DRAM reads overtaken at their bank (`mem.dram.reads_overtaken_*`): a
core books a work unit's misses when it starts the unit, ahead of the
devices, so a device read can find bank accesses in its way that were
requested after it. TouchFwd 1518 B on `a72-quad` at 2.46 Mpps keeps up
after a 20 ms warm-up and falls behind in its DMA path after 39.1 ms
(docs/reference/dram-pcie.md, "The DMA-bound state")."""

import hostsim


def _touchfwd(warmup_ms: float) -> dict:
    return hostsim.simulate({
        "app": "touchfwd", "preset": "a72-quad", "loadgen": {"size": 1518, "rate": "2.46Mpps"},
        "sim": {"warmup": f"{warmup_ms}ms", "duration": f"{warmup_ms + 0.9}ms"},
    })


def _overtaken(r) -> tuple:
    """(reads overtaken, their share of the device's DRAM read time, reads) of the device."""
    d = r["mem"]["dram"]
    return (d["reads_overtaken_device"], d["overtaken_wait_ps_device"] / d["read_latency_ps_device"],
            d["bytes_read_device"] // 64)


def test_the_dma_bound_state_is_waiting_behind_reads_booked_ahead_and_says_so():
    keeps_up, behind = _touchfwd(20), _touchfwd(39.1)
    assert keeps_up["drops"]["dma"] == 0 and behind["drops"]["dma"] > 0
    (n_up, share_up, reads_up), (n_behind, share_behind, reads_behind) = _overtaken(keeps_up), _overtaken(behind)
    # About as many of the device's reads are overtaken in both states...
    assert 0 < n_up < reads_up and 0 < n_behind < reads_behind
    assert 0.5 < n_behind / n_up < 2
    # ...but once behind, those reads wait for microseconds: most of the
    # device's DRAM time, against a tenth while it keeps up.
    assert share_up < 0.2 and share_behind > 0.4
    from hostsim._core import OVERTAKEN
    assert not any(w.startswith(OVERTAKEN) for w in keeps_up["warnings"])
    warned = [w for w in behind["warnings"] if w.startswith(OVERTAKEN)]
    assert len(warned) == 1 and warned[0].startswith(f"{OVERTAKEN}: {share_behind * 100:.0f} % of their DRAM time"), warned
    assert f"the {behind['drops']['dma']} frames the receive FIFOs dropped (drops.dma)" in warned[0]
    # A bandwidth test reads the share back from the core's words.
    from hostsim.msb import _merge_warnings
    merged = [w for w in _merge_warnings([behind, keeps_up], []) if OVERTAKEN in w]
    assert merged == [f"msb: 1 trials warned that {OVERTAKEN} (up to {share_behind * 100:.0f} % of their DRAM time): "
                      "their DMA path is pessimistic, and frames a trial lost at the receive FIFOs (drops.dma) may be "
                      "the booking order's, not the hardware's (docs/reference/dram-pcie.md)"]
    # The core's reads, booked ahead, are seldom overtaken.
    d = behind["mem"]["dram"]
    assert d["reads_overtaken_core"] < 0.01 * d["bytes_read_core"] // 64
