"""The kernel's TCP sender (``--app tcp-send``) against the load generator's
TCP receiver (``loadgen.tcp``): the stream read back by tshark is every byte
written, in order, and what tshark flags as retransmitted is what the sender
says it sent again; bad receiver settings name their field."""

import shutil
import subprocess

import pytest

import hostsim
from hostsim.cli import main

BASE = {"app": "tcp-send", "stack": "kernel", "preset": "altra", "link": {"propagation": "1us"},
        "sim": {"duration": "2ms", "warmup": "0ps", "drain": "2s"},
        "host": {"app": {"tcp_send": {"writes": 3, "buffer_bytes": 500_000}}},
        "loadgen": {"tcp": {"rtt": "10us"}}}


def _run(tmp_path, drop=0.0):
    rx, tx = tmp_path / "segments.pcap", tmp_path / "acks.pcap"
    cfg = dict(BASE, loadgen={"tcp": {"rtt": "10us", "drop": drop}, "capture_rx": str(rx), "capture_tx": str(tx)})
    return hostsim.simulate(cfg).to_dict(), rx, tx


def _tshark(path, *fields):
    out = subprocess.run(["tshark", "-r", str(path), "-o", "tcp.relative_sequence_numbers:FALSE", "-T", "fields",
                          *[a for f in fields for a in ("-e", f)]],
                         capture_output=True, text=True, check=True, timeout=120).stdout
    return [line.split("\t") for line in out.splitlines()]


def test_the_stream_is_every_byte_in_order_and_acknowledged(tmp_path):
    r, rx, tx = _run(tmp_path)
    t, s = r["kernel"]["tcp_send"], r["loadgen"]["tcp"]
    assert (t["writes"], t["bytes_acked"], s["delivered_bytes_total"]) == (3, 1_500_000, 1_500_000)
    assert t["retransmissions"] == 0 and s["beyond_window_segments"] == 0
    # The receiver's ACK clock: a delayed ACK for every second segment.
    assert s["acks"] == pytest.approx(t["segments"] / 2, abs=2)
    if shutil.which("tshark") is None:
        pytest.skip("tshark not installed")
    segs = [(int(a), int(b)) for a, b in _tshark(rx, "tcp.seq", "tcp.len")]
    assert segs[0][0] == 0 and sum(n for _, n in segs) == 1_500_000
    assert all(a + n == b for (a, n), (b, _) in zip(segs, segs[1:])), "contiguous, no gap and no resend"
    acks = [int(a[0]) for a in _tshark(tx, "tcp.ack")]
    assert acks == sorted(acks) and acks[-1] == 1_500_000


def test_losses_are_retransmitted_and_tshark_sees_the_same(tmp_path):
    r, rx, _ = _run(tmp_path, drop=0.02)
    t, s = r["kernel"]["tcp_send"], r["loadgen"]["tcp"]
    assert s["dropped_segments"] > 0 and t["fast_retransmits"] > 0
    assert s["delivered_bytes_total"] == t["bytes_acked"] == 1_500_000
    if shutil.which("tshark") is None:
        pytest.skip("tshark not installed")
    rows = _tshark(rx, "tcp.seq", "tcp.len")
    seen, again = set(), 0
    for a, n in rows:
        again += (a, n) in seen
        seen.add((a, n))
    assert again == t["retransmissions"]
    assert sum(int(n) for a, n in seen) == 1_500_000


def test_bad_receiver_settings_name_the_field(capsys):
    for args, field in ((["--set", "loadgen.tcp.drop=1"], "loadgen.tcp.drop"),
                        (["--set", "loadgen.tcp.rtt=1us"], "loadgen.tcp.rtt"),
                        (["--set", "loadgen.tcp.window_bytes=100"], "loadgen.tcp.window_bytes"),
                        (["--set", "loadgen.tcp.nope=1"], "loadgen.tcp.nope"),
                        (["--set", "host.app.tcp_send.connections=0"], "app.tcp_send.connections")):
        rc = main(["run", "--app", "tcp-send", "--stack", "kernel", "--set", "link.propagation=1us", *args])
        err = capsys.readouterr().err
        assert rc == 2 and field in err and "Traceback" not in err, err
    rc = main(["run", "--app", "udp-echo", "--set", "loadgen.tcp=true"])
    assert rc == 2 and "only with app tcp-send" in capsys.readouterr().err


def test_cli_prints_the_tcp_rows(capsys):
    rc = main(["run", "--app", "tcp-send", "--stack", "kernel", "--duration", "300us", "--set", "link.propagation=1us",
               "--set", "loadgen.tcp.rtt=10us"])
    out = capsys.readouterr().out
    assert rc == 0
    for row in ("TCP receiver", "TCP sender", "write() time", "buffer held", "goodput"):
        assert row in out, row
