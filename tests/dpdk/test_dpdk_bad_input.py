"""Malformed frames and commands: counted and dropped, or answered with
memcached's error strings, never a crash; plus a seeded fuzzed pcap."""

from __future__ import annotations

import random

from scapy.all import IP, TCP, UDP, Ether, Raw

from dpdk_helpers import eal_args, run_prog
from dpdk_pcap import CLIENT_MAC, SERVER_MAC, mc_frame, mc_replies, \
    mutate, read_frames, write_pcap

SEED = 20240611


def _run_kvs(dpdk_bin, tmp_path, frames, extra=()):
    inp = write_pcap(tmp_path / "bad.pcap", frames)
    out = tmp_path / "out.pcap"
    run = run_prog(dpdk_bin, "kvs", eal_args(tmp_path, [
        f"net_pcap0,rx_pcap={inp},tx_pcap={out}"]),
        ["--run-time", "1", *extra], tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.result is not None, run.stdout
    return run, read_frames(out)


def test_bad_frames_are_counted_and_dropped(dpdk_bin, tmp_path):
    good = bytes(mc_frame(b"get x\r\n", req_id=1))
    eth = Ether(src=CLIENT_MAC, dst=SERVER_MAC)
    ip = IP(src="10.0.0.1", dst="10.0.0.2")
    bad_ihl = bytearray(good)
    bad_ihl[14] = 0x44                          # IHL 4 < 5
    long_ihl = bytearray(good)
    long_ihl[14] = 0x4F                         # 60-byte header: too long
    bad_csum = bytearray(good)
    bad_csum[24] ^= 0xFF
    long_total = bytearray(good)
    long_total[16:18] = (2000).to_bytes(2, "big")
    frames = [
        good[:10],                                          # truncated
        good[:30],                                          # truncated IP
        bytes(long_total),                                  # truncated
        bytes(eth / Raw(b"\x00" * 50))[:12] + b"\x08\x06" + b"\x00" * 46,
        bytes(Ether(src=CLIENT_MAC, dst=SERVER_MAC, type=0x86DD)
              / Raw(b"\x60" + b"\x00" * 59)),               # IPv6
        bytes(bad_ihl),
        bytes(long_ihl),
        bytes(bad_csum),
        bytes(eth / ip / TCP(dport=11211) / Raw(b"get x\r\n")),
        bytes(mc_frame(b"get x\r\n", req_id=2, dport=11212)),
        bytes(eth / ip / UDP(sport=1, dport=11211) / Raw(b"\x00\x01")),
        bytes(mc_frame(b"get x\r\n", req_id=3, count=2)),
        good,
    ]
    run, out = _run_kvs(dpdk_bin, tmp_path, frames)
    drops = run.result["kvs"]["drops"]
    assert drops["truncated"] == 3
    assert drops["not_ipv4"] == 2
    assert drops["bad_ip_header"] == 2
    assert drops["bad_ip_checksum"] == 1
    assert drops["not_udp"] == 1
    assert drops["wrong_port"] == 1
    assert drops["bad_mc_header"] == 1
    assert drops["multi_datagram"] == 1
    assert run.result["app"]["app_dropped"] == len(frames) - 1
    # the one valid request after all that is still answered
    assert mc_replies(out) == {1: [(0, 1, b"END\r\n")]}


def test_malformed_commands_get_memcached_errors(dpdk_bin, tmp_path):
    reqs = [
        b"bogus\r\n",
        b"set foo\r\n",
        b"set foo 1 0 abc\r\n",
        b"set foo 1 0 3\r\nxyzw\r\n",
        b"get " + b"k" * 251 + b"\r\n",
        b"delete foo 5\r\n",
        b"set big 0 0 200\r\n" + b"b" * 200 + b"\r\nget big\r\n",
        b"set big 0 0 200 noreply\r\n" + b"b" * 200 + b"\r\n",
        b"set ok 0 0 100\r\n" + b"o" * 100 + b"\r\n",
        b"set cut 0 0 50\r\nshort\r\n",
        b"get ok",
    ]
    frames = [mc_frame(r, req_id=i) for i, r in enumerate(reqs)]
    run, out = _run_kvs(dpdk_bin, tmp_path, frames, ["--max-value", "100"])
    got = {rid: [p for _, _, p in v] for rid, v in mc_replies(out).items()}
    assert got[0] == [b"ERROR\r\n"]
    assert got[1] == [b"ERROR\r\n"]
    assert got[2] == [b"CLIENT_ERROR bad command line format\r\n"]
    assert got[3] == [b"CLIENT_ERROR bad data chunk\r\n", b"ERROR\r\n"]
    assert got[4] == [b"CLIENT_ERROR bad command line format\r\n"]
    assert got[5] == [b"CLIENT_ERROR bad command line format.  Usage: "
                      b"delete <key> [noreply]\r\n"]
    assert got[6] == [b"SERVER_ERROR object too large for cache\r\n",
                      b"END\r\n"]
    assert 7 not in got                         # noreply hides the error
    assert got[8] == [b"STORED\r\n"]
    assert 9 not in got and 10 not in got       # incomplete: no answer
    kvs = run.result["kvs"]
    assert kvs["too_large"] == 2 and kvs["server_errors"] == 2
    assert kvs["incomplete"] == 2
    assert kvs["errors"] == 3 and kvs["client_errors"] == 4
    assert kvs["items"] == 1


def test_fuzzed_pcap_never_crashes(dpdk_bin, tmp_path):
    rng = random.Random(SEED)
    seeds = [bytes(mc_frame(r, req_id=i)) for i, r in enumerate([
        b"get foo\r\n", b"set foo 1 0 3\r\nbar\r\n",
        b"get foo bar baz\r\n", b"delete foo\r\n",
        b"set k 0 0 10 noreply\r\n0123456789\r\n"])]
    frames = [mutate(rng.choice(seeds), rng) for _ in range(600)]
    frames += seeds                             # valid frames at the end
    run, out = _run_kvs(dpdk_bin, tmp_path, frames)
    app, kvs = run.result["app"], run.result["kvs"]
    assert app["rx_packets"] == len(frames)
    dropped = sum(kvs["drops"][k] for k in kvs["drops"]
                  if k not in ("no_reply", "tx_alloc_fail", "tx_cap"))
    assert dropped + kvs["requests"] == len(frames)
    assert dropped > 0 and kvs["requests"] > 0
    # the trailing valid get/set/get/delete were answered
    assert app["tx_packets"] == len(out) > 0
    # touchfwd forwards the same garbage untouched apart from the MACs
    inp = tmp_path / "bad.pcap"
    fwd_out = tmp_path / "fwd.pcap"
    run = run_prog(dpdk_bin, "touchfwd", eal_args(tmp_path, [
        f"net_pcap0,rx_pcap={inp},tx_pcap={fwd_out}"]),
        ["--run-time", "1"], tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    back = read_frames(fwd_out)
    assert len(back) == len(frames)
    for sent, got in zip(frames, back):
        if len(sent) >= 14:
            assert got == sent[6:12] + sent[0:6] + sent[12:]
        else:
            assert got == sent
