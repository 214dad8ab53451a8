"""bridge: the Linux bridge on the kernel stack of the xeon-e3-1230v2. It
learns where each source address lives, floods what it does not know,
forwards what it does, passes frames for its own ports up the host's
stack, clones a promiscuous bridge's frames up the stack too, and carries
bridge netfilter's hooks; the frames leave unchanged (scapy reads them)."""

from __future__ import annotations

import pytest

import hostsim


def run(tmp_path=None, traffic="uni", rate="0.5Mpps", loadgen=None, **bridge):
    lg = {"size": 64, "rate": rate, "traffic": traffic, **(loadgen or {})}
    if tmp_path is not None:
        lg["capture_rx"] = str(tmp_path / "rx.pcap")
    return hostsim.simulate({
        "preset": "xeon-e3-1230v2", "app": "bridge", "stack": "kernel",
        # Two cores, a queue pair each (one per port).
        "host": {"ports": 2, "cores": 2, "app": {"bridge": bridge}}, "loadgen": lg,
        "sim": {"duration": "3ms", "warmup": "1ms"}})


def test_one_direction_floods_unchanged_frames(tmp_path):
    scapy = pytest.importorskip("scapy.all")
    r = run(tmp_path)
    acc, br = r["accounting"]["measured"], r["app"]
    assert r["warnings"] == [] and acc["dropped"] == 0 and acc["returned"] == acc["sent"] > 900
    # The station behind port 1 never speaks: every frame floods (to port 1
    # alone, with no clone); the generator's port 0 was learned once.
    assert br["flooded"] == r["kernel"]["forwarded"] >= acc["returned"] and br["known"] == 0
    assert br["learned"] == 0 and br["fdb_entries"] == 3   # learned in the warm-up, beside the two ports
    assert r["kernel"]["clones"] == 0
    frames = scapy.rdpcap(str(tmp_path / "rx.pcap"))
    for f in frames[:50]:
        # From the station behind port 0 to the one behind port 1, as sent.
        assert (f.src, f.dst, f[scapy.IP].ttl) == ("02:00:00:00:00:01", "02:00:00:00:01:01", 64)


def test_both_directions_learn_and_forward_to_known_ports():
    r = run(traffic="bidir")
    acc, br = r["accounting"]["measured"], r["app"]
    assert r["warnings"] == [] and acc["dropped"] == 0
    # Each station is heard on its port, after which frames to it are known
    # (the first frame of each direction flooded in the warm-up).
    assert br["fdb_entries"] == 4 and br["flooded"] == 0
    assert br["known"] == r["kernel"]["forwarded"] == br["refreshed"]


def test_frames_for_the_bridges_own_ports_go_up_and_are_not_forwarded():
    r = run(loadgen={"address": "host"})
    acc, br = r["accounting"]["measured"], r["app"]
    assert acc["returned"] == 0 and br["local"] == r["kernel"]["not_forwarded"] > 900
    assert acc["drops"]["app"] == acc["dropped"] == acc["sent"]
    assert "answered none" in r["warnings"][0]


def test_the_split_has_no_ip_layer_and_netfilter_costs_the_decision():
    on, off = run(), run(nf_call_iptables=False)
    host = hostsim.resolve({"preset": "xeon-e3-1230v2", "app": "bridge", "stack": "kernel"})["host"]
    b, cpi = host["app"]["bridge"], host["cpu"]["base_cpi"]
    c_on, c_off = on["cores"][0]["cycles_per_packet"], off["cores"][0]["cycles_per_packet"]
    # Taken at the rx_handler: no IP receive.
    assert c_on["proto"] == c_off["proto"] == 0
    # The decision: the bridge's path and two FDB lookups, plus three
    # iptables hooks with netfilter; the nf_bridge_info is memory management.
    assert c_off["app"] == pytest.approx((b["handle_instr"] + 2 * b["fdb_instr"]) * cpi, rel=0.02)
    assert c_on["app"] - c_off["app"] == pytest.approx(3 * b["nf_hook_instr"] * cpi, rel=0.02)
    assert c_on["mempool"] - c_off["mempool"] == pytest.approx(b["nf_bridge_instr"] * cpi, rel=0.05)


def test_a_promiscuous_bridge_clones_each_frame_up_the_stack():
    r, base = run(promisc=True), run()
    assert r["kernel"]["clones"] == r["kernel"]["forwarded"] > 900
    assert r["accounting"]["measured"]["dropped"] == 0
    c, c0 = r["cores"][0]["cycles_per_packet"], base["cores"][0]["cycles_per_packet"]
    # The clone's sk_buff (allocated, copied, freed) and its IP receive.
    assert c["skb"] > c0["skb"] + 50 and c["proto"] > 50 and c0["proto"] == 0


def test_one_core_bridges_both_ways():
    r = hostsim.simulate({
        "preset": "xeon-e3-1230v2", "app": "bridge", "stack": "kernel",
        "host": {"ports": 2, "cores": 1}, "loadgen": {"size": 64, "rate": "0.5Mpps", "traffic": "bidir"},
        "sim": {"duration": "3ms", "warmup": "1ms"}})
    acc, br = r["accounting"]["measured"], r["app"]
    assert r["warnings"] == [] and acc["dropped"] == 0 and acc["returned"] == acc["sent"] > 1900
    # Both stations learned on their ports; every frame goes to a known port.
    assert br["fdb_entries"] == 4 and br["flooded"] == 0 and br["known"] == r["kernel"]["forwarded"]
    assert r["ports"][0]["tx_packets"] > 900 and r["ports"][1]["tx_packets"] > 900
