"""`host.nic.tx_reads_in_flight`: the payload reads a port's TX engine
keeps in flight at once. 0 (every preset) reads every frame the TX FIFO
has room for at once; 1 is gem5's i8254xGBe, which starts the next frame's
DMA only once the last one is in (stop 44)."""

import hostsim


def _testpmd(reads: int) -> dict:
    """a72-quad (gem5's I/O path) TestPMD, 64 B at 14 Mpps for 2 ms (below the core's limit)."""
    return hostsim.simulate({
        "app": "testpmd", "preset": "a72-quad", "sim": {"duration": "2ms", "warmup": "1ms"},
        "loadgen": {"size": 64, "rate": "14Mpps"},
        "host": {"nic": {"tx_reads_in_flight": reads}},
    })


def test_one_read_in_flight_sends_at_most_one_frame_per_read_trip():
    free, one = _testpmd(0), _testpmd(1)
    assert free["loadgen"]["loss_rate"] == 0.0
    # A 64 B frame is one line. Its read holds the engine at least for the
    # IOCache's tag and response latencies (24 + 24 cycles at the crossbar's
    # 1 GHz) and a DRAM row hit (81 ns idle latency less tRP and tRCD, 13.75
    # ns each): 101.5 ns, so one read in flight sends at most 9.85 Mpps.
    io = one["config"]["host"]["io"]
    dram = one["config"]["host"]["mem"]["dram"]
    cycle_ps = 1e12 / io["xbar"]["clock_hz"]
    trip_ps = ((io["iocache"]["tag_latency_cycles"] + io["iocache"]["response_latency_cycles"]) * cycle_ps
               + dram["idle_latency_ps"] - dram["timing"]["t_rp_ps"] - dram["timing"]["t_rcd_ps"])
    assert trip_ps == 101_500
    assert one["loadgen"]["achieved_pps"] <= 1e12 / trip_ps
    drops = one["accounting"]["measured"]["drops"]
    assert sum(drops.values()) > 0 and sum(drops.values()) == drops["tx_ring"], drops
    t = one["accounting"]["total"]
    assert t["sent"] == t["returned"] + t["consumed"] + sum(t["drops"].values()) + t["in_flight"]


def test_a_negative_count_names_the_field():
    try:
        _testpmd(-1)
    except hostsim.ConfigError as e:
        assert "tx_reads_in_flight" in str(e)
    else:
        raise AssertionError("-1 reads in flight were accepted")
