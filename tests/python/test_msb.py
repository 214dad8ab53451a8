"""The bandwidth test against queueing theory, using the reflector (a single server, finite queue).

A server with a fixed 100 ns service time handles 10 Mpps. With a small
queue (4 frames) that fills during warm-up, a constant offered rate r above
capacity loses 1 - capacity/r in steady state, so the MSB at drop threshold t
is capacity / (1 - t): 10.10 Mpps at 1 %, and just below 10 Mpps at 0 %.
"""

import math

import pytest

import hostsim
from hostsim.cli import format_msb
from hostsim.units import ConfigError

CAPACITY_PPS = 10e6
SERVER = {"service": "fixed", "service_time": "100ns", "queue_frames": 4}
TIMING = {"duration": "2ms", "warmup": "200us", "drain": "100us"}


def _config(short, **extra):
    return short(reflector=SERVER, sim=TIMING, loadgen={"size": 64}, **extra)


@pytest.fixture(scope="module")
def msb_1pct(short):
    return hostsim.msb(_config(short), threshold=0.01, resolution=0.005)


def test_msb_at_1_percent_finds_capacity(msb_1pct):
    m = msb_1pct.msb
    knee = CAPACITY_PPS / (1 - 0.01)
    # 10 Mpps within 1 %: the 1 % knee of a 10 Mpps server is at 10.10 Mpps.
    assert m.pps == pytest.approx(CAPACITY_PPS, rel=0.0101)
    assert knee * (1 - 0.005) <= m.pps <= knee * 1.0005
    assert m.bps == pytest.approx(m.pps * 64 * 8, rel=1e-9)
    assert m.threshold == 0.01 and m.resolution == 0.005


def test_msb_knee_brackets_the_msb(msb_1pct):
    knee = msb_1pct.msb.knee
    below, above = knee.below, knee.above
    assert below.passed and below.drop_rate <= 0.01
    assert not above.passed and above.drop_rate > 0.01
    assert above.offered_pps > below.offered_pps
    # The search stopped once the bracket was within the resolution.
    assert above.requested_pps - below.requested_pps <= 0.005 * above.requested_pps
    assert msb_1pct.msb.pps == below.offered_pps


def test_msb_curve_is_sorted_and_complete(msb_1pct):
    curve = msb_1pct.msb.curve
    assert len(curve) == msb_1pct.msb.trials == len(msb_1pct.trials)
    offered = [p.offered_bps for p in curve]
    assert offered == sorted(offered)
    # The first trial is at line rate (100 GbE... here a72-quad: 200 Gbps) and fails.
    line = 200e9 / (84 * 8)
    assert max(p.requested_pps for p in curve) == pytest.approx(line)
    for p in curve:
        assert set(p.latency_ns) >= {"p50", "p99", "mean", "max"}
        assert p.passed == (p.drop_rate <= 0.01)
        # Above capacity every trial loses 1 - capacity/offered (queue of 4 is negligible).
        if p.offered_pps > 1.01 * CAPACITY_PPS:
            assert p.drop_rate == pytest.approx(1 - CAPACITY_PPS / p.offered_pps, abs=0.003)


def test_msb_result_carries_sim_totals_and_config(msb_1pct):
    d = msb_1pct.to_dict()
    assert d["config"]["reflector"]["service_time_ps"] == 100_000
    assert d["config"]["loadgen"]["rate"] == {"unit": "percent", "value": 100.0}
    assert d["sim"]["simulated_ps"] == sum(t.sim.simulated_ps for t in msb_1pct.trials)
    assert d["sim"]["seed"] == 1 and d["sim"]["version"] == hostsim.__version__
    assert d["sim"]["wall_s"] > 0 and d["sim"]["packets_per_wall_s"] > 0
    assert d["preset"] == "a72-quad"


def test_msb_at_0_percent_is_just_below_capacity(short):
    m = hostsim.msb(_config(short), threshold=0.0).msb
    assert 0.99 * CAPACITY_PPS <= m.pps <= CAPACITY_PPS
    assert m.knee.below.drop_rate == 0
    assert m.knee.above.drop_rate > 0


def test_msb_at_line_rate_when_nothing_drops(short):
    # A 1 ns server keeps up with 64 B at 200 Gbps (3.36 ns per frame): one trial, MSB = line rate.
    cfg = short(reflector={"service_time": "1ns"}, sim={"duration": "200us", "warmup": "20us"})
    r = hostsim.msb(cfg)
    assert r.msb.trials == 1
    assert r.msb.pps == pytest.approx(200e9 / (84 * 8), rel=1e-3)
    assert r.msb.knee.above is None


def test_points_add_evenly_spaced_trials(short):
    cfg = short(reflector=SERVER, sim={"duration": "500us", "warmup": "100us"})
    r = hostsim.msb(cfg, resolution=0.1, points=4)
    requested = sorted(p.requested_pps for p in r.msb.curve)
    line = 200e9 / (84 * 8)
    for k in (1, 2, 3):  # k = 4 is line rate, already the first trial
        assert any(math.isclose(x, line * k / 4, rel_tol=1e-9) for x in requested)
    assert r.msb.trials == len(r.msb.curve)


def test_search_is_capped_by_max_trials(short):
    r = hostsim.msb(_config(short), resolution=1e-4, max_trials=5)
    assert r.msb.trials == 5


def test_a_resolution_finer_than_a_picosecond_step_is_refused():
    # 1e-300 once bisected identical trials until max_trials ran out.
    for bad in (1e-300, 5e-5, "0.001%"):
        with pytest.raises(hostsim.ConfigError, match=r"resolution: invalid value .*from 0\.0001"):
            hostsim.msb({"loadgen": {"size": 64}}, resolution=bad)


def test_device_that_drops_everything_reports_zero(short):
    cfg = short(reflector={"drop_every": 1}, sim={"duration": "100us", "warmup": "10us"})
    r = hostsim.msb(cfg, max_trials=6)
    assert r.msb.pps == 0 and r.msb.bps == 0
    assert r.msb.knee.below is None
    assert any("no trial passed" in w for w in r.warnings)


def test_a_budget_spent_before_any_pass_says_the_msb_is_unknown(short):
    """Two trials at 64 B into a server of 10 Mpps: line rate and half of
    it fail. The MSB is then only known to lie below the lowest failing
    rate, and the table says that rather than 0."""
    r = hostsim.msb(_config(short), max_trials=2)
    assert r.msb.knee.below is None and r.msb.trials == 2
    lowest = min(p.requested_pps for p in r.msb.curve)
    assert any(f"max_trials (2) was reached first, and it is only known to be below {lowest / 1e6:.4g} Mpps" in w
               for w in r.warnings), r.warnings
    line = [s for s in format_msb(r.to_dict()).splitlines() if s.startswith("MSB: ")]
    assert line and line[0].startswith(f"MSB: below {r.msb.bracket.above_pps / 1e6:.4g} Mpps (no trial passed)"), line


def test_a_rate_given_to_the_bandwidth_test_is_said_to_be_ignored(short):
    cfg = _config(short)
    assert not any("loadgen.rate" in w for w in hostsim.msb(cfg, max_trials=1).warnings)
    cfg["loadgen"]["rate"] = "50%"
    r = hostsim.msb(cfg, max_trials=1)
    assert "loadgen.rate (50%) is ignored: the bandwidth test sets each trial's rate" in r.warnings, r.warnings


@pytest.mark.parametrize("kwargs, field", [
    ({"threshold": 1.0}, "threshold"),
    ({"threshold": -0.1}, "threshold"),
    ({"resolution": 0}, "resolution"),
    ({"max_trials": 0}, "max_trials"),
    ({"points": -1}, "points"),
])
def test_msb_argument_errors(kwargs, field):
    with pytest.raises(ConfigError, match=rf"^{field}: invalid value"):
        hostsim.msb(None, **kwargs)


def test_overload_drop_rate_is_one_minus_capacity_over_offered(short):
    # 20 Mpps offered to a 10 Mpps server with the default 1024-frame queue, which
    # fills in ~100 us, well inside the 500 us warm-up: steady-state loss is 1/2.
    cfg = short(loadgen={"rate": "20Mpps"}, reflector={"service_time": "100ns", "queue_frames": 1024},
                sim={"duration": "2ms", "warmup": "500us"})
    lg = hostsim.simulate(cfg).loadgen
    assert lg.drop_rate == pytest.approx(1 - 10e6 / 20e6, rel=0.01)
    assert lg.achieved_pps == pytest.approx(10e6, rel=0.01)


def test_mm1k_blocking_probability(short):
    # Poisson arrivals at rho = 0.9 into an exponential server holding K = 8 frames:
    # P(block) = (1 - rho) rho^K / (1 - rho^(K+1)) = 7.03 %.
    rho, k = 0.9, 8
    expected = (1 - rho) * rho**k / (1 - rho ** (k + 1))
    cfg = short(loadgen={"rate": "9Mpps", "interarrival": "poisson"},
                reflector={"service": "exponential", "service_time": "100ns", "queue_frames": k},
                sim={"duration": "20ms", "warmup": "100us"})
    lg = hostsim.simulate(cfg).loadgen
    assert lg.tx_packets > 150_000
    assert lg.drop_rate == pytest.approx(expected, rel=0.05)


def test_trials_warm_up_until_the_buffers_cannot_hide_an_overload():
    # A 10 Mpps server (100 ns per frame) behind a 1024-frame queue. With a
    # 1 ms trial the queue took up a 10 % overload; the trials now warm up
    # until it is full, so the MSB is the steady rate at the 1 % threshold:
    # 10 Mpps / (1 - 1 %) = 10.10 Mpps.
    from hostsim.msb import DEFAULT_OVERLOAD, TRIAL_SAFETY

    r = hostsim.msb({"app": "reflector", "reflector": {"service_time": "100ns"}}).to_dict()
    m = r["msb"]
    # The model: the rate that loses 1 % is 10/0.99 Mpps; the search ends within
    # its resolution below it, and passes at most threshold + overload of loss above.
    assert 10.0e6 / 0.99 * (1 - 0.005) <= m["pps"] <= 10.0e6 / (1 - 0.01 - DEFAULT_OVERLOAD), m["pps"]
    trial = m["trial"]
    assert trial["buffer_frames"] == 1024 and trial["safety"] == TRIAL_SAFETY
    for p in m["curve"]:
        need = TRIAL_SAFETY * 1024 / ((0.01 + trial["overload"]) * p["requested_pps"]) * 1e12
        assert p["warmup_ps"] >= min(need, trial["max_warmup_ps"]) - 1, p
    # A user window below the fill time no longer decides: the same MSB with a 20 ms window.
    long = hostsim.msb({"app": "reflector", "reflector": {"service_time": "100ns"},
                        "sim": {"duration": "20ms", "warmup": "100us"}}).to_dict()["msb"]
    assert long["pps"] == pytest.approx(m["pps"], rel=0.01)


class _CurveStub:
    """A search whose trials come from a given loss curve (no simulation)."""

    def __init__(self, loss):
        self.loss, self.points, self.trials = loss, [], []
        self.length = type("Length", (), {"window_ps": 10**9, "fast": False})()

    def run(self, pps, confirm=False):
        point = {"requested_pps": pps, "offered_pps": pps, "loss_rate": self.loss(pps)}
        point["passed"] = point["loss_rate"] <= 0.01
        self.points.append(point)
        self.trials.append(point)
        return point


def test_a_non_monotonic_curve_is_detected_by_the_knee_retests():
    from hostsim.msb import _find, _monotonic, _retest_knee

    # Loses 5 % above 30 Mpps but for a narrow pocket at 50-50.3 Mpps, which
    # the bisection happens to land in: it cannot tell from its own trials.
    def loss(pps):
        return 0.0 if pps < 30e6 or 50e6 <= pps <= 50.3e6 else 0.05

    stub = _CurveStub(loss)
    best, above, _, _ = _find(stub, 100e6, 0.005, 40, 1)
    assert 50e6 <= best["requested_pps"] <= 50.3e6
    assert _monotonic(stub.points) is True
    retests = _retest_knee(stub, best, above, 0.005, 100e6)
    assert [r["expected"] for r in retests] == ["pass", "fail"] and retests[0]["passed"] is False
    assert _monotonic(stub.points) is False
    # A monotonic curve stays monotonic through the re-tests.
    calm = _CurveStub(lambda pps: 0.0 if pps < 42e6 else 0.05)
    best, above, _, _ = _find(calm, 100e6, 0.005, 40, 1)
    assert all(r["passed"] == (r["expected"] == "pass") for r in _retest_knee(calm, best, above, 0.005, 100e6))
    assert _monotonic(calm.points) is True


@pytest.mark.parametrize("resolution", [0.5, 0.6])
def test_a_coarse_resolution_skips_re_tests_it_cannot_run(resolution):
    # The re-test below the knee would be at a rate of 0 or less.
    m = hostsim.msb({"app": "reflector", "reflector": {"service_time": "100ns"},
                     "sim": {"duration": "200us", "warmup": "20us"}}, resolution=resolution).msb
    assert m.pps > 0
    assert all(r["requested_pps"] > 0 or r["skipped"] for r in m.retests)


def test_a_slower_state_above_the_knee_is_found_from_the_delivered_rates():
    from hostsim.msb import _two_states

    def curve(points):
        return [{"offered_pps": o * 1e6, "achieved_pps": a * 1e6} for o, a in points]

    # TouchFwd 1518 B on a72-quad (stop 44's search, Mpps offered → delivered):
    # three trials just above the knee delivered 2.30-2.33, the core-bound ones
    # above them 2.51-2.56.
    seen = curve([(2.0311, 2.0311), (2.4211, 2.4211), (2.4278, 2.4278), (2.4456, 2.3267), (2.4522, 2.3),
                  (2.4756, 2.3178), (2.54, 2.5144), (3.0478, 2.5111), (4.0633, 2.5211), (16.2544, 2.56)])
    low, high = _two_states(seen, 0.01)
    assert (low["offered_pps"], high["offered_pps"]) == (2.4522e6, 2.54e6)
    # One state: past the knee every trial delivers what the device sustains,
    # within the margin (the same search without the DRAM write queue: its
    # core-bound trials delivered 2.50-2.58 Mpps); a device that delivers
    # less as the load grows (livelock) is not two states either.
    assert _two_states(curve([(2.0311, 2.0311), (2.54, 2.5211), (2.5767, 2.52), (2.6033, 2.5789),
                              (2.6667, 2.4978), (16.2544, 2.4956)]), 0.01) is None
    assert _two_states(curve([(2.0, 2.0), (2.5, 2.4), (3.0, 2.2), (4.0, 1.9)]), 0.01) is None
    # A trial below its knee (delivering what it was offered) is no lossy trial.
    assert _two_states(curve([(1.0, 1.0), (2.0, 2.0), (3.0, 2.1)]), 0.01) is None


def test_trials_whose_row_hits_were_passed_merge_into_one_warning():
    from hostsim._core import FELL_BEHIND, PASSED
    from hostsim.msb import _merge_warnings
    from hostsim.result import Result

    def trial(warnings, passed=0, hits=0):
        dram = {"passed_hits": passed, "row_hits": hits, "row_misses": 500, "row_conflicts": 500}
        return Result({"warnings": warnings, "mem": {"dram": dram}})

    # The share is the trials' own counters, not the warning's words.
    merged = _merge_warnings([
        trial([f"{PASSED}: (words)", f"{FELL_BEHIND}: grew"], passed=150, hits=1_000),
        trial([f"{PASSED}: (words)", "another"], passed=120, hits=1_000),
        trial(["another"]),
    ], ["extra"])
    assert merged[:2] == ["extra", "another"]
    assert not any(w.startswith(PASSED) for w in merged)
    assert merged[2].startswith("msb: 1 trial ended with the device's buffers still growing")
    assert merged[3] == f"msb: 2 trials warned that {PASSED} (up to 7.5 % of their DRAM accesses): the latencies " \
                        "of the hits passed (mostly cores') are optimistic (docs/reference/dram-pcie.md)"


def test_the_tcp_sender_has_no_msb():
    """With tcp-send the generator only acknowledges: no rate drives the host, so there is nothing to search."""
    with pytest.raises(ConfigError, match="app.*has no MSB"):
        hostsim.msb({"app": "tcp-send", "stack": "kernel", "sim": {"duration": "300us"}}, max_trials=2)


def test_the_api_takes_a_threshold_and_resolution_as_the_cli_writes_them():
    from hostsim.msb import check_option
    from hostsim.units import ConfigError

    check_threshold = lambda v: check_option("threshold", v)  # noqa: E731
    assert check_threshold("1%") == pytest.approx(0.01) and check_threshold("0.02") == 0.02 and check_threshold(0) == 0.0
    assert check_option("resolution", "0.5%") == pytest.approx(0.005)
    with pytest.raises(ConfigError, match=r"^threshold: invalid value '1 pct'"):
        check_threshold("1 pct")
    # The value as given, not as parsed.
    with pytest.raises(ConfigError, match=r"^threshold: invalid value '150%' \(allowed: a loss rate from 0 to below 1"):
        check_threshold("150%")
    with pytest.raises(ConfigError, match=r"^overload: invalid value '100%'"):
        hostsim.msb(None, overload="100%")


def test_the_progress_bar_counts_trials_against_a_bound_known_in_advance(short, monkeypatch):
    import tqdm

    bars = []

    class Bar:
        """Records what a tqdm bar is given: its total (at creation and after), and its count."""

        def __init__(self, total=None, desc="", **_):
            self.totals, self.desc, self.n = [total], desc, 0
            object.__setattr__(self, "total", total)
            bars.append(self)

        def __setattr__(self, name, value):
            if name == "total":
                self.totals.append(value)
            object.__setattr__(self, name, value)

        def set_postfix_str(self, text):
            pass

        def update(self, n):
            self.n += n

        def close(self):
            pass

    monkeypatch.setattr(tqdm, "tqdm", Bar)
    # A fast search confirms its best rate and re-tests the knee: trials beyond a bisection's count.
    config = short(reflector=SERVER, sim=dict(TIMING, fidelity="fast"), loadgen={"size": 64})
    m = hostsim.msb(config, threshold=0.01, resolution=0.005,
                    points=3, max_trials=30, progress=True)
    (bar,) = bars
    assert bar.totals == [None], "no total that could grow while the search runs"
    assert bar.desc == "msb (at most 33)" and bar.n == m.msb.trials <= 33
