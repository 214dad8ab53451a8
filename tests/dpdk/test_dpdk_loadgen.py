"""loadgen on net_pcap (traffic shape, tag layout, trace replay) and
loadgen <-> touchfwd over a net_memif pair (latency, bandwidth test)."""

from __future__ import annotations

import collections
import struct

import pytest

from scapy.all import UDP, Ether, Raw

from dpdk_helpers import eal_args, run_prog
from dpdk_pcap import mc_frame, read_frames, write_pcap

LOADGEN_KEYS = ["tx_packets", "rx_packets", "lost_packets",
                "reordered_packets", "drop_rate", "offered_bps",
                "achieved_bps", "offered_pps", "achieved_pps",
                "line_rate_pps"]
LATENCY_KEYS = ["min", "mean", "p50", "p90", "p99", "p999", "max", "std"]


def _tag(frame: bytes, off: int = 42):
    magic, flow, seq, tx_ns = struct.unpack(">HHIQ", frame[off:off + 16])
    return magic, flow, seq, tx_ns


def _pcap_loadgen(dpdk_bin, tmp_path, app, name="lg"):
    empty = write_pcap(tmp_path / "empty.pcap", [])
    out = tmp_path / f"{name}.pcap"
    run = run_prog(dpdk_bin, "loadgen", eal_args(tmp_path, [
        f"net_pcap0,rx_pcap={empty},tx_pcap={out}"]), app, tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    return run, read_frames(out)


def test_imix_flows_and_tag_layout(dpdk_bin, tmp_path):
    run, frames = _pcap_loadgen(dpdk_bin, tmp_path, [
        "--rate", "40kpps", "--duration", "0.25", "--size", "imix",
        "--flows", "4", "--sport", "2000", "--seed", "7"])
    lg = run.result["loadgen"]
    assert lg["tx_packets"] == len(frames) > 5000
    sizes = collections.Counter(len(f) + 4 for f in frames)  # + FCS
    assert set(sizes) == {64, 594, 1518}
    assert 1.4 < sizes[64] / sizes[594] < 2.1           # 7:4
    assert 2.5 < sizes[594] / sizes[1518] < 5.5         # 4:1
    ports = collections.Counter(Ether(f)[UDP].sport for f in frames)
    assert set(ports) == {2000, 2001, 2002, 2003}
    tags = [_tag(f) for f in frames]
    assert all(t[0] == 0x4853 for t in tags)
    seqs = [t[2] for t in tags]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
    assert [t[1] for t in tags[:8]] == [0, 1, 2, 3, 0, 1, 2, 3]
    assert all(Ether(f)[UDP].sport == 2000 + t[1]
               for f, t in zip(frames, tags))
    stamps = [t[3] for t in tags]
    assert stamps == sorted(stamps) and stamps[-1] - stamps[0] > 0.2e9
    # nothing comes back on this port: every frame is lost
    assert lg["rx_packets"] == 0 and lg["drop_rate"] == 1.0
    bits = sum((len(f) + 4) * 8 for f in frames)
    assert abs(lg["offered_bps"] - bits / lg["duration_s"]) < 1e-6 * bits
    assert run.result["sim"]["seed"] == 7


def test_poisson_inter_arrival(dpdk_bin, tmp_path):
    run, frames = _pcap_loadgen(dpdk_bin, tmp_path, [
        "--rate", "20kpps", "--duration", "0.5", "--dist", "poisson",
        "--seed", "3"])
    stamps = [_tag(f)[3] for f in frames]
    gaps = [b - a for a, b in zip(stamps, stamps[1:])]
    # This test measures the real generator on this machine: a frame is
    # stamped with the TSC read of the loop pass that built it, so frames
    # built in one pass share a stamp. On schedule that happens to ~1 % of
    # exponential 50 us gaps (a pass is well under a microsecond); a
    # generator descheduled by a busy machine catches up in bursts of such
    # gaps, and what is left of the schedule is not the distribution's.
    bursts = sum(g == 0 for g in gaps)
    if bursts > 0.05 * len(gaps):
        pytest.skip(f"the machine was busy: {bursts} of {len(gaps)} gaps of the real generator were catch-up "
                    "bursts (0 ns apart), so its inter-arrival distribution is not judged")
    mean = sum(gaps) / len(gaps)
    std = (sum((g - mean) ** 2 for g in gaps) / len(gaps)) ** 0.5
    assert abs(len(frames) - 10000) < 600
    assert 40e3 < mean < 60e3                   # 50 us at 20 kpps
    # exponential gaps, unlike constant ones, spread widely
    # (exponential: 9.5 % of gaps below mean/10, 13.5 % above 2 x mean);
    # scheduling noise on a busy machine only widens the spread
    assert std / mean > 0.6
    assert sum(g < 0.1 * mean for g in gaps) > 0.05 * len(gaps)
    assert 0.07 < sum(g > 2 * mean for g in gaps) / len(gaps) < 0.3


def test_trace_replay_keeps_frames_and_timing(dpdk_bin, tmp_path):
    trace = []
    for i in range(40):
        f = mc_frame(b"get key%d\r\n" % i + b"." * 40, req_id=i)
        f.time = 1000.0 + i * 0.005                     # 5 ms apart
        trace.append(f)
    from scapy.all import wrpcap
    wrpcap(str(tmp_path / "trace.pcap"), trace)
    run, frames = _pcap_loadgen(dpdk_bin, tmp_path, [
        "--pcap", str(tmp_path / "trace.pcap"), "--duration", "5",
        "--dst-mac", "02:aa:bb:cc:dd:ee"])
    assert len(frames) == 40
    lg = run.result["loadgen"]
    assert 0.17 < lg["duration_s"] < 1.0                # 39 gaps of 5 ms
    for orig, sent in zip(trace, frames):
        raw = bytes(orig)
        assert sent[:6] == bytes.fromhex("02aabbccddee")
        assert sent[6:42] == raw[6:42]
        assert _tag(sent)[0] == 0x4853
        assert sent[58:] == raw[58:]
    # a rate override replaces the trace's timing
    run, frames = _pcap_loadgen(dpdk_bin, tmp_path, [
        "--pcap", str(tmp_path / "trace.pcap"), "--rate", "20kpps",
        "--loop", "3", "--no-tag"], name="fast")
    assert len(frames) == 120
    assert run.result["loadgen"]["duration_s"] < 0.05
    assert frames[0][42:] == bytes(trace[0])[42:]       # untagged


def test_bad_options_fail_clearly(dpdk_bin, tmp_path):
    empty = write_pcap(tmp_path / "empty.pcap", [])
    vdev = f"net_pcap0,rx_pcap={empty},tx_pcap={tmp_path / 'x.pcap'}"
    run = run_prog(dpdk_bin, "loadgen", eal_args(tmp_path, [vdev]),
                   ["--rate", "5furlongs"], tmp_path)
    assert run.returncode != 0 and "invalid rate '5furlongs'" in run.stderr
    run = run_prog(dpdk_bin, "touchfwd", eal_args(tmp_path, [vdev]),
                   ["--burst", "0"], tmp_path)
    assert run.returncode != 0 and "invalid --burst '0'" in run.stderr
    run = run_prog(dpdk_bin, "kvs", eal_args(tmp_path, []), [], tmp_path)
    assert run.returncode != 0 and "no Ethernet ports" in run.stderr


def _memif(sock, role):
    return f"net_memif0,role={role},socket={sock},rsize=14"


FWD_OPTS = ["--rxd", "4096", "--txd", "4096", "--total-num-mbufs", "32767"]


def _memif_pair(background, tmp_path, sock, lg_opts, timeout):
    """touchfwd (memif server) and the loadgen (client). The loadgen waits
    for touchfwd to leave before it disconnects: DPDK 22.11's memif unmaps
    the shared regions on a disconnect while the other side's lcore may be
    inside rx_burst, which faults the side still polling."""
    fwd = background("touchfwd", eal_args(tmp_path, [
        _memif(sock, "server")], lcore=0), FWD_OPTS)
    fwd.wait_for("forwarding started")
    lg = background("loadgen", eal_args(tmp_path, [
        _memif(sock, "client")], lcore=1),
        [*lg_opts, "--peer-exit-wait", "20000"])
    lg.wait_for("waiting up to 20000 ms for the peer to leave",
                timeout=timeout)
    stopped = fwd.stop()
    run = lg.wait(timeout=30)
    assert "the peer is still up" not in run.stdout, run.stdout
    return run, stopped


def test_memif_latency_loadgen_touchfwd(dpdk_bin, tmp_path, background,
                                        memif_socket):
    run, stopped = _memif_pair(background, tmp_path, memif_socket, [
        "--rate", "200kpps", "--duration", "1", "--warmup", "0.1",
        "--size", "128", "--flows", "8", "--total-num-mbufs", "32767"],
        timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr
    assert stopped.returncode == 0, stopped.stdout
    assert "touchfwd final counters" in stopped.stdout

    lg = run.result["loadgen"]
    for k in LOADGEN_KEYS:
        assert k in lg, k
    lat = lg["latency_ns"]
    for k in LATENCY_KEYS:
        assert k in lat, k
    assert lg["tx_packets"] > 100000
    assert lg["rx_packets"] + lg["lost_packets"] == lg["tx_packets"]
    assert lg["drop_rate"] < 0.5, "memif peer dropped most of the traffic"
    assert lg["reordered_packets"] == 0 and lg["duplicate_packets"] == 0
    assert lat["count"] == lg["rx_packets"] > 0
    assert 0 < lat["min"] <= lat["p50"] <= lat["p90"] <= lat["p99"] \
        <= lat["p999"] <= lat["max"]
    assert lat["min"] <= lat["mean"] <= lat["max"]
    # loose: on a shared 2-core machine the busy-polling peer is often
    # preempted for milliseconds, and the 16K-slot memif rings queue
    assert lat["p50"] < 0.25e9, "median round trip above 250 ms"
    assert lat["max"] < 1.5e9
    assert abs(lg["offered_pps"] - 200e3) < 0.1 * 200e3
    assert lg["line_rate_pps"] > lg["offered_pps"]
    assert abs(lg["offered_bps"] - lg["offered_pps"] * 128 * 8) < 1e-3 * \
        lg["offered_bps"]
    assert run.result["sim"]["wall_s"] >= 1.0
    app = stopped.result["app"]
    # touchfwd saw every frame that came back (and the warm-up ones)
    assert app["tx_packets"] >= lg["rx_packets"]
    assert stopped.result["cycles"]["cycles_per_packet"] > 0
    assert run.result["cycles"]["cycles_per_packet"] > 0


def test_memif_bandwidth_test_converges(dpdk_bin, tmp_path, background,
                                        memif_socket):
    run, stopped = _memif_pair(background, tmp_path, memif_socket, [
        "--msb", "--rate", "1Mpps", "--duration", "0.25", "--drain", "0.05",
        "--msb-threshold", "0.05", "--msb-resolution", "10%",
        "--msb-max-trials", "8", "--total-num-mbufs", "32767"],
        timeout=90)
    assert run.returncode == 0, run.stdout + run.stderr
    assert stopped.returncode == 0, stopped.stdout
    msb = run.result["msb"]
    curve = msb["curve"]
    assert msb["threshold"] == 0.05
    assert 1 <= msb["trials"] == len(curve) <= 8
    offered = [c["offered_bps"] for c in curve]
    assert offered == sorted(offered)
    for c in curve:
        assert {"offered_bps", "achieved_bps", "drop_rate"} <= set(c)
        assert {"p50", "p99"} <= set(c["latency_ns"])
        assert c["achieved_bps"] <= c["offered_bps"] * 1.001
    assert msb["found"] == 1, run.stdout
    assert msb["bps"] > 0 and msb["pps"] > 0
    best = [c for c in curve if c["offered_bps"] == msb["bps"]]
    assert best and best[0]["drop_rate"] <= 0.05
    # the search stopped for a reason: the top rate passed, or the
    # bracket shrank below the resolution, or the trial budget ran out
    targets = sorted(c["target_pps"] for c in curve)
    assert curve[-1]["target_pps"] == 1e6 or len(curve) == 8 or \
        any(b - a <= 0.1e6 + 1 for a, b in zip(targets, targets[1:]))
    assert run.result["loadgen"]["drop_rate"] <= 0.05
