"""vswitch (a DPDK virtual switch) on the xeon-e3-1230v2: an exact-match
flow table at simulated addresses, a miss per new flow (the upcall), hits
afterwards, and lookups that cost more once the active flows' buckets and
entries outgrow a cache level."""

from __future__ import annotations

import pytest

import hostsim
from hostsim.units import ConfigError


def run(flows: int, warmup: str = "10ms", prefetch: bool = True, **app) -> hostsim.Result:
    mem = {} if prefetch else {"l2_prefetch": {"degree": 0}}
    return hostsim.simulate({
        "preset": "xeon-e3-1230v2", "app": "vswitch",
        "host": {"ports": 2, "cores": 1, "app": {"flow_table": app}, "mem": mem},
        "loadgen": {"size": 64, "rate": "4Mpps", "flows": flows, "traffic": "uni"},
        "sim": {"duration": f"{float(warmup[:-2]) + 1}ms", "warmup": warmup}})


def test_each_flow_is_installed_once_then_hits():
    r = run(8)
    acc = r["accounting"]["measured"]
    assert r["warnings"] == [] and acc["dropped"] == 0
    # After warm-up every flow is in the table: every packet hits.
    assert r["app"]["flows"] == 8 and r["app"]["misses"] == 0
    assert r["app"]["hits"] == r["cpu"]["packets"] > 3000
    assert abs(acc["returned"] - r["app"]["hits"]) <= 1    # a frame across the window's edge
    # Port 0's traffic leaves on port 1 (paired), untouched.
    assert r["ports"][1]["tx_packets"] > 3000 and r["ports"][0]["tx_packets"] == 0


def test_the_first_packets_pay_the_upcall():
    cold = run(64, warmup="1us")      # the first frame or two fall in the warm-up
    misses = cold["app"]["misses"]
    assert 60 <= misses <= 63 and cold["app"]["flows"] == 64
    warm = run(64)
    host = hostsim.resolve({"preset": "xeon-e3-1230v2", "app": "vswitch"})["host"]
    # The measured upcalls of upcall_instr at the core's CPI, spread over the window's
    # packets (the installs' stores do not stall; the misses' loads are the hits').
    ft, cpi = host["app"]["flow_table"], host["cpu"]["base_cpi"]
    upcall = misses * ft["upcall_instr"] * cpi / cold["cpu"]["packets"]
    extra = cold["cpu"]["cycles_per_packet"]["app"] - warm["cpu"]["cycles_per_packet"]["app"]
    assert extra == pytest.approx(upcall, rel=0.1), (extra, upcall)


def test_lookups_cost_more_when_the_flows_outgrow_l2():
    # 8 flows: buckets and entries stay in L1. 4000 flows (2 × 64 B lines
    # each, plus buckets): ~600 KiB, beyond the 256 KiB L2 but inside the
    # 8 MiB LLC. Each packet's bucket read, entry read and statistics write
    # now miss L2 (3 more L2 misses; and the table crowds some of the
    # driver's lines out of L2 too), and the two reads are dependent: each
    # waits its own LLC latency, where with few flows only the header line's
    # miss (overlapping nothing) was paid. Counted without the L2 prefetcher,
    # which fetches some of the driver's crowded-out lines back ahead (with
    # it: 2.0 more misses a packet at stop 65).
    few, many = run(8, prefetch=False), run(4000, warmup="100ms", prefetch=False)
    assert many["app"]["misses"] == 0, "every flow installed during warm-up"
    per = lambda r, lvl: r["mem"][lvl]["misses"] / r["cpu"]["packets"]
    assert 2.9 < per(many, "l2") - per(few, "l2") < 4.5
    assert per(many, "llc") == per(few, "llc") == 0
    llc = hostsim.resolve({"preset": "xeon-e3-1230v2", "app": "vswitch"})["host"]["mem"]["llc"]["latency_cycles"]
    app = lambda r: r["cpu"]["cycles_per_packet"]["app"]
    assert app(many) - app(few) == pytest.approx(2 * llc, rel=0.1), (app(few), app(many), llc)


def test_a_full_table_keeps_new_flows_on_the_slow_path():
    r = run(16, entries=8)
    assert r["app"]["flows"] == 8 and r["app"]["full"] == r["app"]["misses"] > 0


def test_bad_table_sizes_name_the_field():
    with pytest.raises(ConfigError, match="host.app.flow_table.entries"):
        run(1, entries=1000)
