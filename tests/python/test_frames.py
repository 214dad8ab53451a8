"""Results and the store as pandas DataFrames: the numbers are the result's, a column per axis."""

from __future__ import annotations

import hostsim

from test_sweep import FAST_BASE

FAST = {"app": "reflector", "preset": "a72-quad", "reflector": {"service_time": "100ns"},
        "sim": {"duration": "1ms", "warmup": "500us", "drain": "100us"}}

SWEEP = """name = "frames"
kind = "msb"
""" + FAST_BASE + """
[[axes]]
key = "reflector.service_time"
values = ["100ns", "200ns"]
"""


def test_a_run_is_one_row_of_dotted_columns():
    r = hostsim.simulate(dict(FAST, loadgen={"rate": "1Mpps"}))
    df = r.to_frame()
    assert len(df) == 1
    assert df["loadgen.achieved_pps"][0] == r.loadgen.achieved_pps
    assert df["loadgen.tx_packets"][0] == r.loadgen.tx_packets
    assert "config" not in df.columns


def test_a_bandwidth_test_is_a_row_per_curve_point():
    m = hostsim.msb(FAST, resolution=0.05)
    df = m.to_frame()
    curve = m.msb.curve
    assert len(df) == len(curve)
    assert list(df["offered_pps"]) == [p["offered_pps"] for p in curve]
    assert list(df["loss_rate"]) == [p["loss_rate"] for p in curve]


def test_the_store_loads_with_a_column_per_axis(tmp_path):
    path = tmp_path / "frames.toml"
    path.write_text(SWEEP)
    rows = hostsim.run_sweep(path, store=tmp_path / "s.duckdb")
    df = hostsim.load(tmp_path / "s.duckdb", sweep="frames")
    assert list(df["reflector.service_time"]) == ["100ns", "200ns"]
    assert list(df["msb_pps"]) == [r["msb_pps"] for r in rows]
    assert df["result"][0]["msb"]["pps"] == rows[0]["msb_pps"]
    assert len(hostsim.load(tmp_path / "s.duckdb", sweep="other")) == 0
