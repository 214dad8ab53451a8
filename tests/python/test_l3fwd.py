"""l3fwd (DPDK's LPM forwarding example) on the poll-mode driver of the
xeon-e3-1230v2: frames addressed to the station behind the other port are
routed there (TTL and checksum updated, next-hop addresses written: scapy
reads them); frames whose route leads back where they came from are
dropped and counted."""

from __future__ import annotations

import pytest

import hostsim


def run(tmp_path=None, **lg):
    lg = {"size": 64, "rate": "5Mpps", "traffic": "uni", **lg}
    if tmp_path is not None:
        lg["capture_rx"] = str(tmp_path / "rx.pcap")
    return hostsim.simulate({
        "preset": "xeon-e3-1230v2", "app": "l3fwd",
        "host": {"ports": 2, "cores": 1}, "loadgen": lg,
        "sim": {"duration": "3ms", "warmup": "1ms"}})


def test_routed_to_the_other_port_with_ttl_and_addresses(tmp_path):
    scapy = pytest.importorskip("scapy.all")
    r = run(tmp_path)
    acc = r["accounting"]["measured"]
    assert r["warnings"] == [] and acc["dropped"] == 0 and acc["returned"] == acc["sent"] > 9000
    assert r["app"]["other_port"] == 0 and r["app"]["routed"] >= acc["returned"]
    for f in scapy.rdpcap(str(tmp_path / "rx.pcap"))[:50]:
        ip = f[scapy.IP]
        assert (ip.dst, ip.ttl) == ("10.0.1.1", 63)
        chk = ip.chksum
        del ip.chksum
        assert scapy.IP(bytes(ip)).chksum == chk
        assert (f.src, f.dst) == ("02:00:00:00:01:02", "02:00:00:00:01:01")


def test_a_route_back_to_the_ingress_port_is_dropped_and_counted():
    # Addressed to the host port itself (10.0.0.2): its route is port 0's
    # subnet, but port 0's stream transmits on port 1.
    r = run(address="host")
    acc = r["accounting"]["measured"]
    assert acc["returned"] == 0 and r["app"]["other_port"] >= acc["sent"] > 9000
    assert r["app"]["routed"] == 0


def test_the_decision_is_the_lookup_and_rewrite():
    r = run()
    host = hostsim.resolve({"preset": "xeon-e3-1230v2", "app": "l3fwd"})["host"]
    f, cpi, llc = host["app"]["l3fwd"], host["cpu"]["base_cpi"], host["mem"]["llc"]["latency_cycles"]
    # The instructions at the core's CPI, and the header line's first read,
    # an LLC hit (the NIC wrote it there with DDIO; the lookup waits for
    # it); the tbl24 line stays in L1.
    assert r["cpu"]["cycles_per_packet"]["app"] == pytest.approx((f["lookup_instr"] + f["forward_instr"]) * cpi + llc, rel=0.02)


def test_addressing_the_stations_needs_synthetic_frames_and_another_port():
    from hostsim.units import ConfigError
    with pytest.raises(ConfigError, match=r"loadgen\.address.*stations"):
        hostsim.simulate({"preset": "xeon-e3-1230v2", "app": "testpmd", "host": {"ports": 2},
                          "loadgen": {"address": "stations", "memcached": True}})
    # One port: no station across, the frames keep the host port's address,
    # whose route is the port itself, where its stream transmits.
    r = hostsim.simulate({"preset": "xeon-e3-1230v2", "app": "l3fwd", "host": {"ports": 1},
                          "loadgen": {"rate": "1Mpps"}, "sim": {"duration": "1ms"}})
    assert r["app"]["other_port"] == 0 and r["accounting"]["measured"]["returned"] == r["accounting"]["measured"]["sent"] > 500
