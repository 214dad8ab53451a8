"""The root port's posted credits (`host.pcie.posted_header_credits`, issue
15 item 3): off by default (infinite, as the presets say); when set, each
write TLP the NIC sends holds a credit until the root complex has passed
the write to memory and an UpdateFC has come back, so a NIC with few
credits cannot write faster than credits / (2 × link latency), and the
frames it cannot take are the DMA path's drops."""

import hostsim


def _run(credits: int) -> dict:
    return hostsim.simulate({
        "app": "testpmd", "preset": "altra", "sim": {"duration": "2ms", "warmup": "500us"},
        "loadgen": {"size": 64, "rate": "25Mpps"},
        "host": {"pcie": {"posted_header_credits": credits}},
    })


def test_few_posted_credits_bound_the_receive_rate_and_drop_as_dma():
    free, tight = _run(0), _run(4)
    assert free["nics"][0]["pcie"]["credit_stalls"] == 0
    assert sum(free["accounting"]["measured"]["drops"].values()) == 0
    assert tight["nics"][0]["pcie"]["credit_stalls"] > 0
    drops = tight["accounting"]["measured"]["drops"]
    assert drops["rx_fifo_dma"] > 0 and sum(drops.values()) == drops["rx_fifo_dma"]
    # Every frame received is at least one write TLP, and a credit is out for
    # at least the link latency each way: ≤ 4 frames per 2 × latency.
    latency_s = tight["config"]["host"]["pcie"]["latency_ps"] * 1e-12
    window_s = 1.5e-3
    assert tight["loadgen"]["rx_packets"] / window_s <= 4 / (2 * latency_s)
    assert tight["loadgen"]["rx_packets"] < free["loadgen"]["rx_packets"]


def test_credit_counts_out_of_range_name_the_field():
    try:
        _run(200)
    except hostsim.ConfigError as e:
        assert "host.pcie.posted_header_credits" in str(e) and "200" in str(e)
    else:
        raise AssertionError("200 posted header credits were accepted")
