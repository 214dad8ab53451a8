"""kvs against a real memcached: the same request set, the same answers.

memcached is started on loopback UDP (``memcached -U <port> -l 127.0.0.1``)
on a free port and gets the requests one datagram at a time; kvs gets them
as a pcap on net_pcap. Replies are compared per request id. memcached 1.6
sometimes sends a header-only datagram (count 0, no payload) ahead of a
multi-key get whose first key misses; it carries no response, so such
datagrams are left out of the comparison (kvs never sends them).
"""

from __future__ import annotations

import shutil
import socket
import struct
import subprocess
import time

import pytest

from dpdk_helpers import eal_args, run_prog
from dpdk_pcap import mc_frame, mc_replies, read_frames, write_pcap

# Every request is complete in its datagram: memcached keeps a half-read
# data block across datagrams (its UDP connection is stateful), kvs cannot.
REQUESTS = [
    b"get foo\r\n",
    b"set foo 5 0 3\r\nbar\r\n",
    b"get foo\r\n",
    b"get foo foo nokey\r\n",
    b"get foo nokey foo\r\n",
    b"get nokey foo\r\n",
    b"get nokey\r\n",
    b"set foo 1 0 3\r\nbaz\r\nget foo\r\n",
    b"set empty 0 0 0\r\n\r\n",
    b"get empty foo\r\n",
    b"set big 7 0 1300\r\n" + b"v" * 1300 + b"\r\n",
    b"get big\r\n",
    b"get big big foo\r\n",
    b"set huge 0 0 1400\r\n" + bytes(range(256)) * 5 + b"h" * 120 + b"\r\n",
    b"get huge\r\n",
    b"delete foo\r\n",
    b"delete foo\r\n",
    b"delete foo noreply\r\n",
    b"delete empty 0\r\n",
    b"delete foo 5\r\n",
    b"delete a b c\r\n",
    b"delete\r\n",
    b"bogus\r\n",
    b"bogus noreply\r\n",
    b"GET foo\r\n",
    b"\r\n",
    b"get\r\n",
    b"set foo\r\n",
    b"set foo 1 0 abc\r\nxyz\r\n",
    b"set foo 1 0 3\r\nxyzw\r\n",
    b"set foo 1 0 -1\r\n\r\n",
    b"set foo -1 0 1\r\na\r\n",
    b"set foo 1x 0 1\r\na\r\n",
    b"set foo 1 0 1 noreply extra\r\na\r\n",
    b"set foo 1 0 1 junk\r\na\r\n",
    b"get foo\r\n",
    b"set  spaced   3  0  2\r\nhi\r\n",
    b"get  spaced  \r\n",
    b"set lf 0 0 2\r\nok\r\nget lf\n",
    b"set neg 0 -1 1\r\na\r\n",
    b"get neg\r\n",
    b"set n 0 0 1 noreply\r\na\r\n",
    b"get n\r\n",
    b"set k" + b"k" * 249 + b" 0 0 1\r\na\r\n",
    b"get k" + b"k" * 249 + b"\r\n",
    b"get " + b"k" * 251 + b"\r\n",
    b"set " + b"k" * 251 + b" 0 0 1\r\na\r\n",
    b"delete " + b"k" * 251 + b"\r\n",
    b"set fo\x00o 1 0 1\r\na\r\n",
    b"\x00\x01\xff\r\n",
    b"set multi 0 0 1\r\na\r\nset multi2 0 0 1\r\nb\r\nget multi multi2\r\n",
    b"set flags 4294967295 0 1\r\na\r\n",
    b"get flags\r\n",
]


def _free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ask_memcached(port: int) -> dict[int, list[tuple[int, int, bytes]]]:
    out: dict[int, list[tuple[int, int, bytes]]] = {}
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(0.25)
        for rid, req in enumerate(REQUESTS):
            s.sendto(struct.pack(">HHHH", rid, 0, 1, 0) + req,
                     ("127.0.0.1", port))
            while True:
                try:
                    data = s.recv(65536)
                except socket.timeout:
                    break
                r, seq, cnt, _ = struct.unpack(">HHHH", data[:8])
                out.setdefault(r, []).append((seq, cnt, data[8:]))
    return out


@pytest.fixture
def memcached_port():
    exe = shutil.which("memcached")
    if exe is None:
        pytest.fail("memcached is not installed (apt-get install memcached); "
                    "it is the real peer kvs is checked against")
    port = _free_udp_port()
    proc = subprocess.Popen([exe, "-U", str(port), "-p", "0", "-l",
                             "127.0.0.1", "-u", "root", "-t", "1"],
                            stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.settimeout(0.2)
            while True:
                s.sendto(struct.pack(">HHHH", 0xFFFF, 0, 1, 0) +
                         b"get ping\r\n", ("127.0.0.1", port))
                try:
                    if s.recv(2048):
                        break
                except socket.timeout:
                    pass
                assert proc.poll() is None, "memcached exited"
                assert time.monotonic() < deadline, "memcached not answering"
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _payloads(replies, rid):
    return [(seq, cnt, p) for seq, cnt, p in replies.get(rid, [])
            if not (cnt == 0 and p == b"")]


def test_kvs_matches_real_memcached(dpdk_bin, tmp_path, memcached_port):
    real = _ask_memcached(memcached_port)
    frames = [mc_frame(r, req_id=i) for i, r in enumerate(REQUESTS)]
    inp = write_pcap(tmp_path / "req.pcap", frames)
    out = tmp_path / "resp.pcap"
    run = run_prog(dpdk_bin, "kvs", eal_args(tmp_path, [
        f"net_pcap0,rx_pcap={inp},tx_pcap={out}"]),
        ["--run-time", "1", "--max-value", "2048"], tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    ours = mc_replies(read_frames(out))
    mismatches = []
    for rid, req in enumerate(REQUESTS):
        want, got = _payloads(real, rid), _payloads(ours, rid)
        if want != got:
            mismatches.append(f"{req[:40]!r}: memcached {want!r} kvs {got!r}")
    assert not mismatches, "\n".join(mismatches)
    # a value larger than one datagram comes back split, as memcached does
    huge = REQUESTS.index(b"get huge\r\n")
    assert [(seq, cnt) for seq, cnt, _ in ours[huge]] == [(0, 2), (1, 2)]
    # the set exercises every reply kind, so the comparison means something
    kinds = {p.split(b" ")[0].split(b"\r\n")[0]
             for v in real.values() for _, _, p in v if p}
    assert {b"STORED", b"VALUE", b"END", b"DELETED", b"NOT_FOUND", b"ERROR",
            b"CLIENT_ERROR"} <= kinds
