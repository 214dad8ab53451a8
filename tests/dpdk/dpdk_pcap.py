"""Frame builders and pcap readers shared by the DPDK twin tests (scapy)."""

from __future__ import annotations

import random
import struct
from pathlib import Path

from scapy.all import IP, UDP, Ether, Raw, rdpcap, wrpcap  # noqa: F401
from scapy.utils import PcapWriter

CLIENT_MAC = "02:00:00:00:00:01"
SERVER_MAC = "02:00:00:00:00:02"
MEMCACHED_PORT = 11211


def mc_frame(payload: bytes, req_id: int, sport: int = 40000,
             seq: int = 0, count: int = 1, dport: int = MEMCACHED_PORT):
    """An Ethernet/IPv4/UDP frame carrying one memcached UDP datagram."""
    hdr = struct.pack(">HHHH", req_id, seq, count, 0)
    return (Ether(src=CLIENT_MAC, dst=SERVER_MAC)
            / IP(src="10.0.0.1", dst="10.0.0.2")
            / UDP(sport=sport, dport=dport) / Raw(hdr + payload))


def write_pcap(path: Path, frames) -> Path:
    """Write frames (scapy packets or raw bytes) as an Ethernet pcap."""
    with PcapWriter(str(path), linktype=1, sync=True) as w:
        for f in frames:
            w.write(bytes(f) if not isinstance(f, bytes) else f)
    return path


def read_frames(path: Path) -> list[bytes]:
    """Raw bytes of every frame in a pcap (empty file: no frames)."""
    if not path.exists() or path.stat().st_size <= 24:
        return []
    return [bytes(p) for p in rdpcap(str(path))]


def mc_replies(frames: list[bytes]) -> dict[int, list[tuple[int, int, bytes]]]:
    """Group memcached UDP replies by request id: [(seq, count, payload)]."""
    out: dict[int, list[tuple[int, int, bytes]]] = {}
    for raw in frames:
        pkt = Ether(raw)
        data = bytes(pkt[UDP].payload)
        rid, seq, cnt, _ = struct.unpack(">HHHH", data[:8])
        out.setdefault(rid, []).append((seq, cnt, data[8:]))
    return out


def mutate(frame: bytes, rng: random.Random) -> bytes:
    """One seeded random mutation: flip bytes, truncate, extend or splice."""
    b = bytearray(frame)
    kind = rng.randrange(5)
    if kind == 0:
        for _ in range(rng.randint(1, 8)):
            b[rng.randrange(len(b))] = rng.randrange(256)
    elif kind == 1:
        b = b[:rng.randrange(1, len(b))]
    elif kind == 2:
        b += bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
    elif kind == 3:
        # corrupt a header field the parser relies on
        pos = rng.choice([12, 13, 14, 16, 17, 23, 36, 37, 38, 39, 42, 46, 47])
        if pos < len(b):
            b[pos] = rng.randrange(256)
    else:
        # mangle the memcached text
        start = min(50, len(b))
        for i in range(start, len(b)):
            if rng.random() < 0.1:
                b[i] = rng.choice(b" \r\n\x00abc0123456789-")
    return bytes(b)
