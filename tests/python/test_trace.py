"""Trace mode: pcaps written by scapy replay with their own gaps (exact at the
file's resolution) or at a requested rate, and come back from the reflector.

What the generator sent is read back from its transmit capture with scapy's
raw reader (nanosecond timestamps as integers), so the comparison is exact.
"""

from decimal import Decimal

import dpkt
import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.utils import PcapWriter, RawPcapReader, wrpcap

import hostsim

EPOCH = Decimal(1_700_000_000)
SRC_MAC = "02:00:00:00:00:99"
DST_MAC = "02:00:00:00:00:02"  # the generator's default dst_mac
# Gaps chosen to be irregular, each far longer than a frame's time on a 200 Gbps wire.
GAPS_US = [3, 1, 250, 7, 13, 2, 101, 5, 1, 60]
GAPS_NS = [53, 1001, 77, 4096, 999, 60, 12345, 61, 501, 5]


def _packets(n, dport=11211, payload=24):
    return [
        Ether(src=SRC_MAC, dst="ff:ff:ff:ff:ff:ff")
        / IP(src="192.168.1.1", dst="192.168.1.2")
        / UDP(sport=40000 + i, dport=dport)
        / (bytes([i % 256]) * payload)
        for i in range(n)
    ]


def _stamp(pkts, gaps, unit):
    t = EPOCH + Decimal("0.123456789") if unit == Decimal("1e-9") else EPOCH + Decimal("0.5")
    for p, g in zip(pkts, [0] + gaps):
        t += g * unit
        p.time = t
    return pkts


def _read_ns(path):
    """(time in ns as an integer, frame bytes) for every frame of a pcap, via scapy."""
    out = []
    with RawPcapReader(str(path)) as r:
        scale = 1 if r.nano else 1000
        for data, meta in r:
            out.append((meta.sec * 1_000_000_000 + meta.usec * scale, bytes(data)))
    return out


def _gaps(times):
    return [b - a for a, b in zip(times, times[1:])]


def _run(tmp_path, trace_path, **loadgen):
    cfg = {
        "sim": {"duration": "2ms", "warmup": "0ps", "drain": "50us"},
        "loadgen": {"capture_tx": str(tmp_path / "tx.pcap"), "capture_rx": str(tmp_path / "rx.pcap"),
                    "trace": {"path": str(trace_path), **loadgen.pop("trace", {})}, **loadgen},
        "reflector": {"service_time": "100ns"},
    }
    return hostsim.simulate(dict(cfg, preset="a72-quad"))


@pytest.fixture(scope="module")
def us_trace(tmp_path_factory):
    path = tmp_path_factory.mktemp("trace") / "us.pcap"
    pkts = _stamp(_packets(len(GAPS_US) + 1), GAPS_US, Decimal("1e-6"))
    wrpcap(str(path), pkts)
    return path, pkts


@pytest.fixture(scope="module")
def ns_trace(tmp_path_factory):
    path = tmp_path_factory.mktemp("trace") / "ns.pcap"
    pkts = _stamp(_packets(len(GAPS_NS) + 1), GAPS_NS, Decimal("1e-9"))
    w = PcapWriter(str(path), nano=True, linktype=1)
    w.write(pkts)
    w.close()
    return path, pkts


def test_us_trace_replays_with_its_gaps_and_its_bytes(tmp_path, us_trace):
    path, pkts = us_trace
    result = _run(tmp_path, path)
    sent = _read_ns(tmp_path / "tx.pcap")
    assert len(sent) == len(pkts) == result.loadgen.tx_packets
    assert _gaps([t for t, _ in sent]) == [g * 1000 for g in GAPS_US]
    assert sent[0][0] == 0
    for (_, raw), orig in zip(sent, pkts):
        want = bytes(orig)
        # Only the destination MAC changes; short frames are padded to 60 B (64 B on the wire).
        assert raw[:6] == bytes.fromhex(DST_MAC.replace(":", ""))
        assert raw[6:len(want)] == want[6:] and len(raw) == max(len(want), 60)
        assert raw[len(want):] == bytes(len(raw) - len(want))


def test_ns_trace_replays_ps_exact_and_scaled(tmp_path, ns_trace):
    path, pkts = ns_trace
    result = _run(tmp_path, path)
    times = [t for t, _ in _read_ns(tmp_path / "tx.pcap")]
    assert _gaps(times) == GAPS_NS
    assert result.loadgen.trace_frames_sent == len(pkts)
    # time_scale 2: every gap doubled, still exact.
    _run(tmp_path, path, trace={"time_scale": 2})
    assert _gaps([t for t, _ in _read_ns(tmp_path / "tx.pcap")]) == [2 * g for g in GAPS_NS]


def test_reflector_returns_every_frame_with_swapped_macs(tmp_path, us_trace):
    path, pkts = us_trace
    result = _run(tmp_path, path)
    lg = result.loadgen
    assert lg.tx_packets == lg.rx_packets == lg.rx_untagged_packets == len(pkts)
    assert lg.lost_packets == 0 and lg.trace_complete
    with open(tmp_path / "rx.pcap", "rb") as f:
        back = [dpkt.ethernet.Ethernet(buf) for _, buf in dpkt.pcap.Reader(f)]
    assert len(back) == len(pkts)
    for eth, orig in zip(back, pkts):
        assert eth.src == bytes.fromhex(DST_MAC.replace(":", ""))
        assert eth.dst == bytes.fromhex(SRC_MAC.replace(":", ""))
        assert eth.data.data.dport == 11211 and eth.data.data.data == bytes(orig[UDP].payload)


def test_rate_override_sends_at_the_requested_rate(tmp_path, us_trace):
    path, pkts = us_trace
    result = _run(tmp_path, path, rate="2Mpps", trace={"timing": "rate", "loop": True})
    lg = result.loadgen
    assert lg.offered_pps == pytest.approx(2e6, rel=1e-3)
    assert lg.achieved_pps == pytest.approx(2e6, rel=1e-3)
    assert lg.rx_packets == lg.tx_packets == 4000
    sent = _read_ns(tmp_path / "tx.pcap")
    assert set(_gaps([t for t, _ in sent])) == {500}
    # The frames cycle through the trace in order.
    n = len(pkts)
    assert all(raw[34:36] == sent[i % n][1][34:36] for i, (_, raw) in enumerate(sent))
    assert lg.trace_passes == 4000 // n


def test_oversize_frames_are_reported_and_the_port_filter_applies(tmp_path):
    path = tmp_path / "mixed.pcap"
    pkts = _packets(4) + _packets(2, payload=1600) + _packets(3, dport=53)
    _stamp(pkts, [1] * (len(pkts) - 1), Decimal("1e-6"))
    wrpcap(str(path), pkts)
    result = _run(tmp_path, path, trace={"udp_port": 11211})
    lg = result.loadgen
    assert (lg.trace_oversize_frames, lg.trace_filtered_frames, lg.tx_packets) == (2, 3, 4)
    assert any("max_frame_bytes" in w and "2 of 9" in w for w in result.warnings)
    result = _run(tmp_path, path, trace={"max_frame_bytes": 9216})
    assert (result.loadgen.trace_oversize_frames, result.loadgen.tx_packets) == (0, 9)


def test_cli_pcap_flag_and_bad_files(tmp_path, cli, us_trace):
    path, pkts = us_trace
    ok = cli("run", "--preset", "a72-quad", "--pcap", str(path), "--warmup", "0ps", "--duration", "1ms")
    assert ok.returncode == 0, ok.stderr
    assert f"{len(pkts)} frames sent" in ok.stdout
    bad = tmp_path / "bad.pcap"
    bad.write_bytes(b"\xd4\xc3\xb2\xa1\x02\x00\x04\x00" + b"\x00" * 8)
    for cmd in ("run", "msb"):
        proc = cli(cmd, "--pcap", str(bad), "--duration", "100us", "--warmup", "0ps")
        assert proc.returncode == 2, proc.stderr
        assert "bad.pcap" in proc.stderr and "Traceback" not in proc.stderr
    proc = cli("run", "--pcap", str(tmp_path / "missing.pcap"))
    assert proc.returncode == 2 and "missing.pcap" in proc.stderr and "Traceback" not in proc.stderr
    # 0 and a negative scale are refused with the same range (the schema's and the core's agree).
    for scale in ("0", "-1"):
        proc = cli("run", "--pcap", str(path), "--set", f"loadgen.trace.time_scale={scale}")
        assert proc.returncode == 2
        assert "loadgen.trace.time_scale: invalid value" in proc.stderr and "(allowed: > 0)" in proc.stderr, proc.stderr
    proc = cli("run", "--pcap", str(path), "--set", "loadgen.trace.speed=2")
    assert proc.returncode == 2 and "unknown field 'loadgen.trace.speed'" in proc.stderr


def test_msb_replays_the_trace_at_each_trial_rate(us_trace):
    path, _ = us_trace
    cfg = {"preset": "a72-quad", "sim": {"duration": "100us", "warmup": "0ps", "drain": "50us"},
           "loadgen": {"trace": {"path": str(path)}}, "reflector": {"service_time": "100ns", "queue_frames": 16}}
    result = hostsim.msb(cfg, resolution=0.05)
    m = result.msb
    # The line rate is the trace's (66 B captured: 70 B frames), and the reflector's 10 Mpps bounds the MSB.
    assert m.mean_frame_bytes == 70
    assert m.line_rate_pps == pytest.approx(200e9 / (90 * 8))
    assert 9e6 <= m.pps <= 10.5e6, m.pps
    assert any("timing = rate" in w for w in result.warnings)


def test_a_trace_faster_than_the_link_leaves_at_line_rate_and_says_by_how_much(tmp_path):
    # 3000 frames of 82 B (FCS included) 0.51 ns apart on a 200 Gb/s link
    # (a72-quad): their timestamps ask for 10x line rate.
    n, gap_ns = 3000, Decimal("0.51")
    pkts = _stamp(_packets(n), [gap_ns] * (n - 1), Decimal("1e-9"))
    path = tmp_path / "fast.pcap"
    w = PcapWriter(str(path), nano=True, linktype=1)
    w.write(pkts)
    w.close()
    r = _run(tmp_path, path, trace={"tag": False}, capture_tx=None, capture_rx=None).to_dict()
    lg = r["loadgen"]
    wire_bits = (lg["tx_bytes"] + 20 * lg["tx_packets"]) * 8
    assert wire_bits / (lg["measured_window_ps"] / 1e12) <= lg["link_rate_bps"] * (1 + 1e-9) + (82 + 20) * 8 / (
        lg["measured_window_ps"] / 1e12)
    assert lg["trace_delayed_frames"] == n - 1 and lg["trace_delay_ps"] > 0
    assert any("asks for more than the link carries" in w for w in r["warnings"])
    # Untagged frames into an overloaded reflector: the loss is the reflector's own drop count.
    assert lg["lost_packets"] == r["reflector"]["queue_drops"] > 0
    assert r["accounting"]["measured"]["drops"]["device_queue"] == lg["lost_packets"]


def test_fix_checksums_recomputes_ip_udp_and_tcp_checksums_as_tcpreplay(tmp_path):
    from scapy.layers.inet import TCP
    from scapy.layers.inet6 import IPv6

    # As captured with checksum offload: placeholders where the checksums go.
    pkts = [
        Ether(src=SRC_MAC, dst="ff:ff:ff:ff:ff:ff") / IP(src="10.0.0.1", dst="10.0.0.2", chksum=0x1234)
        / UDP(sport=1, dport=9, chksum=0xdead) / (b"u" * 30),
        Ether(src=SRC_MAC, dst="ff:ff:ff:ff:ff:ff") / IP(src="10.0.0.1", dst="10.0.0.2", chksum=0)
        / TCP(sport=2, dport=80, chksum=0xbeef) / (b"t" * 30),
        Ether(src=SRC_MAC, dst="ff:ff:ff:ff:ff:ff") / IPv6(src="fe80::1", dst="fe80::2")
        / UDP(sport=3, dport=9, chksum=0x0bad) / (b"6" * 30),
    ]
    _stamp(pkts, [1, 1], Decimal("1e-6"))
    path = tmp_path / "offload.pcap"
    wrpcap(str(path), pkts)

    def sent(fix):
        r = _run(tmp_path, path, trace={"fix_checksums": fix}).to_dict()
        return r, [Ether(data) for data, _ in RawPcapReader(str(tmp_path / "tx.pcap"))]

    r, frames = sent(True)
    assert r["loadgen"]["trace_checksummed_frames"] == 3
    for f in frames:
        for layer in (IP, UDP, TCP):
            if layer in f:
                got = f[layer].chksum
                del f[layer].chksum
                assert Ether(bytes(f))[layer].chksum == got, (layer.__name__, f.summary())
    _, untouched = sent(False)
    assert untouched[0][IP].chksum == 0x1234 and untouched[1][TCP].chksum == 0xbeef
