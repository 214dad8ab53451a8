"""The single-queue designs from Python: the CLI flag, the study's pieces, bad input."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import hostsim
from hostsim import rx_sharing as study


def short(design: str, cores: int, mode: str = "macswap"):
    return study.point(design, cores, mode=mode, duration="400us", warmup="100us")


def test_a_point_is_one_config_and_a_row_has_every_figure_of_the_table():
    r = hostsim.simulate(short("arbitration", 4))
    x = study.row(r, "arbitration", 4)
    assert x["mpps"] > 10
    assert set(x["cycles"]) == set(study.CATEGORIES)
    assert x["cycles"]["cas"] > 0, "claimants pay for their CAS"
    assert len(x["per_core"]) == 4 and all(c["role"] == "claimant" for c in x["per_core"])
    assert x["l2_misses_per_packet"] > 0 and 1 <= x["median_batch"] <= 32
    table = study.table([x])
    assert "arbitration" in table and "L2/pkt" in table
    assert r["rx_sharing"]["design"] == "arbitration" and r["rx_sharing"]["cas"] > 0


def test_the_parent_reads_whole_rings_and_its_cdf_reaches_one():
    r = hostsim.simulate(short("parent_worker", 2))
    parent = r["cores"][0]
    assert parent["pmd"]["role"] == "parent"
    cdf = study.batch_cdf(parent["rx_burst_packets"])
    assert cdf[-1][1] == pytest.approx(1.0)
    assert len(parent["rx_burst_packets"]) == 513, "up to the ring"
    assert study.median_batch([0, 1, 0, 3]) == 3 and study.median_batch([]) == 0


def test_the_grid_skips_none_beyond_one_core_and_bad_designs_are_named():
    grid = study.points((1, 2))
    assert [(d, c) for d, c, _ in grid] == [("none", 1), ("arbitration", 1), ("arbitration", 2), ("range", 1),
                                           ("range", 2), ("parent_worker", 1), ("parent_worker", 2)]
    with pytest.raises(ValueError, match="one of none, arbitration"):
        study.point("lottery", 2)


def test_three_cores_split_by_index_bits_is_a_config_error():
    with pytest.raises(hostsim.ConfigError, match="host.cores.*power of two"):
        hostsim.simulate(short("range", 3))


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hostsim", *args], capture_output=True, text=True)


def test_the_cli_flag_sets_the_design_and_prints_each_cores_part(tmp_path):
    out = tmp_path / "r.json"
    p = run_cli("run", "--app", "testpmd", "--preset", "i9-7940x-cx5", "--forward-mode", "macswap", "--size", "64",
                "--flows", "1", "--cores", "2", "--rx-sharing", "parent_worker", "--duration", "300us",
                "--warmup", "100us", "--json", str(out))
    assert p.returncode == 0, p.stderr
    assert "parent" in p.stdout and "worker" in p.stdout and "join" in p.stdout
    r = json.loads(out.read_text())
    assert r["config"]["host"]["rx_sharing"] == "parent_worker"
    p = run_cli("run", "--app", "testpmd", "--preset", "i9-7940x-cx5", "--rx-sharing", "lottery", "--duration", "100us", "--warmup", "0us")
    assert p.returncode == 2
    assert "host.rx_sharing" in p.stderr and "parent_worker" in p.stderr
    p = run_cli("run", "--app", "testpmd", "--preset", "altra", "--cores", "2", "--rx-sharing", "range",
                "--duration", "100us", "--warmup", "0us")
    assert p.returncode == 2 and "connectx" in p.stderr, p.stderr
