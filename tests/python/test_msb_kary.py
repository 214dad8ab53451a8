"""The k-ary bandwidth test (``jobs=k``): k trials a round on an executor, against the bisection.

The device is test_msb's: a 10 Mpps server (fixed 100 ns service) behind a
4-frame queue, whose 1 % knee is at 10 Mpps / (1 - 1 %) = 10.10 Mpps.
"""

import json
import os
import time

import pytest

import hostsim
from hostsim.executor import ProcessExecutor
from hostsim.msb import MIN_TRIAL_PACKETS, _find
from hostsim.units import ConfigError

from test_msb import CAPACITY_PPS, _config

RESOLUTION = 0.005
KNEE_PPS = CAPACITY_PPS / (1 - 0.01)
LINE_PPS = 200e9 / (84 * 8)  # a72-quad's 200 Gbps at 64 B


def scrub(data):
    """A result without its wall times, the only figures that differ between runs."""
    if isinstance(data, dict):
        return {k: scrub(v) for k, v in data.items() if k not in ("wall_s", "packets_per_wall_s")}
    if isinstance(data, list):
        return [scrub(v) for v in data]
    return data


@pytest.fixture(scope="module")
def sequential(short):
    return hostsim.msb(_config(short), resolution=RESOLUTION)


@pytest.fixture(scope="module", params=[2, 3])
def kary(request, short):
    return request.param, hostsim.msb(_config(short), resolution=RESOLUTION, jobs=request.param)


def replay(curve_in_run_order, k):
    """Walks the trials as the search ran them: line rate, then rounds of k
    splitting (lo, hi) in k + 1; checks every rate and returns the rounds."""
    first, rest = curve_in_run_order[0], curve_in_run_order[1:]
    assert first["requested_pps"] == pytest.approx(LINE_PPS)
    lo, hi, rounds = 0.0, first["requested_pps"], 0
    while hi - lo > RESOLUTION * hi:
        trials, rest = rest[:k], rest[k:]
        assert len(trials) == k
        for i, t in enumerate(trials, 1):
            assert t["requested_pps"] == pytest.approx(lo + (hi - lo) * i / (k + 1), rel=1e-12)
        passed = [t["requested_pps"] for t in trials if t["passed"]]
        lo = max(passed, default=lo)
        hi = min((t["requested_pps"] for t in trials if not t["passed"] and t["requested_pps"] > lo), default=hi)
        rounds += 1
    assert len(rest) == 2  # the knee's re-tests
    return rounds


def test_kary_finds_the_knee_within_resolution(kary, sequential):
    k, r = kary
    m = r.msb
    assert KNEE_PPS * (1 - RESOLUTION) <= m.pps <= KNEE_PPS * 1.0005
    assert m.pps == pytest.approx(sequential.msb.pps, rel=RESOLUTION)
    below, above = m.knee.below, m.knee.above
    assert below.passed and not above.passed
    assert above.requested_pps - below.requested_pps <= RESOLUTION * above.requested_pps
    assert m.bracket.below_pps == m.pps and m.bracket.above_pps == above.offered_pps
    assert all(t.get("passed") == (t["expected"] == "pass") for t in m.retests) and m.monotonic


def test_kary_rounds_split_the_bracket_in_k_plus_1(kary, sequential):
    k, r = kary
    in_order = [t["config"]["loadgen"]["rate"]["value"] for t in r.trials]
    by_rate = {p["requested_pps"]: p for p in r.to_dict()["msb"]["curve"]}
    rounds = replay([by_rate[pps] for pps in in_order], k)
    assert r.msb.search.to_dict() == {"kind": "k-ary", "k": k, "rounds": rounds}
    # Fewer rounds than the bisection's steps (its trials less line rate and two re-tests):
    # k rates narrow the bracket (k + 1)-fold a round.
    assert rounds < sequential.msb.trials - 3
    assert r.msb.trials == len(r.trials) == len(r.msb.curve) == 1 + k * rounds + 2


def test_kary_is_deterministic(short):
    a = hostsim.msb(_config(short), resolution=RESOLUTION, jobs=2)
    b = hostsim.msb(_config(short), resolution=RESOLUTION, jobs=2)
    assert scrub(a.to_dict()) == scrub(b.to_dict())
    assert [scrub(t.to_dict()) for t in a.trials] == [scrub(t.to_dict()) for t in b.trials]


def test_jobs_1_is_the_bisection_unchanged(short, sequential):
    one = hostsim.msb(_config(short), resolution=RESOLUTION, jobs=1)
    assert scrub(one.to_dict()) == scrub(sequential.to_dict())
    assert "search" not in one.to_dict()["msb"]
    # Every trial after line rate is the midpoint of the bracket so far, then the two re-tests.
    points = one.to_dict()["msb"]["curve"]
    by_rate = {p["requested_pps"]: p for p in points}
    in_order = [by_rate[t["config"]["loadgen"]["rate"]["value"]] for t in one.trials]
    lo, hi = 0.0, in_order[0]["requested_pps"]
    for p in in_order[1:-2]:
        assert p["requested_pps"] == (lo + hi) / 2
        lo, hi = (p["requested_pps"], hi) if p["passed"] else (lo, p["requested_pps"])
    assert hi - lo <= RESOLUTION * hi


@pytest.mark.parametrize("jobs, max_trials, passed", [(4, 6, False), (3, 5, False), (2, 8, True), (3, 9, True)])
def test_kary_counts_trials_not_rounds_against_max_trials(short, jobs, max_trials, passed):
    # Line rate, full rounds, then a last round of what the budget leaves
    # (e.g. 1 + 3 + 3 + 2 = 9): the first pass comes in that last round, or not at all.
    r = hostsim.msb(_config(short), resolution=1e-4, max_trials=max_trials, jobs=jobs)
    assert r.msb.trials == len(r.trials) == max_trials
    assert (r.msb.knee.below is not None) == passed
    # With a knee, its re-tests did not fit in the budget.
    assert [t.get("skipped") for t in r.msb.retests] == (["max_trials"] * 2 if passed else [])
    assert any("max_trials was reached" in w for w in r.warnings) == passed


class _CurveStub:
    """A search whose trials come from a given loss curve (no simulation), k at a time."""

    def __init__(self, loss):
        self.loss, self.points, self.trials, self.rounds = loss, [], [], []
        self.length = type("Length", (), {"window_ps": 10**9, "fast": False})()

    def run(self, pps, confirm=False):
        point = {"requested_pps": pps, "offered_pps": pps, "passed": self.loss(pps) <= 0.01}
        self.points.append(point)
        self.trials.append(point)
        return point

    def run_many(self, rates, confirm=False):
        self.rounds.append(list(rates))
        return [self.run(pps) for pps in rates]


@pytest.mark.parametrize("k", [2, 3, 5, 8])
def test_kary_brackets_a_step_within_resolution(k):
    stub = _CurveStub(lambda pps: 0.0 if pps < 42e6 else 0.05)
    best, above, rounds, _ = _find(stub, 100e6, RESOLUTION, 40, k)
    assert best["requested_pps"] < 42e6 <= above["requested_pps"]
    assert above["requested_pps"] - best["requested_pps"] <= RESOLUTION * above["requested_pps"]
    assert rounds == len(stub.rounds) and all(len(r) == k for r in stub.rounds)
    assert len(stub.trials) == 1 + k * rounds <= 40


def test_kary_keeps_the_highest_pass_and_the_lowest_fail_above_it():
    # A pocket that passes at 50-60 Mpps inside a failing region: a round that
    # tests 25, 50 and 75 Mpps keeps 50 as lo and 75 (not 25) as hi.
    stub = _CurveStub(lambda pps: 0.0 if pps < 20e6 or 50e6 <= pps <= 60e6 else 0.05)
    best, above, _, _ = _find(stub, 100e6, RESOLUTION, 40, 3)
    assert stub.rounds[0] == [25e6, 50e6, 75e6]
    assert stub.rounds[1] == pytest.approx([50e6 + 25e6 * i / 4 for i in (1, 2, 3)])
    assert 50e6 <= best["requested_pps"] <= 60e6 < above["requested_pps"]


def test_kary_does_not_test_rates_too_slow_to_measure():
    stub = _CurveStub(lambda pps: 0.05)  # nothing passes: the bracket shrinks towards 0
    best, above, _, _ = _find(stub, 100e6, RESOLUTION, 1000, 3)
    assert best is None
    window_s = stub.length.window_ps / 1e12
    assert all(p["requested_pps"] * window_s >= MIN_TRIAL_PACKETS for p in stub.points)


@pytest.mark.parametrize("jobs", [0, -1, 1.5, True, "2"])
def test_jobs_must_be_a_positive_integer(jobs):
    with pytest.raises(ConfigError, match=r"^jobs: invalid value"):
        hostsim.msb(None, jobs=jobs)


def _pid_after(seconds):
    time.sleep(seconds)
    return os.getpid()


def test_a_process_executor_inside_with_keeps_its_workers():
    with ProcessExecutor(2) as ex:
        first = {pid for _, pid in ex.map_unordered(_pid_after, [0.3, 0.3])}
        second = {pid for _, pid in ex.map_unordered(_pid_after, [0.3, 0.3])}
        assert len(first) == 2 and second == first
    assert ex._pool is None
    # Outside `with`, a pool per call: new workers.
    third = {pid for _, pid in ex.map_unordered(_pid_after, [0.3, 0.3])}
    assert not third & first


def test_msb_cli_jobs_runs_a_k_ary_search(cli, tmp_path):
    args = ["msb", "--app", "reflector", "--set", "reflector.service_time=100ns", "--set", "reflector.queue_frames=4",
            "--size", "64", "--preset", "a72-quad", "--duration", "2ms", "--warmup", "200us",
            "--set", "sim.drain=100us", "--no-progress"]
    proc = cli(*args, "--jobs", "2", "--json", "k2.json", check=True)
    m = json.loads((tmp_path / "k2.json").read_text())["msb"]
    assert m["search"]["kind"] == "k-ary" and m["search"]["k"] == 2
    assert KNEE_PPS * (1 - RESOLUTION) <= m["pps"] <= KNEE_PPS * 1.0005
    assert f"k-ary search: {m['search']['rounds']} rounds of 2" in proc.stdout
    bad = cli(*args, "--jobs", "0")
    assert bad.returncode == 2 and "jobs: invalid value '0'" in bad.stderr
    # --ray with one trial a round would send nothing to the cluster.
    alone = cli(*args, "--ray", "127.0.0.1:6379")
    assert alone.returncode == 2 and "jobs: invalid value '1' (allowed: an integer >= 2 with --ray" in alone.stderr
