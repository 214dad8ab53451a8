"""ovs: Open vSwitch's kernel datapath on the kernel stack of the
xeon-e3-1230v2: frames taken at the port's rx_handler (no IP layer), an
exact-match flow table of 576 B entries, one upcall per new flow, hits
afterwards, and lookups that miss in L2 once the active flows' entries
outgrow it."""

from __future__ import annotations

import pytest

import hostsim


def run(flows: int, warmup: str = "20ms", tmp_path=None) -> hostsim.Result:
    lg = {"size": 64, "rate": "0.5Mpps", "flows": flows, "traffic": "uni"}
    if tmp_path is not None:
        lg["capture_rx"] = str(tmp_path / "rx.pcap")
    return hostsim.simulate({
        "preset": "xeon-e3-1230v2", "app": "ovs", "stack": "kernel",
        "host": {"ports": 2, "cores": 2}, "loadgen": lg,
        "sim": {"duration": f"{float(warmup[:-2]) + 2}ms", "warmup": warmup}})


def test_each_flow_upcalls_once_then_hits_and_frames_pass_unchanged(tmp_path):
    scapy = pytest.importorskip("scapy.all")
    r = run(8, tmp_path=tmp_path)
    acc = r["accounting"]["measured"]
    assert r["warnings"] == [] and acc["dropped"] == 0 and acc["returned"] == acc["sent"] > 900
    assert r["app"]["flows"] == 8 and r["app"]["misses"] == 0
    assert r["app"]["hits"] == r["kernel"]["forwarded"] >= acc["returned"]
    frames = scapy.rdpcap(str(tmp_path / "rx.pcap"))
    assert {f[scapy.UDP].sport for f in frames} == set(range(1024, 1032))
    assert all((f.dst, f[scapy.IP].ttl) == ("02:00:00:00:00:02", 64) for f in frames[:50])


def test_the_decision_is_the_datapaths_work_with_no_ip_layer():
    r = run(1)
    cpp = r["cores"][0]["cycles_per_packet"]
    host = hostsim.resolve({"preset": "xeon-e3-1230v2", "app": "ovs", "stack": "kernel"})["host"]
    o, cpi = host["app"]["ovs"], host["cpu"]["base_cpi"]
    assert host["app"]["ovs"]["entry_bytes"] == 576
    assert cpp["proto"] == 0
    # One flow: the bucket and entry lines stay in L1.
    assert cpp["app"] == pytest.approx((o["key_instr"] + o["lookup_instr"] + o["actions_instr"]) * cpi, rel=0.02)


def test_the_first_frames_pay_the_upcall():
    cold, warm = run(16, warmup="1us"), run(16)
    assert cold["app"]["misses"] == 15 and cold["app"]["flows"] == 16
    host = hostsim.resolve({"preset": "xeon-e3-1230v2", "app": "ovs", "stack": "kernel"})["host"]
    upcall = 15 * host["app"]["ovs"]["upcall_instr"] * host["cpu"]["base_cpi"] / cold["cores"][0]["packets"]
    extra = cold["cores"][0]["cycles_per_packet"]["app"] - warm["cores"][0]["cycles_per_packet"]["app"]
    assert extra == pytest.approx(upcall, rel=0.1), (extra, upcall)


def test_lookups_miss_l2_when_the_flows_outgrow_it():
    # 4000 flows × 576 B = 2.3 MB of entries: beyond the 256 KiB L2, inside the 8 MiB LLC.
    few, many = run(8), run(4000, warmup="100ms")
    assert many["app"]["misses"] == 0 and many["app"]["flows"] == 4000
    per = lambda r, lvl: r["mem"][lvl]["misses"] / r["cpu"]["packets"]
    assert per(many, "l2") > per(few, "l2") + 1.5
    assert per(many, "llc") < 0.5 + per(few, "llc")
    assert many["cores"][0]["cycles_per_packet"]["app"] > few["cores"][0]["cycles_per_packet"]["app"] + 20


def test_zipf_popularity_keeps_the_hot_flows_in_cache():
    # 4000 flows: in turn, every lookup walks 2.3 MB of entries and misses
    # L2; with Zipf popularity (skew 1.2) most frames hit a few hot flows.
    cfg = lambda skew: {
        "preset": "xeon-e3-1230v2", "app": "ovs", "stack": "kernel", "host": {"ports": 2, "cores": 1},
        "loadgen": {"size": 64, "rate": "0.5Mpps", "flows": 4000, "flow_skew": skew, "traffic": "uni"},
        "sim": {"duration": "102ms", "warmup": "100ms"}}
    uniform, zipf = hostsim.simulate(cfg(0)), hostsim.simulate(cfg(1.2))
    per = lambda r: r["mem"]["l2"]["misses"] / r["cpu"]["packets"]
    assert per(zipf) < per(uniform) - 1.5
    # In the same time the rare flows are not all seen yet: some still
    # arrive for the first time in the window and pay their upcall there.
    assert zipf["app"]["flows"] < uniform["app"]["flows"] == 4000
    assert zipf["app"]["misses"] > 0 == uniform["app"]["misses"]
