"""`hostsim bench`: one row per workload with its speed at both
fidelities and peak RSS."""

import json


def test_bench_prints_a_row_per_chosen_workload(cli, tmp_path):
    out = tmp_path / "bench.json"
    proc = cli("bench", "--only", "testpmd 64", "--only", "reflector", "--no-msb", "--json", str(out), check=True)
    lines = [l for l in proc.stdout.splitlines() if l.startswith(("testpmd 64", "reflector"))]
    assert len(lines) == 2
    rows = json.loads(out.read_text())["rows"]
    assert [r["workload"] for r in rows] == ["reflector harness 64 B, 50% line rate, 10 ns", "testpmd 64 B, 29 Mpps"]
    for r in rows:
        # The simulated packets are the frames the generator sent over the run.
        assert r["packets"] > 100_000 and r["pps"] > 0 and r["wall_s"] > 0
        assert abs(r["pps"] - r["packets"] / r["wall_s"]) < 1e-6 * r["pps"]
        assert 10 < r["rss_mib"] < 4096
        assert r["msb_mpps"] is None
        # The fast run simulates a sample; its speed counts the configured run's packets.
        f = r["fast"]
        assert f["sampled"] and f["simulated_packets"] * 5 < r["packets"] and f["pps"] > 0
        assert f["msb_mpps"] is None and f["msb_diff_pct"] is None


def test_several_runs_give_the_median_run_and_list_every_run(cli, tmp_path):
    out = tmp_path / "bench.json"
    proc = cli("bench", "--only", "reflector", "--no-msb", "--runs", "3", "--json", str(out), check=True)
    assert "3 runs, median above: " in proc.stdout
    [row] = json.loads(out.read_text())["rows"]
    runs = sorted(row["pps_runs"])
    assert len(runs) == 3 and row["pps"] == runs[1]
    assert abs(row["pps"] - row["packets"] / row["wall_s"]) < 1e-6 * row["pps"]
    bad = cli("bench", "--runs", "0", "--no-msb")
    assert bad.returncode != 0 and "runs: invalid value '0'" in bad.stderr
    assert bad.stdout == "", "nothing printed before the error"
    # A text that names no workload is an error naming the workloads, not an empty table.
    bad = cli("bench", "--only", "reflector", "--only", "nosuchrow", "--no-msb")
    assert bad.returncode == 2 and "only: invalid value 'nosuchrow'" in bad.stderr and "testpmd 64 B" in bad.stderr
    assert "workload" not in bad.stdout


def test_peak_rss_is_the_childs_own():
    # ru_maxrss survives execve; the column must not carry this process's peak over.
    from hostsim import bench

    ballast = bytearray(400 * 1024 * 1024)
    ballast[::4096] = b"x" * len(ballast[::4096])
    w = next(w for w in bench.WORKLOADS if w.name.startswith("reflector"))
    cfg = dict(w.config, sim={"duration": "1ms"})
    rss = bench.run_child(cfg, {})["rss_mib"]
    del ballast
    assert 10 < rss < 300, rss


def test_the_profile_guided_builds_training_runs_every_standard_workload():
    # scripts/setup falls back to a plain build when this script fails, so a
    # workload that stopped running would only show as a slower core.
    import subprocess
    import sys
    from pathlib import Path

    from hostsim import bench

    script = Path(__file__).resolve().parents[2] / "scripts" / "pgo_train.py"
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert f"{len(bench.WORKLOADS)} workloads and one search" in proc.stdout
