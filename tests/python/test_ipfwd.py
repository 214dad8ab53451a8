"""ipfwd: Linux IP forwarding on the kernel stack of the xeon-e3-1230v2,
port 0 to port 1, the packets' TTL, checksum and addresses rewritten (read
back by scapy), the cycles split into the stack's stages and the forwarding
decision, and what the forwarding path costs against the socket path."""

from __future__ import annotations

import pytest

import hostsim


def run(tmp_path=None, rate="0.5Mpps", **sim):
    lg = {"size": 64, "rate": rate, "traffic": "uni"}
    if tmp_path is not None:
        lg["capture_rx"] = str(tmp_path / "rx.pcap")
    return hostsim.simulate({
        "preset": "xeon-e3-1230v2", "app": "ipfwd", "stack": "kernel",
        # Two cores, a queue pair each: core 0 forwards port 0's traffic,
        # core 1 serves port 1, where nothing arrives.
        "host": {"ports": 2, "cores": 2}, "loadgen": lg,
        "sim": {"duration": "3ms", "warmup": "1ms", **sim}})


def test_packets_leave_on_the_other_port_routed(tmp_path):
    scapy = pytest.importorskip("scapy.all")
    r = run(tmp_path)
    acc = r["accounting"]["measured"]
    assert r["warnings"] == [] and acc["dropped"] == 0 and acc["returned"] == acc["sent"] > 900
    assert r["kernel"]["forwarded"] >= acc["returned"] and r["kernel"]["not_forwarded"] == 0
    # The generator's capture: every frame that came back, warm-up included.
    frames = scapy.rdpcap(str(tmp_path / "rx.pcap"))
    assert len(frames) == r["capture"]["rx_frames"] >= acc["returned"]
    for f in frames[:50]:
        ip = f[scapy.IP]
        assert ip.ttl == 63
        chk = ip.chksum
        del ip.chksum
        assert scapy.IP(bytes(ip)).chksum == chk, "checksum updated in place"
        # From the DUT's port 1 to the generator's port 1 station.
        assert (f.src, f.dst) == ("02:00:00:00:01:02", "02:00:00:00:01:01")


def test_cycles_split_into_the_stack_and_the_forwarding_decision():
    r = run()
    cpp = r["cores"][0]["cycles_per_packet"]
    # The receive side (interrupt, driver, skb), the forwarding decision
    # (route, TTL, neighbour) and the transmit side (qdisc, driver) all work;
    # no socket, no system call, no copy.
    for k in ("irq", "rx", "skb", "qdisc", "tx"):
        assert cpp[k] > 10, (k, cpp)
    # The decision and IP receive and output are their instruction counts at the core's
    # CPI: the trie and neighbour lines stay in L1, the header line was read
    # by the driver. Each trie line after the first is a dependent load: it
    # waits the L1D's load-to-use latency for the one before.
    host = hostsim.resolve({"preset": "xeon-e3-1230v2", "app": "ipfwd", "stack": "kernel"})["host"]
    f, cpi = host["app"]["ipfwd"], host["cpu"]["base_cpi"]
    chase = (f["fib_lines"] - 1) * host["mem"]["l1d"]["latency_cycles"]
    assert cpp["app"] == pytest.approx((f["route_instr"] + f["forward_instr"]) * cpi + chase, rel=0.01)
    # IP receive and IP output, the stack's own stages.
    k = host["kernel"]["costs"]
    assert cpp["proto"] == pytest.approx((k["ip_rcv_instr"] + k["ip_output_instr"]) * cpi, rel=0.01)
    assert cpp["syscall"] == cpp["copy"] == cpp["sched"] == 0
    assert r["kernel"]["syscalls"] == 0 and r["kernel"]["datagrams_received"] == 0
    assert r["cores"][1]["packets"] == 0


def test_forwarding_saturates_the_core_with_core_drops():
    # 5 Mpps into a core that forwards about 3.3: the buffers fill in ~10 ms.
    r = run(rate="5Mpps", duration="40ms", warmup="25ms")
    d = r["ports"][0]["drops"]
    assert d["core"] > 0 and d["core"] > 10 * d["dma"], d
    busy = r["cores"][0]["cycles_per_packet"]
    assert busy["idle"] < 0.05 * busy["total"]


def one_core_both_ways(rate: str, duration: str, warmup: str):
    return hostsim.simulate({
        "preset": "xeon-e3-1230v2", "app": "ipfwd", "stack": "kernel",
        "host": {"ports": 2, "cores": 1}, "loadgen": {"size": 64, "rate": rate, "traffic": "bidir"},
        "sim": {"duration": duration, "warmup": warmup}})


def test_one_core_forwards_both_ways_with_a_napi_context_per_port():
    r = one_core_both_ways("0.5Mpps", "3ms", "1ms")
    acc = r["accounting"]["measured"]
    assert r["warnings"] == [] and acc["dropped"] == 0 and acc["returned"] == acc["sent"] > 1900
    # Each port's traffic leaves on the other, all from core 0.
    assert r["ports"][0]["tx_packets"] == pytest.approx(r["ports"][1]["tx_packets"], abs=2) and r["ports"][0]["tx_packets"] > 900
    assert r["cores"][0]["packets"] >= acc["returned"]
    # The same work per packet as one way (the split does not depend on the direction).
    one_way = run()["cores"][0]["cycles_per_packet"]
    both = r["cores"][0]["cycles_per_packet"]
    for k in ("rx", "skb", "proto", "app", "qdisc", "tx"):
        assert both[k] == pytest.approx(one_way[k], rel=0.05), k


def test_one_core_past_its_capacity_drops_on_both_ports():
    r = one_core_both_ways("3Mpps", "40ms", "30ms")
    acc = r["accounting"]["measured"]
    # 6 Mpps offered to a core that forwards about 2: both ports lose
    # frames in their RX FIFOs (the core does not drain the rings), and
    # neither direction starves the other.
    assert acc["drops"]["rx_fifo_core"] > 0.4 * acc["sent"]
    tx = [p["tx_packets"] for p in r["ports"]]
    assert min(tx) > 0.8 * max(tx) > 0
