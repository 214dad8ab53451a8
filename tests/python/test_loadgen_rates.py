"""The load generator against closed forms: line rates and delivered rates, from the core."""

import pytest

import hostsim

# A device fast enough never to be the bottleneck: 1 ns per frame.
FAST_DEVICE = {"service_time": "1ns", "queue_frames": 4096}


def _line_rate_run(preset, size, short):
    cfg = short(preset=preset, loadgen={"rate": "100%", "size": size}, reflector=FAST_DEVICE,
                sim={"duration": "2020us", "warmup": "20us"})
    return hostsim.simulate(cfg).loadgen


@pytest.mark.parametrize(
    "preset, size, mpps",
    [
        ("altra", 64, 148.81),  # 100 GbE
        ("altra", 1518, 8.127),  # 100 GbE
        ("xeon-e3-1230v2", 64, 14.88),  # 10 GbE
    ],
)
def test_line_rate(preset, size, mpps, short):
    lg = _line_rate_run(preset, size, short)
    exact = {"altra": 100e9, "xeon-e3-1230v2": 10e9}[preset] / ((size + 20) * 8)
    # The published figure within 0.01 %, and the exact closed form.
    assert lg.line_rate_pps / 1e6 == pytest.approx(mpps, rel=1e-4)
    assert lg.line_rate_pps == pytest.approx(exact, rel=1e-4)
    # And the generator really sends and gets back that many at 100 % (2 ms window:
    # at least 16 000 frames, so counting quantizes below 0.01 %).
    assert lg.offered_pps == pytest.approx(exact, rel=1e-4)
    assert lg.achieved_pps == pytest.approx(exact, rel=1e-4)
    assert lg.drop_rate == 0
    assert lg.rate_capped is False


def test_requested_10gbps_is_delivered_within_0_1_percent(short):
    cfg = short(loadgen={"rate": "10Gbps", "size": 64}, reflector=FAST_DEVICE,
                sim={"duration": "1ms", "warmup": "0ps"})
    lg = hostsim.simulate(cfg).loadgen
    assert lg.offered_bps == pytest.approx(10e9, rel=1e-3)
    assert lg.achieved_bps == pytest.approx(10e9, rel=1e-3)
    # bps is frame bits: 10 Gbps of 64 B frames is 19.53 Mpps.
    assert lg.achieved_pps == pytest.approx(10e9 / 512, rel=1e-3)


@pytest.mark.parametrize("loadgen", [
    {"size": "imix"},
    # A memcached client's first requests are sets (188.8 B here), larger
    # than the nominal mean (97.7 B) that converts the rate to requests/s.
    {"memcached": True},
], ids=["imix", "memcached"])
def test_a_bit_rate_of_mixed_sizes_is_offered_exactly(loadgen, short):
    cfg = short(app="memcached" if "memcached" in loadgen else "reflector", reflector=FAST_DEVICE,
                loadgen={"rate": "10Gbps", **loadgen}, sim={"duration": "1ms", "warmup": "0ps"})
    lg = hostsim.simulate(cfg).loadgen
    # Paced by bytes, each frame's own: within one frame's bits over the window.
    assert lg.offered_bps == pytest.approx(10e9, abs=1518 * 8 / 1e-3)
    if "memcached" in loadgen:
        assert lg.offered_pps < 0.6 * lg.requested_pps  # the sets outsize the mean


def test_rate_above_line_rate_is_capped_and_says_so(short):
    cfg = short(preset="xeon-e3-1230v2", loadgen={"rate": "20Gbps"}, reflector=FAST_DEVICE,
                sim={"duration": "100us", "warmup": "10us"})
    r = hostsim.simulate(cfg)
    assert r.loadgen.rate_capped is True
    assert r.loadgen.offered_pps == pytest.approx(10e9 / (84 * 8), rel=1e-3)
    assert any("line rate" in w for w in r.warnings), r.warnings
    # A request of many times the line rate is written in scientific notation, not 300 digits.
    huge = hostsim.simulate(dict(cfg, loadgen={"rate": "1e300%"}))
    (w,) = [w for w in huge.warnings if w.startswith("loadgen.rate: requested")]
    assert "requested 1.488e299 Mpps" in w and len(w) < 150, w


def test_latency_at_low_load_is_exact(short):
    # 2 x propagation + 2 x serialization + service time, to the picosecond.
    cfg = short(preset="a72-quad", loadgen={"rate": "1Mpps", "size": 128, "keep_samples": 50},
                reflector={"service_time": "100ns"})
    r = hostsim.simulate(cfg).to_dict()
    serialization_ps = (128 + 20) * 8 * 10**12 // (200 * 10**9)
    expected_ps = 2 * 10**6 + 2 * serialization_ps + 100_000
    samples = r["loadgen"]["samples"]
    assert len(samples) == 50
    assert {lat for _, lat in samples} == {expected_ps}
    assert r["loadgen"]["latency_ns"]["p50"] == pytest.approx(expected_ps / 1000, rel=1e-3)
