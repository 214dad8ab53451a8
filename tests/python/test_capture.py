"""Captured pcaps read back by third-party readers (dpkt, scapy, tshark) match what was sent."""

import shutil
import struct
import subprocess

import dpkt
import pytest

import hostsim

FLOWS = 3
TAG_MAGIC = 0x4853


def _read(path):
    with open(path, "rb") as f:
        return [(ts, bytes(buf)) for ts, buf in dpkt.pcap.Reader(f)]


@pytest.fixture(scope="module")
def captured(tmp_path_factory, short):
    d = tmp_path_factory.mktemp("capture")
    cfg = short(
        # warm-up 0, so the counters cover every frame the generator sends
        sim={"duration": "100us", "warmup": "0ps", "drain": "50us"},
        loadgen={"rate": "1Mpps", "size": "64,128,1518", "flows": FLOWS,
                 "capture_tx": str(d / "tx.pcap"), "capture_rx": str(d / "rx.pcap")},
        reflector={"service_time": "100ns"},
    )
    result = hostsim.simulate(cfg)
    return result, d / "tx.pcap", d / "rx.pcap"


def test_frame_counts_match_counters(captured):
    result, tx, rx = captured
    lg = result.loadgen
    assert lg.tx_packets == 100 and lg.rx_packets == 100
    assert len(_read(tx)) == lg.tx_packets
    assert len(_read(rx)) == lg.rx_packets
    assert sum(len(b) + 4 for _, b in _read(tx)) == lg.tx_bytes  # pcap frames omit the 4 B FCS


def test_tx_frames_are_what_the_generator_built(captured):
    result, tx, _ = captured
    frames = _read(tx)
    sizes = set()
    for i, (ts, raw) in enumerate(frames):
        eth = dpkt.ethernet.Ethernet(raw)
        assert eth.src == bytes.fromhex("020000000001") and eth.dst == bytes.fromhex("020000000002")
        ip = eth.data
        assert isinstance(ip, dpkt.ip.IP)
        assert (ip.src, ip.dst) == (bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]))
        assert ip.len == len(raw) - 14
        udp = ip.data
        assert isinstance(udp, dpkt.udp.UDP)
        assert udp.dport == 9 and 1024 <= udp.sport < 1024 + FLOWS
        assert udp.ulen == len(raw) - 14 - 20
        magic, flow, seq, tx_ps = struct.unpack("!HHIQ", raw[42:58])
        assert magic == TAG_MAGIC and seq == i and flow == udp.sport - 1024
        # The tag's transmit time agrees with the pcap timestamp (ns resolution).
        assert abs(tx_ps / 1e12 - float(ts)) < 1e-8
        sizes.add(len(raw) + 4)
    assert sizes <= {64, 128, 1518} and len(sizes) > 1
    assert {dpkt.ethernet.Ethernet(raw).data.data.sport for _, raw in frames} == {1024, 1025, 1026}


def test_rx_frames_have_swapped_macs_and_same_payload(captured):
    _, tx, rx = captured
    sent = {struct.unpack("!I", raw[46:50])[0]: raw for _, raw in _read(tx)}
    for _, raw in _read(rx):
        seq = struct.unpack("!I", raw[46:50])[0]
        orig = sent[seq]
        assert raw[0:6] == orig[6:12] and raw[6:12] == orig[0:6]
        assert raw[12:] == orig[12:]


def test_scapy_reads_valid_ipv4_checksums(captured):
    scapy_all = pytest.importorskip("scapy.all")
    _, tx, _ = captured
    packets = scapy_all.rdpcap(str(tx))
    assert len(packets) == 100
    for p in packets:
        ip = p[scapy_all.IP]
        original = ip.chksum
        del ip.chksum
        assert scapy_all.IP(bytes(ip)).chksum == original
        assert p[scapy_all.UDP].dport == 9


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")
def test_tshark_reads_the_frame_lengths(captured):
    _, tx, rx = captured
    for path in (tx, rx):
        out = subprocess.run(["tshark", "-r", str(path), "-T", "fields", "-e", "frame.len"],
                             capture_output=True, text=True, check=True, timeout=60).stdout.split()
        assert [int(x) for x in out] == [len(b) for _, b in _read(path)]


def test_poisson_interarrival_from_the_capture(tmp_path, short):
    # 100 000 frames: mean inter-arrival within 1 %, coefficient of variation within 2 % of 1.
    pcap = tmp_path / "poisson.pcap"
    cfg = short(sim={"duration": "100ms", "warmup": "0ps"},
                loadgen={"rate": "1Mpps", "interarrival": "poisson", "capture_tx": str(pcap)},
                reflector={"service_time": "1ns"})
    hostsim.simulate(cfg)
    ts = [struct.unpack("!Q", raw[50:58])[0] for _, raw in _read(pcap)]
    gaps = [b - a for a, b in zip(ts, ts[1:])]
    assert len(gaps) > 95_000
    mean = sum(gaps) / len(gaps)
    std = (sum((g - mean) ** 2 for g in gaps) / (len(gaps) - 1)) ** 0.5
    assert mean == pytest.approx(1e6, rel=0.01)  # 1 us in ps
    assert std / mean == pytest.approx(1.0, rel=0.02)


def test_capture_limit_and_unwritable_path(tmp_path, short):
    pcap = tmp_path / "limited.pcap"
    hostsim.simulate(short(loadgen={"rate": "1Mpps", "capture_tx": str(pcap), "capture_limit": 7}))
    assert len(_read(pcap)) == 7
    with pytest.raises(OSError, match="no-such-dir"):
        hostsim.simulate(short(loadgen={"capture_tx": str(tmp_path / "no-such-dir" / "x.pcap")}))
