"""Inputs that once crashed, aborted or misreported (issue 57): each must
now give a clean error or a right answer."""

import os
import resource
import struct
import subprocess
import sys

import pytest

from conftest import REPO

#: The address space a run under test may take (the black-box pass's limit).
LIMIT = 3 << 30


def hostsim(*args: str, cwd, limit: int = LIMIT) -> subprocess.CompletedProcess:
    """``python -m hostsim ARGS`` with its address space limited to ``limit``."""
    env = dict(os.environ, PYTHONPATH=str(REPO / "python") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "hostsim", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300,
                          preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit)))


@pytest.mark.parametrize("setting, field", [
    ("host.mem.l2.size_bytes=16GiB", "host.mem.l2.size_bytes"),
    ("host.mem.llc.size_bytes=16GiB", "host.mem.llc.size_bytes"),
    ("host.app.kvs.buckets=1073741824", "host.app.kvs.buckets"),
])
def test_a_config_over_the_memory_budget_is_refused_not_aborted(tmp_path, setting, field):
    # These sizes aborted the process (exit 134, "memory allocation failed").
    p = hostsim("run", "--preset", "altra", "--app", "memcached", "--set", setting, cwd=tmp_path)
    assert p.returncode == 2, (p.returncode, p.stderr[-2000:])
    assert f"hostsim: error: {field}:" in p.stderr and "sim.memory_limit_bytes (1.500 GiB, half the memory this process may use)" in p.stderr, p.stderr
    assert "Traceback" not in p.stderr and "panicked" not in p.stderr


def test_memory_limit_is_a_setting_and_a_run_within_it_goes(tmp_path):
    run = ("run", "--preset", "altra", "--app", "testpmd", "--duration", "20us", "--warmup", "0", "--json", "r.json")
    p = hostsim(*run, "--set", "sim.memory_limit_bytes=1MiB", cwd=tmp_path)
    assert p.returncode == 2 and "sim.memory_limit_bytes (1 MiB)" in p.stderr, p.stderr
    assert hostsim(*run, "--set", "sim.memory_limit_bytes=64MiB", cwd=tmp_path).returncode == 0
    assert "sim.memory_limit" in hostsim(*run, "--set", "sim.memory_limit_bytes=0", cwd=tmp_path).stderr


def _pcap(frames) -> bytes:
    out = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
    for i, f in enumerate(frames):
        out += struct.pack("<IIII", 1, i, len(f), len(f)) + f
    return out


def _udp_frame(ihl: int) -> bytes:
    ip = bytes([0x40 | ihl, 0]) + struct.pack(">HHHBBH", 20 + 8 + 18, 0, 0, 64, 17, 0) + bytes([192, 168, 0, 1, 192, 168, 0, 2])
    return bytes(6) + bytes([2, 0, 0, 0, 0, 1]) + b"\x08\x00" + ip + struct.pack(">HHHH", 5000, 9, 26, 0) + bytes(18)


def test_an_ipv4_header_below_five_words_replays_as_captured(tmp_path):
    # IHL < 5 with rewrite_ip panicked in wire/ipv4.rs and blamed the pcap parser.
    (tmp_path / "ihl.pcap").write_bytes(_pcap([_udp_frame(ihl) for ihl in range(5)]))
    p = hostsim("run", "--duration", "20us", "--warmup", "0", "--set", "loadgen.trace.path=ihl.pcap",
                "--set", "loadgen.trace.rewrite_ip=true", "--set", "loadgen.trace.fix_checksums=true", "--json", "r.json", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "panicked" not in p.stderr and "pcap parser" not in p.stderr


SWEEP = """
[base]
app = "reflector"
[base.sim]
duration = "20us"
warmup = "0us"
[[axes]]
key = "loadgen.rate"
values = ["1Gbps", "2Gbps"]
"""


@pytest.mark.parametrize("dry_run", [False, True])
def test_a_points_table_of_other_columns_is_not_a_store(tmp_path, dry_run):
    # Store.keys() raised DuckDB's BinderException as a traceback (exit 1).
    import duckdb

    db = duckdb.connect(str(tmp_path / "other.duckdb"))
    db.execute("CREATE TABLE points (x INTEGER)")
    db.close()
    (tmp_path / "s.toml").write_text(SWEEP)
    p = hostsim("sweep", "s.toml", "--store", "other.duckdb", "--no-progress", *(["--dry-run"] if dry_run else []), cwd=tmp_path)
    assert p.returncode == 2, p.stderr
    assert "store: 'other.duckdb': its points table has other columns than a hostsim store's" in p.stderr and "not a store's: x" in p.stderr
    assert "Traceback" not in p.stderr


def test_a_truncated_store_is_a_clean_error(tmp_path):
    (tmp_path / "s.toml").write_text(SWEEP)
    assert hostsim("sweep", "s.toml", "--store", "a.duckdb", "--no-progress", cwd=tmp_path).returncode == 0
    data = (tmp_path / "a.duckdb").read_bytes()
    (tmp_path / "a.duckdb").write_bytes(data[:5000])
    p = hostsim("sweep", "s.toml", "--store", "a.duckdb", "--no-progress", cwd=tmp_path)
    assert p.returncode == 2 and "store: 'a.duckdb': cannot open" in p.stderr and "Traceback" not in p.stderr, p.stderr
