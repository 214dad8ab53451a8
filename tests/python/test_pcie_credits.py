"""The root port's posted credits (`host.pcie.posted_header_credits`, issue
15 item 3): off by default (infinite, as the presets say); when set, each
write TLP the NIC sends holds a credit until the root complex has passed
the write to memory and an UpdateFC has come back, so a NIC with few
credits cannot write faster than credits / (2 × link latency), and the
frames it cannot take are the DMA path's drops. Its non-posted header
credits (`nonposted_header_credits`) bound the NIC's read requests the
same way, each held for 2 × link latency."""

import hostsim


def _run(credits: int, field: str = "posted_header_credits", size: int = 64, rate: str = "25Mpps") -> dict:
    """altra testpmd for 2 ms with `credits` of the root port's `field`."""
    return hostsim.simulate({
        "app": "testpmd", "preset": "altra", "sim": {"duration": "2ms", "warmup": "500us"},
        "loadgen": {"size": size, "rate": rate},
        "host": {"pcie": {field: credits}},
    })


def test_few_posted_credits_bound_the_receive_rate_and_drop_as_dma():
    free, tight = _run(0), _run(4)
    assert free["nics"][0]["pcie"]["credit_stalls"] == 0
    assert sum(free["accounting"]["measured"]["drops"].values()) == 0
    assert tight["nics"][0]["pcie"]["credit_stalls"] > 0
    drops = tight["accounting"]["measured"]["drops"]
    assert drops["rx_fifo_dma"] > 0 and sum(drops.values()) == drops["rx_fifo_dma"]
    # A credit is out for at least the link latency each way, so in the T
    # seconds the device counts (from warm-up to the end of the run; T here is
    # a little longer) 4 credits carry at most 4 × (T / (2 × latency) + 1)
    # writes (64 B frames and 16 B write-backs: one TLP each).
    pcie = tight["nics"][0]["pcie"]
    latency_s = tight["config"]["host"]["pcie"]["latency_ps"] * 1e-12
    counted_s = tight["sim"]["simulated_s"] - 0.5e-3
    assert pcie["writes"] <= 4 * (counted_s / (2 * latency_s) + 1)
    assert tight["loadgen"]["rx_packets"] < free["loadgen"]["rx_packets"]
    # Every frame sent is accounted for under the stalls too.
    t = tight["accounting"]["total"]
    assert t["sent"] == t["returned"] + t["consumed"] + sum(t["drops"].values()) + t["in_flight"]


def test_credit_counts_out_of_range_name_the_field():
    try:
        _run(200)
    except hostsim.ConfigError as e:
        assert "host.pcie.posted_header_credits" in str(e) and "200" in str(e)
    else:
        raise AssertionError("200 posted header credits were accepted")


def _reads(credits: int) -> dict:
    return _run(credits, "nonposted_header_credits", 1518, "6Mpps")


def test_few_nonposted_credits_bound_the_read_requests():
    # 1518 B frames go out in three 512 B read requests each, beside the
    # descriptor fetches: the NIC's reads are what non-posted credits bound.
    free, tight = _reads(0), _reads(2)
    assert free["nics"][0]["pcie"]["nonposted_credit_stalls"] == 0
    assert sum(free["accounting"]["measured"]["drops"].values()) == 0
    pcie = tight["nics"][0]["pcie"]
    assert pcie["nonposted_credit_stalls"] > 0 and pcie["nonposted_credit_stall_ps"] > 0
    # A credit is out from when its request leaves until 2 × latency later
    # (the request's trip up, the UpdateFC's trip back), so 2 credits carry at
    # most 2 × (T / (2 × latency) + 1) requests in the T seconds counted.
    latency_s = tight["config"]["host"]["pcie"]["latency_ps"] * 1e-12
    counted_s = tight["sim"]["simulated_s"] - 0.5e-3
    assert pcie["read_requests"] <= 2 * (counted_s / (2 * latency_s) + 1)
    assert free["nics"][0]["pcie"]["read_requests"] > 2 * (counted_s / (2 * latency_s) + 1)
    assert tight["loadgen"]["rx_packets"] < free["loadgen"]["rx_packets"]
    t = tight["accounting"]["total"]
    assert t["sent"] == t["returned"] + t["consumed"] + sum(t["drops"].values()) + t["in_flight"]
