"""Result wrappers and the gem5-style stats.txt."""

import json

import pytest

import hostsim
from hostsim.stats import BEGIN, END, format_stats, format_value


@pytest.fixture(scope="module")
def result(short):
    return hostsim.simulate(short(loadgen={"rate": "5Mpps"}))


def test_attribute_and_item_access(result):
    assert result.loadgen.tx_packets == result["loadgen"]["tx_packets"] == 4500
    assert result.loadgen.latency_ns.p99 == result.to_dict()["loadgen"]["latency_ns"]["p99"]
    assert result.config["loadgen"]["rate"] == {"unit": "pps", "value": 5e6}
    assert result.preset == "a72-quad"
    with pytest.raises(AttributeError, match="no field 'nope'"):
        result.loadgen.nope


def test_dir_lists_each_name_once(result):
    names = dir(result)
    assert "warnings" in names and "to_dict" in names and len(names) == len(set(names))


def test_to_dict_is_a_copy_and_to_json_round_trips(result):
    d = result.to_dict()
    d["loadgen"]["tx_packets"] = -1
    assert result.loadgen.tx_packets == 4500
    assert json.loads(result.to_json()) == result.to_dict()


def test_stats_txt_has_gem5_markers_and_aligned_columns(result):
    text = result.stats_txt()
    lines = text.splitlines()
    assert lines.count(BEGIN) == 1 and lines.count(END) == 1
    body = lines[lines.index(BEGIN) + 1:lines.index(END)]
    rows = [line for line in body if line]
    names = [r.split()[0] for r in rows]
    assert names[:2] == ["simSeconds", "simTicks"]
    assert {"hostSeconds", "simPackets", "system.loadgen.tx_packets", "system.loadgen.drop_rate"} <= set(names)
    # aligned: every "#" in the same column, and values right-aligned to the same edge
    assert len({r.index("#") for r in rows}) == 1
    tx = next(r for r in rows if r.startswith("system.loadgen.tx_packets "))
    assert tx.split()[1] == "4500"
    assert "# Frames sent in the measured window (Count)" in tx
    sim_ticks = next(r for r in rows if r.startswith("simTicks "))
    assert int(sim_ticks.split()[1]) == result.sim.simulated_ps


def test_stats_one_block_per_result():
    fake = {"sim": {"simulated_ps": 10**9, "wall_s": 0.5},
            "stats": [{"name": "a.b", "value": 0.25, "unit": "Ratio", "desc": "quarter"}]}
    text = format_stats([fake, fake, fake])
    assert text.count(BEGIN) == 3 and text.count(END) == 3
    assert "simSeconds" in text and "0.001000" in text
    assert "a.b" in text and "0.250000" in text and "# quarter (Ratio)" in text


def test_format_value():
    assert format_value(3) == "3"
    assert format_value(3.0, "Count") == "3"
    assert format_value(0.5) == "0.500000"
    assert format_value(float("nan")) == "nan"


def test_plot_p99_axis_and_bad_axis(tmp_path, short):
    from hostsim.plot import plot_msb

    m = hostsim.msb(short(reflector={"queue_frames": 4}), resolution=0.05)
    out = tmp_path / "p99.png"
    plot_msb(m, str(out), right="p99")
    assert out.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    svg = tmp_path / "curve.svg"
    plot_msb(m.to_dict(), str(svg))
    assert "MSB of reflector, 64 B, preset a72-quad" in svg.read_text()
    with pytest.raises(ValueError, match="right"):
        plot_msb(m, str(out), right="colour")


def test_plot_draws_the_verdicts_quantity_where_buffers_grew(tmp_path):
    from hostsim.plot import plot_msb

    def point(gbps, loss, backlog):
        return {"offered_bps": gbps * 1e9, "achieved_bps": gbps * (1 - loss) * 1e9, "loss_rate": loss,
                "backlog_growth_rate": backlog, "latency_ns": {"p99": 1000.0}}

    curve = [point(10, 0.0, 0.0), point(20, 0.0, 0.05), point(15, 0.0, 0.0)]
    data = {"msb": {"curve": curve, "threshold": 0.01, "bps": 15e9, "pps": 1e6}, "config": {"app": "testpmd"}}
    svg = tmp_path / "grew.svg"
    plot_msb(data, str(svg))
    assert "loss + buffer growth" in svg.read_text()
    curve[1]["backlog_growth_rate"] = 0.0
    plot_msb(data, str(svg))
    assert "loss + buffer growth" not in svg.read_text()
