"""touchfwd, touchdrop, rxptx and kvs on DPDK's net_pcap virtual device."""

from __future__ import annotations

import pytest

from scapy.all import IP, UDP, Ether, Raw

from dpdk_helpers import eal_args, run_prog
from dpdk_pcap import CLIENT_MAC, SERVER_MAC, mc_frame, mc_replies, \
    read_frames, write_pcap


def _traffic(n: int = 200):
    frames = []
    for i in range(n):
        size = [60, 128, 590, 1514][i % 4]
        pkt = (Ether(src=CLIENT_MAC, dst=SERVER_MAC)
               / IP(src="10.0.0.1", dst="10.0.0.2")
               / UDP(sport=1000 + i, dport=9))
        pad = size - len(pkt)
        frames.append(bytes(pkt / Raw(bytes((i + k) & 0xFF
                                             for k in range(pad)))))
    return frames


def _pcap_vdev(inp, out):
    return f"net_pcap0,rx_pcap={inp},tx_pcap={out}"


def test_touchfwd_swaps_macs_and_keeps_payload(dpdk_bin, tmp_path):
    frames = _traffic()
    inp = write_pcap(tmp_path / "in.pcap", frames)
    out = tmp_path / "out.pcap"
    run = run_prog(dpdk_bin, "touchfwd", eal_args(tmp_path, [
        _pcap_vdev(inp, out)]), ["--run-time", "1"], tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    got = read_frames(out)
    assert len(got) == len(frames)
    for sent, back in zip(frames, got):
        assert back[0:6] == sent[6:12]          # dst <- old src
        assert back[6:12] == sent[0:6]          # src <- old dst
        assert back[12:] == sent[12:]           # everything else untouched
    app = run.result["app"]
    assert app["rx_packets"] == app["tx_packets"] == len(frames)
    assert run.result["touchfwd"]["byte_sum"] == sum(sum(f) for f in frames)
    cyc = run.result["cycles"]
    assert cyc["packets"] == len(frames) and cyc["busy_polls"] >= 1
    assert cyc["cycles_per_packet"] > 0
    assert run.result["sim"]["wall_s"] > 0.5


def test_touchdrop_counts_every_frame(dpdk_bin, tmp_path):
    frames = _traffic(300)
    inp = write_pcap(tmp_path / "in.pcap", frames)
    out = tmp_path / "out.pcap"
    run = run_prog(dpdk_bin, "touchdrop", eal_args(tmp_path, [
        _pcap_vdev(inp, out)]), ["--run-time", "1"], tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    app = run.result["app"]
    assert app["rx_packets"] == app["app_dropped"] == 300
    assert app["tx_packets"] == 0
    assert app["rx_bytes"] == sum(len(f) for f in frames)
    assert run.result["touchdrop"]["byte_sum"] == sum(sum(f) for f in frames)
    assert read_frames(out) == []
    assert "final counters" in run.stdout


@pytest.mark.parametrize("per", ["packet", "burst"])
def test_rxptx_spends_the_processing_time(dpdk_bin, tmp_path, per):
    frames = _traffic(100)
    inp = write_pcap(tmp_path / "in.pcap", frames)
    out = tmp_path / "out.pcap"
    run = run_prog(dpdk_bin, "rxptx", eal_args(tmp_path, [
        _pcap_vdev(inp, out)]), ["--run-time", "1", "--proc-ns", "20000", "--proc-per", per],
        tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert len(read_frames(out)) == 100
    cyc = run.result["cycles"]
    spin = run.result["rxptx"]["proc_cycles"]
    assert run.result["rxptx"]["proc_per_packet"] == (per == "packet")
    assert spin == round(20000e-9 * cyc["tsc_hz"]) or \
        abs(spin - 20000e-9 * cyc["tsc_hz"]) <= 1
    if per == "packet":
        # Every packet costs at least its spin, and not several spins (one
        # per retry would break the bound). The bound is loose: on a loaded
        # 2-core machine preemption mid-poll has been seen to add about
        # twice the spin.
        assert spin <= cyc["cycles_per_packet"] < 6 * spin
    else:
        # net_pcap hands the 100 frames over in bursts of up to 32: one
        # spin per burst is well under a spin per packet.
        assert cyc["cycles_per_packet"] < spin / 2


def test_kvs_answers_a_request_pcap(dpdk_bin, tmp_path):
    reqs = [
        b"get foo\r\n",
        b"set foo 5 0 3\r\nbar\r\n",
        b"get foo\r\n",
        b"get foo nokey foo\r\n",
        b"set big 0 0 1000\r\n" + b"x" * 1000 + b"\r\n",
        b"get big big\r\n",
        b"delete foo\r\n",
        b"delete foo\r\n",
        b"get foo\r\n",
        b"set n 1 0 1 noreply\r\na\r\n",
        b"get n\r\n",
    ]
    frames = [mc_frame(r, req_id=i, sport=5000 + i)
              for i, r in enumerate(reqs)]
    inp = write_pcap(tmp_path / "req.pcap", frames)
    out = tmp_path / "resp.pcap"
    run = run_prog(dpdk_bin, "kvs", eal_args(tmp_path, [
        _pcap_vdev(inp, out)]), ["--run-time", "1"], tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    got = read_frames(out)
    by_id = mc_replies(got)
    texts = {rid: [p for _, _, p in v] for rid, v in by_id.items()}
    big = b"VALUE big 0 1000\r\n" + b"x" * 1000 + b"\r\n"
    assert texts[0] == [b"END\r\n"]
    assert texts[1] == [b"STORED\r\n"]
    assert texts[2] == [b"VALUE foo 5 3\r\nbar\r\nEND\r\n"]
    assert texts[3] == [b"VALUE foo 5 3\r\nbar\r\n",
                        b"VALUE foo 5 3\r\nbar\r\nEND\r\n"]
    assert texts[4] == [b"STORED\r\n"]
    assert texts[5] == [big, big + b"END\r\n"]
    assert texts[6] == [b"DELETED\r\n"]
    assert texts[7] == [b"NOT_FOUND\r\n"]
    assert texts[8] == [b"END\r\n"]
    assert 9 not in texts                       # noreply
    assert texts[10] == [b"VALUE n 1 1\r\na\r\nEND\r\n"]
    # replies go back where the requests came from, checksums valid
    for raw in got:
        pkt = Ether(raw)
        rid = int.from_bytes(bytes(pkt[UDP].payload)[:2], "big")
        assert pkt.src == SERVER_MAC and pkt.dst == CLIENT_MAC
        assert pkt[IP].src == "10.0.0.2" and pkt[IP].dst == "10.0.0.1"
        assert pkt[UDP].sport == 11211 and pkt[UDP].dport == 5000 + rid
        assert pkt[UDP].len == len(pkt[UDP])
        again = pkt.copy()
        del again[IP].chksum
        del again[UDP].chksum
        again = Ether(bytes(again))
        assert again[IP].chksum == pkt[IP].chksum
        assert again[UDP].chksum == pkt[UDP].chksum
    kvs = run.result["kvs"]
    assert kvs["requests"] == len(reqs)
    assert kvs["cmd_get"] == 6 and kvs["get_hits"] == 6
    assert kvs["cmd_set"] == 3 and kvs["set_stored"] == 3
    assert kvs["delete_hits"] == 1 and kvs["delete_misses"] == 1
    assert kvs["items"] == 2
    assert run.result["cycles"]["packets"] == len(reqs)
