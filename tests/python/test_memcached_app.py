"""MemcachedDPDK (`--app memcached`) driven by a replayed request trace written by scapy."""

import struct

from scapy.all import Ether, IP, UDP, Raw, rdpcap, wrpcap

import hostsim


def _request(req_id: int, ascii_cmd: bytes) -> Ether:
    header = struct.pack("!HHHH", req_id, 0, 1, 0)
    return (Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02") / IP(src="10.0.0.1", dst="10.0.0.2")
            / UDP(sport=40000, dport=11211) / Raw(header + ascii_cmd))


def test_replayed_requests_get_memcached_answers(tmp_path):
    cmds = [b"set greeting 7 0 5\r\nhello\r\n", b"get greeting\r\n", b"get missing\r\n",
            b"set big 0 0 1380\r\n" + b"x" * 1380 + b"\r\n", b"get big\r\n"]
    frames = [_request(i, c) for i, c in enumerate(cmds)]
    for i, f in enumerate(frames):
        f.time = i * 5e-6
    wrpcap(str(tmp_path / "req.pcap"), frames)
    r = hostsim.simulate({
        "app": "memcached", "preset": "altra", "link": {"propagation": "1us"},
        "sim": {"duration": "100us", "warmup": "0ps"},
        "loadgen": {"trace": {"path": str(tmp_path / "req.pcap"), "pad_runts": True},  # unpadded, as captured on a host
                    "capture_rx": str(tmp_path / "rep.pcap")},
        "host": {"app": {"kvs": {"max_value": "2KiB"}}},
    })
    assert r.app.requests == 5 and r.app.get_hits == 2 and r.app.get_misses == 1
    replies = {}
    for p in rdpcap(str(tmp_path / "rep.pcap")):
        assert p[UDP].sport == 11211 and p[UDP].dport == 40000 and p[Ether].dst == "02:00:00:00:00:01"
        payload = bytes(p[UDP])[8:p[UDP].len]  # short frames carry Ethernet padding after it
        req_id, seq, total, _ = struct.unpack("!HHHH", payload[:8])
        replies.setdefault(req_id, {})[seq] = (total, payload[8:])
    text = {i: b"".join(part for _, part in (v[s] for s in sorted(v))) for i, v in replies.items()}
    assert text[0] == b"STORED\r\n"
    assert text[1] == b"VALUE greeting 7 5\r\nhello\r\nEND\r\n"
    assert text[2] == b"END\r\n"
    assert text[3] == b"STORED\r\n"
    # 1405 B of reply do not fit one datagram: memcached's UDP framing splits it at 1392 B.
    assert len(replies[4]) == 2 and all(t == 2 for t, _ in replies[4].values())
    assert text[4] == b"VALUE big 0 1380\r\n" + b"x" * 1380 + b"\r\nEND\r\n"
