"""The bandwidth test: maximum sustainable bandwidth (MSB) by a search over trials.

MSB is the highest offered load whose loss rate stays at or below a
threshold (1 % by default; 0 gives RFC 2544 throughput). The loss rate is
RFC 2544's: frames of the measured window not received by the end of the
trial (dropped, or still inside the system after the drain) over frames
sent. The search works in
packets per second. The first trial runs at line rate for the mean frame
size, ``rate_bps / ((mean_bytes + 20) * 8)``; if it passes, the MSB is line
rate. Otherwise a bisection keeps the highest passing rate ``lo`` and the
lowest failing rate ``hi`` until ``hi - lo <= resolution * hi``, and the
knee is re-tested on both sides. Every trial runs the same config with the
same seed; only the rate and, with it, the warm-up change (see
``TrialLength``), so the curve is deterministic.

With several host ports the search sets each sending generator port's rate
(``loadgen.rate`` is per port) and the MSB is their aggregate, with each
port's share in ``msb.ports``. The MSB is reported from the best passing
trial (its measured offered rate),
with the knee (that trial and the first failing one above it) and the whole
curve of every trial run, sorted by offered rate. For a host application
each curve point also carries the trial's drop breakdown (``drops``: DmaDrops,
CoreDrops, TxDrops as ``dma``, ``core``, ``tx``). ``points=N`` adds N evenly
spaced trials across (0, line rate] to the curve for a fuller picture.

With ``jobs=k`` above 1 the search is k-ary: each round tests k rates at
once, splitting the bracket (lo, hi) evenly into k + 1 parts, on an
:mod:`~hostsim.executor` (a local pool of k processes, or the one given,
e.g. a Ray cluster's); the highest passing rate becomes ``lo`` and the
lowest failing rate above it ``hi``. It stops on the same resolution rule
and the same ``max_trials`` budget (counted in trials: the last round may
test fewer rates), then re-tests the knee (both re-tests at once) and runs
the ``points`` trials, k at a time. Trials are recorded in round order,
ascending rate within a round, whatever order they finish in, so a k-ary
search is as deterministic as the bisection; but different k test
different rates, so they can end in slightly different brackets (each
within the resolution of the knee). The result records it in
``msb.search`` (``{"kind": "k-ary", "k": k, "rounds": R}``); ``jobs=1``
(the default) is the bisection, run in this process, and its result has no
``msb.search``.

At ``sim.fidelity = fast`` every trial is a sample (``TrialLength``), which
cannot see a device that serves more slowly once its buffers are full.
The search's best passing rate is therefore confirmed by one more trial
with the full fidelity's warm-up; if that fails, the fast trials near the
knee are not trusted and the search goes on with such confirmations only
(``_refine``). ``msb.confirmations`` lists them.
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any, Dict, List, Mapping, Optional, Tuple

from .config import ConfigSource, resolve
from .executor import Executor, ProcessExecutor, check_jobs
from .result import MsbResult, Result
from .runner import as_config, core, simulate_resolved
from .units import ConfigError, parse_fraction

#: A trial expected to measure fewer frames than this is not run: its loss rate means nothing.
MIN_TRIAL_PACKETS = 10

#: Trial length. An overload first fills the device's buffers (rings, FIFOs,
#: queues, socket buffers: ``sim.buffer_frames``, B) and only then drops: at
#: an offered rate r exceeding what the device sustains by a fraction e,
#: they fill in B / (e·r). A trial's warm-up lasts at least
#: SAFETY·B / ((threshold + overload)·r), so for every excess of
#: threshold + overload or more the buffers are full before measuring
#: starts and the window sees the steady loss; the MSB then overstates the
#: rate at the threshold by at most ``overload`` in loss. SAFETY covers the
#: buffers draining while they fill (an estimate, as is the default
#: overload; RFC 2544 asks for 60 s trials, this is the shortest run that
#: buffering cannot hide an overload in).
TRIAL_SAFETY = 1.5
DEFAULT_OVERLOAD = 0.005
#: The longest warm-up a trial gets (simulated seconds), whatever the rule
#: asks: a bound on a trial's cost (an estimate), with a warning when a
#: trial reaches it.
MAX_TRIAL_WARMUP_S = 1.0


def sample_frames() -> int:
    """Frames of the window a fast trial simulates (the core's ``system::sample::SAMPLE_FRAMES``)."""
    return int(core().SAMPLE_FRAMES)


#: The bandwidth test's options that are fractions below 1: whether 0 is one, and what is allowed.
FRACTIONS = {
    "threshold": (True, "a loss rate from 0 to below 1, as a fraction (0.01) or a percentage (1%); "
                        "0 is RFC 2544 throughput"),
    "resolution": (False, "a relative width from 0.0001 (0.01 %) to below 1, as a fraction (0.005) or a percentage "
                          "(0.5%); a frame interval is a whole picosecond (6,720 ps at 100 GbE and 64 B), so a "
                          "finer bracket repeats the same trial"),
    "overload": (False, "a loss rate above 0 and below 1, as a fraction (0.005) or a percentage (0.5%)"),
}
#: The least value of a fraction, where there is one.
SMALLEST = {"resolution": 1e-4}
#: The bandwidth test's options that are counts: the least each may be.
COUNTS = {"points": 0, "max_trials": 1}


def check_option(name: str, value: Any, field: Optional[str] = None) -> Any:
    """One bandwidth-test option, checked: a fraction (``FRACTIONS``) as a
    number or text (``0.01``, ``"1%"``), a count (``COUNTS``) as an integer.
    An error names ``field`` (default ``name``, the keyword; the command
    line passes its flag, ``--threshold``) and shows ``value`` as given."""
    field = field or name
    if name in COUNTS:
        if isinstance(value, bool) or not isinstance(value, int) or value < COUNTS[name]:
            raise ConfigError.invalid(field, value, f"an integer >= {COUNTS[name]}")
        return value
    zero, allowed = FRACTIONS[name]
    try:
        number = parse_fraction(value, field)
    except ConfigError:
        raise ConfigError.invalid(field, value, allowed) from None
    if isinstance(number, bool) or not isinstance(number, (int, float)) or not (0 <= number < 1 and (zero or number)):
        raise ConfigError.invalid(field, value, allowed)
    if number < SMALLEST.get(name, 0.0):
        raise ConfigError.invalid(field, value, allowed)
    return float(number)


def _trials(n: int) -> str:
    """``1 trial``, ``2 trials``."""
    return f"{n} trial{'' if n == 1 else 's'}"


def curve_point(result: Mapping[str, Any], threshold: float) -> Dict[str, Any]:
    """One trial's entry in the curve."""
    lg = result["loadgen"]
    lat = lg["latency_ns"]
    backlog = float(result.get("sim", {}).get("backlog_growth_rate", 0.0))
    point: Dict[str, Any] = {
        "requested_pps": lg.get("requested_pps"),
        "offered_bps": lg["offered_bps"],
        "offered_pps": lg["offered_pps"],
        "achieved_bps": lg["achieved_bps"],
        "achieved_pps": lg["achieved_pps"],
        "tx_packets": lg["tx_packets"],
        "rx_packets": lg["rx_packets"],
        "drop_rate": lg["drop_rate"],
        "in_flight_packets": lg["in_flight_packets"],
        # RFC 2544: a frame not received by the end of the trial is lost, dropped or still inside.
        "loss_rate": lg["loss_rate"],
        # Frames the device's buffers took up beyond what it handled in the
        # window: a longer trial would lose them, so they count against the
        # threshold too (buffers must not hide an overload).
        "backlog_growth_rate": backlog,
        "passed": lg["loss_rate"] + backlog <= threshold,
        "latency_ns": {k: lat.get(k) for k in ("p50", "p99", "mean", "max")},
    }
    if "drops" in result:
        point["drops"] = dict(result["drops"])
    ports = result.get("ports") or []
    if len(ports) > 1:
        # One generator port per host port, in port order.
        point["ports"] = [_port_point(p, g) for p, g in zip(ports, lg["ports"])]
    return point


def _port_point(port: Mapping[str, Any], gen: Mapping[str, Any]) -> Dict[str, Any]:
    """One port's share of a trial: what its generator port offered and got
    back, and the drops its NIC port attributed."""
    keys = ("sends", "offered_pps", "offered_bps", "achieved_pps", "achieved_bps", "drop_rate", "loss_rate")
    return {"port": port["port"], "nic": port["nic"], **{k: gen[k] for k in keys}, "drops": dict(port["drops"])}


#: How a fast trial's ``warmup_reason`` starts when the core lengthened its
#: warm-up until the application's tables stopped growing.
TABLES_REASON = "fidelity fast: until the application's tables stopped growing"
#: How a fast search's confirmation of its best passing rate gives its warm-up.
CONFIRM_REASON = "fidelity fast, confirmation: the full rule's warm-up"
#: After a refuted confirmation the fast search's bracket is narrowed, by
#: confirmations, to this many resolutions (``_refine``).
REFUTED_RESOLUTION = 2


class TrialLength:
    """A trial's warm-up at a given rate: the user's, or longer when the
    device's buffers could still be filling when measuring starts.

    At ``sim.fidelity = fast``, for a load the core samples (not a trace
    replay, a closed loop or TCP: ``sample::not_stationary``), no trial
    waits for the buffers to fill: each is a sample (the core's
    ``system/sample.rs``) whose window holds ``SAMPLE_FRAMES`` frames,
    enough for buffers growing by ``overload`` of what is sent to show
    above the noise, and the growth counts against the threshold as the
    loss it becomes (``curve_point``). The core lengthens the warm-up
    (``warmup_frames``, and further while the application's tables grow);
    the trial's window leaves room for the first and for a sample doubled
    three times. Other loads keep the full rule. A sample cannot see a
    device that slows once its buffers are full, so the search confirms
    its best passing rate with a sample after the full rule's warm-up
    (``_find``)."""

    def __init__(self, base: Dict[str, Any], buffer_frames: int, sending_ports: int, threshold: float, overload: float):
        sim = base["sim"]
        # The core's rule: the frames a fast warm-up sends at least (every
        # buffer, flow and populated key once), and whether the load is sampled.
        self.warmup_frames, not_sampled = core().sample_rule(json.dumps(base), int(buffer_frames))
        self.fast = sim.get("fidelity") == "fast" and not_sampled is None
        self.min_warmup_ps = sim["warmup_ps"]
        self.window_ps = sim["duration_ps"] - sim["warmup_ps"]
        self.buffer_frames = buffer_frames
        self.sending_ports = max(1, sending_ports)
        self.excess = threshold + overload
        self.overload = overload

    def warmup_ps(self, pps: float, full_rule: bool = False) -> Tuple[int, str]:
        """The warm-up for a trial at ``pps`` per sending port, and why;
        ``full_rule`` asks for the full fidelity's rule at the fast one too
        (a confirmation)."""
        rate = pps * self.sending_ports
        if rate <= 0 or (self.fast and not full_rule):
            return self.min_warmup_ps, "sim.warmup"
        need_s = TRIAL_SAFETY * self.buffer_frames / (self.excess * rate)
        need = int(math.ceil(min(need_s, MAX_TRIAL_WARMUP_S) * 1e12))
        if need <= self.min_warmup_ps:
            return self.min_warmup_ps, "sim.warmup"
        if need_s > MAX_TRIAL_WARMUP_S:
            return need, f"capped at {MAX_TRIAL_WARMUP_S:g} s (the fill rule asks {need_s:.3g} s)"
        return need, (f"{TRIAL_SAFETY:g} x {self.buffer_frames} buffered frames / "
                      f"({self.excess:.3g} x {rate / 1e6:.4g} Mpps)")

    def window_for(self, pps: float) -> int:
        """The window of a trial at ``pps`` per sending port: the user's, or
        at the fast fidelity long enough that the core samples it: its
        warm-up (until every buffer, flow and populated key was used) and
        a sample's window, doubled three times, fit in the trial, with 1 ns
        to spare for rounding."""
        rate = pps * self.sending_ports
        if not self.fast or rate <= 0:
            return self.window_ps
        frames = 8 * sample_frames() + self.warmup_frames
        return max(self.window_ps, int(math.ceil(frames / rate * 1e12)) + 1000)

    def to_dict(self) -> Dict[str, Any]:
        if self.fast:
            return {
                "rule": "fidelity fast: warmup = max(sim.warmup, time to send warmup_frames), doubled while the app's tables grow; "
                        "window = SAMPLE_FRAMES frames (doubled while its halves disagree), the rest predicted; "
                        "loss + buffer growth against the threshold",
                "fidelity": "fast",
                "buffer_frames": self.buffer_frames,
                "warmup_frames": self.warmup_frames,
                "sample_frames": sample_frames(),
                "overload": self.overload,
                "min_warmup_ps": self.min_warmup_ps,
                "window_ps": self.window_ps,
            }
        return {
            "rule": "warmup = max(sim.warmup, safety x buffer_frames / ((threshold + overload) x rate)); "
                    "window = sim.duration - sim.warmup",
            "buffer_frames": self.buffer_frames,
            "safety": TRIAL_SAFETY,
            "overload": self.overload,
            "min_warmup_ps": self.min_warmup_ps,
            "max_warmup_ps": int(MAX_TRIAL_WARMUP_S * 1e12),
            "window_ps": self.window_ps,
        }


class _Search:
    """Runs trials at given packet rates and remembers them; ``executor``
    (when given) runs a round of several rates at once."""

    def __init__(self, base: Dict[str, Any], preset: str, threshold: float, bar: Any, length: TrialLength,
                 executor: Optional[Executor] = None):
        self.base = base
        self.preset = preset
        self.threshold = threshold
        self.bar = bar
        self.length = length
        self.executor = executor
        self.trials: List[Result] = []
        self.points: List[Dict[str, Any]] = []

    def _trial(self, pps: float, confirm: bool = False) -> Tuple[Dict[str, Any], int, str]:
        """The config of a trial at ``pps`` per sending port, its warm-up and
        why; ``confirm``: a fast trial after the full rule's warm-up."""
        cfg = dict(self.base)
        cfg["loadgen"] = dict(self.base["loadgen"], rate={"unit": "pps", "value": float(pps)})
        warmup, why = self.length.warmup_ps(pps, full_rule=confirm)
        cfg["sim"] = dict(self.base["sim"], warmup_ps=warmup, duration_ps=warmup + self.length.window_for(pps))
        if self.length.fast:
            # The test asks for the steady state: a fast trial warms up past
            # a start-up transient of the application's tables.
            cfg["sim"]["settle"] = True
            # Its verdict needs the first sample only (its loss and growth).
            cfg["sim"]["overflow_sample"] = False
        return cfg, warmup, why

    def _record(self, pps: float, warmup: int, why: str, result: Result, confirm: bool = False) -> Dict[str, Any]:
        point = curve_point(result, self.threshold)
        point["requested_pps"] = float(pps)
        point["warmup_ps"] = warmup
        sample = result.get("sim", {}).get("sample") or {}
        if sample.get("sampled"):
            # What the core simulated: its warm-up and a sample of the window.
            point["warmup_ps"] = sample["warmup_ps"]
            point["window_ps"] = sample["window_ps"]
            if sample.get("warmup_doublings"):
                why = f"{TABLES_REASON} ({sample['warmup_doublings']} warm-up doublings)"
            elif sample["warmup_ps"] > warmup:
                why = f"fidelity fast: until {self.length.warmup_frames} frames were sent (sample::warmup_frames)"
        point["warmup_reason"] = f"{CONFIRM_REASON} ({why})" if confirm else why
        if confirm:
            point["confirmation"] = True
        self.trials.append(result)
        self.points.append(point)
        return point

    def _tick(self, pps: float, point: Mapping[str, Any]) -> None:
        if self.bar is not None:
            verdict = "pass" if point["passed"] else "fail"
            self.bar.set_postfix_str(f"{pps / 1e6:.4g} Mpps loss {point['loss_rate']:.3%} {verdict}")
            self.bar.update(1)

    def run(self, pps: float, confirm: bool = False) -> Dict[str, Any]:
        """One trial, in this process (``confirm``: see ``_trial``)."""
        cfg, warmup, why = self._trial(pps, confirm)
        point = self._record(pps, warmup, why, simulate_resolved(cfg, self.preset), confirm)
        self._tick(pps, point)
        return point

    def run_many(self, rates: List[float], confirm: bool = False) -> List[Dict[str, Any]]:
        """Trials at ``rates``: at once on the executor (one after another in
        this process without one, or for a single rate); recorded in the
        order of ``rates`` whatever order they finish in."""
        if self.executor is None or len(rates) < 2:
            return [self.run(pps, confirm) for pps in rates]
        trials = [self._trial(pps, confirm) for pps in rates]
        results: Dict[int, Result] = {}
        for i, answer in self.executor.map_unordered(run_trial, [(cfg, self.preset) for cfg, _, _ in trials]):
            if isinstance(answer, BaseException) or "error" in answer:
                error = f"{type(answer).__name__}: {answer}" if isinstance(answer, BaseException) else answer["error"]
                raise RuntimeError(f"msb: the trial at {rates[i] / 1e6:.4g} Mpps per sending port failed ({error})")
            results[i] = Result(answer)
            self._tick(rates[i], curve_point(results[i], self.threshold))
        return [self._record(pps, warmup, why, results[i], confirm)
                for i, (pps, (_, warmup, why)) in enumerate(zip(rates, trials))]


def run_trial(task: Tuple[Dict[str, Any], str]) -> Dict[str, Any]:
    """One trial on an executor's worker: the result's data, or ``{"error"}``
    as text (exceptions with their own constructors do not always cross a
    process boundary)."""
    cfg, preset = task
    try:
        return simulate_resolved(cfg, preset).to_dict()
    except Exception as e:
        return {"error": f"{type(e).__name__}: {e}"}


def _progress_bar(enabled: bool, bound: int) -> Any:
    """A count of the trials run, with no total: how many a search takes is
    not known in advance (a fast search's confirmations, the knee's
    re-tests). ``bound`` is the most it can take, said in the description."""
    if not enabled:
        return None
    from tqdm import tqdm

    return tqdm(total=None, desc=f"msb (at most {bound})", unit=" trials", file=sys.stderr, leave=False)


def msb(
    config: ConfigSource = None,
    threshold: float = 0.01,
    resolution: float = 0.005,
    progress: bool = False,
    max_trials: int = 40,
    points: int = 0,
    overrides: Optional[Mapping[str, Any]] = None,
    overload: float = DEFAULT_OVERLOAD,
    jobs: int = 1,
    executor: Optional[Executor] = None,
) -> MsbResult:
    """Finds the maximum sustainable bandwidth of ``config`` and returns the curve.

    ``threshold`` is the largest acceptable loss rate (a fraction in [0, 1));
    ``resolution`` the relative width of the final bracket; ``max_trials``
    caps the search (in trials); ``points`` adds evenly spaced trials to the curve.
    ``overload`` bounds how far above the threshold a trial's true loss may
    be and still pass: trials warm up until the device's buffers are full
    (see ``TrialLength``). ``jobs`` above 1 makes the search k-ary with
    k = ``jobs`` (see the module's text): each round's trials run on
    ``executor``, by default a local pool of ``jobs`` processes; with
    ``jobs=1`` every trial runs in this process and ``executor`` is unused.
    """
    threshold = check_option("threshold", threshold)
    resolution = check_option("resolution", resolution)
    max_trials = check_option("max_trials", max_trials)
    points = check_option("points", points)
    overload = check_option("overload", overload)
    k = check_jobs(jobs)
    cfg = as_config(config, overrides)
    base = resolve(cfg)
    warnings: List[str] = []
    lg = base["loadgen"]
    if lg.get("tcp") is not None:
        # The generator is then the TCP receiver: it sends only ACKs, and no rate drives the device.
        raise ConfigError.invalid("app", base.get("app"), "an application the load generator offers a rate to: with "
                                  "loadgen.tcp (tcp-send) the host sends at its own pace, so it has no MSB; "
                                  "use `hostsim run` for its goodput")
    if cfg.loadgen.rate is not None:
        warnings.append(f"loadgen.rate ({cfg.loadgen.rate}) is ignored: the bandwidth test sets each trial's rate")
    if lg["capture_tx"] or lg["capture_rx"]:
        warnings.append("captures are not written during a bandwidth test (run one rate with `hostsim run`)")
        base["loadgen"] = dict(lg, capture_tx=None, capture_rx=None)
    if lg.get("trace") is not None:
        _replay_at_rate(base, warnings)
    # The core's view before any trial: the mean frame size (a trace's, or
    # the memcached client's requests') and the frames the device buffers.
    probe = _probe(base, cfg.preset_name())
    mean_bytes = float(probe["loadgen"]["nominal_mean_frame_bytes"])
    length = TrialLength(base, int(probe["sim"]["buffer_frames"]), int(probe["loadgen"]["sending_ports"]),
                         threshold, float(overload))
    # The core's line rate for that mean size, per sending port.
    line_pps = float(probe["loadgen"]["nominal_line_rate_pps"]) / max(1, int(probe["loadgen"]["sending_ports"]))

    # The search, its confirmations and re-tests stop at max_trials; the extra points come on top.
    bar = _progress_bar(progress, max_trials + points)
    # Our own pool is kept for every round (its workers start once); a given executor is the caller's.
    own = ProcessExecutor(k).__enter__() if k > 1 and executor is None else None
    search = _Search(base, cfg.preset_name(), threshold, bar, length, None if k == 1 else own or executor)
    try:
        best, above, rounds, refuted = _find(search, line_pps, resolution, max_trials, k)
        # After a refutation the knee's two sides are confirmations already: no re-tests.
        retests = [] if refuted else _retest_knee(search, best, above, resolution, line_pps, max_trials, at_once=k > 1)
        if any(r.get("skipped") == "max_trials" for r in retests):
            warnings.append("msb: max_trials was reached before the knee was re-tested; msb.monotonic is unchecked there")
        tried = {p["requested_pps"] for p in search.points}
        extra = [line_pps * i / points for i in range(1, points + 1)]
        search.run_many([pps for pps in extra if not any(math.isclose(pps, t, rel_tol=1e-9) for t in tried)])
    finally:
        if own is not None:
            own.close()
        if bar is not None:
            bar.close()

    # (A confirmation gives the full rule's reason in brackets after its own.)
    capped = [p for p in search.points if p["warmup_reason"].startswith(("capped", f"{CONFIRM_REASON} (capped"))]
    if capped:
        warnings.append(
            f"msb: {_trials(len(capped))} (the slowest at {min(p['requested_pps'] for p in capped) / 1e6:.4g} Mpps) "
            f"reached the {MAX_TRIAL_WARMUP_S:g} s warm-up cap: their buffers may not have filled, "
            "so an overload at those rates may pass"
        )
    confirmations = _confirmations(search) if length.fast else None
    warnings += _confirmation_warnings(search, best, refuted, bool(confirmations))
    # After a refutation the fast passes are not evidence (a sample only
    # under-states loss); its failures and the confirmations are.
    monotonic = _monotonic([p for p in search.points if _confirms(p) or not p["passed"]] if refuted else search.points)
    if not monotonic and refuted:
        warnings.append(
            "msb: the loss curve is not monotonic (a confirmation passed above a trial that failed; see msb.curve and "
            "msb.confirmations): a higher rate may pass too"
        )
    elif not monotonic:
        warnings.append(
            "msb: the loss curve is not monotonic (a rate passed above one that failed; see msb.curve and "
            "msb.retests): the MSB is the best passing rate the bisection found, and a higher one may pass too"
        )
    slow = _two_states(search.points, threshold)
    if slow is not None:
        low, high = slow
        warnings.append(
            f"msb: the delivered rate falls and rises again above the knee: {low['offered_pps'] / 1e6:.4g} Mpps offered "
            f"delivered {low['achieved_pps'] / 1e6:.4g} Mpps, but {high['offered_pps'] / 1e6:.4g} Mpps offered delivered "
            f"{high['achieved_pps'] / 1e6:.4g} Mpps. The device has a slower state near its MSB (e.g. a backlog that, once "
            "built, slows what drains it), and which state a trial ends in depends on its history: the MSB found may "
            "move with the trials' length (--warmup); see msb.curve"
        )
    if best is None and refuted:
        warnings.append(
            "no confirmation passed (msb.confirmations): "
            + ("max_trials was reached first" if len(search.trials) >= max_trials else "down to the slowest measurable rate")
            + "; the fast trials that passed were refuted; MSB reported as 0"
        )
    elif best is None:
        lowest = min(p['requested_pps'] for p in search.points) / 1e6
        warnings.append(
            f"no trial passed the {threshold:.2%} loss threshold; MSB reported as 0 "
            + (f"but unknown: max_trials ({max_trials}) was reached first, and it is only known to be below "
               f"{lowest:.4g} Mpps per sending port (raise --max-trials)" if len(search.trials) >= max_trials else
               f"(lowest rate tried: {lowest:.4g} Mpps per sending port)")
        )
    data = {
        "msb": dict(_msb_dict(search, best, above, threshold, resolution, mean_bytes),
                    trial=length.to_dict(), monotonic=monotonic, retests=retests,
                    **({} if confirmations is None else {"confirmations": confirmations}),
                    bracket={"below_pps": best["offered_pps"] if best else 0.0,
                             "above_pps": above["offered_pps"] if above else None},
                    # The bisection (jobs=1) records nothing here: results from before k-ary searches read the same.
                    **({} if k == 1 else {"search": {"kind": "k-ary", "k": k, "rounds": rounds}})),
        "sim": _sim_totals(search.trials),
        "config": base,
        "preset": cfg.preset_name(),
        "warnings": _merge_warnings(search.trials, warnings),
    }
    return MsbResult(data, search.trials)


def _replay_at_rate(base: Dict[str, Any], warnings: List[str]) -> None:
    """A trace is replayed at each trial's rate (``timing = "rate"``), looped."""
    trace = base["loadgen"]["trace"]
    if trace["timing"] != "rate" or trace["loop"] is False:
        warnings.append("loadgen.trace: the bandwidth test replays the trace at each trial's rate "
                        "(loadgen.trace.timing = rate), looping it when loadgen.trace.loop is false")
        loop = True if trace["loop"] is False else trace["loop"]
        base["loadgen"] = dict(base["loadgen"], trace=dict(trace, timing="rate", loop=loop))


def _probe(base: Dict[str, Any], preset: str) -> Mapping[str, Any]:
    """A run of 1 ps: what the core's generator will send and what the device buffers."""
    probe = dict(base, sim=dict(base["sim"], duration_ps=1, warmup_ps=0, drain_ps=0))
    return simulate_resolved(probe, preset).to_dict()


#: The knee is re-tested this many resolutions below the MSB and above the
#: first failing rate: just outside the final bracket (an estimate).
RETEST_STEPS = 2


def _retest_knee(search: _Search, best: Optional[Dict[str, Any]], above: Optional[Dict[str, Any]],
                 resolution: float, line_pps: float, max_trials: int = 1 << 30,
                 at_once: bool = False) -> List[Dict[str, Any]]:
    """Re-tests around the knee: a little below the MSB must pass, a little
    above the first failing rate must fail; otherwise the curve is not
    monotonic there. Returns what each re-test found. ``at_once`` runs both
    as one round (a k-ary search), else one after the other."""
    out: List[Dict[str, Any]] = []
    if best is None or above is None:
        return out  # line rate passed, or nothing did: no knee
    checks = [(best["requested_pps"] * (1 - RETEST_STEPS * resolution), True)]
    if above["requested_pps"] * (1 + RETEST_STEPS * resolution) <= line_pps:
        checks.append((above["requested_pps"] * (1 + RETEST_STEPS * resolution), False))
    planned: List[Dict[str, Any]] = []
    for pps, should_pass in checks:
        entry: Dict[str, Any] = {"requested_pps": pps, "expected": "pass" if should_pass else "fail"}
        if pps * search.length.window_ps / 1e12 < MIN_TRIAL_PACKETS:
            entry["skipped"] = "too few frames"
        elif len(search.trials) + len(planned) >= max_trials:
            entry["skipped"] = "max_trials"
        else:
            planned.append(entry)
        out.append(entry)
    rates = [e["requested_pps"] for e in planned]
    for entry, p in zip(planned, search.run_many(rates) if at_once else [search.run(pps) for pps in rates]):
        entry.update(passed=p["passed"], loss_rate=p["loss_rate"])
    return out


def _confirms(point: Mapping[str, Any]) -> bool:
    """Whether a fast search's trial had the full rule's warm-up."""
    return bool(point.get("confirmation"))


def _confirmation_warnings(search: _Search, best: Optional[Dict[str, Any]], refuted: bool,
                           confirmed: bool) -> List[str]:
    """What a fast search says of its confirmations: none run, or its fast best refuted."""
    if not search.length.fast or best is None:
        return []
    if not confirmed:
        return ["msb: max_trials was reached before the best passing rate was confirmed with the full rule's "
                "warm-up: the fast search may overstate the MSB"]
    if not refuted:
        return []
    fast_best = max(p["requested_pps"] for p in search.points if p["passed"] and not _confirms(p))
    return [f"msb: fast trials passed up to {fast_best / 1e6:.4g} Mpps per sending port, but a trial there with the "
            "full rule's warm-up failed (the device serves more slowly once its buffers fill, which a sample does not "
            "see): the search went on with such trials only (msb.confirmations)"]


def _confirmations(search: _Search) -> List[Dict[str, Any]]:
    """A fast search's trials with the full rule's warm-up, in the order they ran."""
    keys = ("requested_pps", "passed", "loss_rate", "backlog_growth_rate", "warmup_ps")
    return [{k: p[k] for k in keys} for p in search.points if _confirms(p)]


def _monotonic(points: List[Dict[str, Any]]) -> bool:
    """No trial passed at a rate above one that failed."""
    failed = [p["requested_pps"] for p in points if not p["passed"]]
    lowest_fail = min(failed, default=math.inf)
    return not any(p["passed"] and p["requested_pps"] > lowest_fail for p in points)


#: How much more than a lossy trial a trial at a higher rate must deliver
#: before the two are taken for two states of the device (estimate: above
#: a fast trial's 2 % tolerance and the spread of what one state delivers
#: from window to window, 2-3 % in stop 44's TouchFwd 1518 B searches).
TWO_STATES_MARGIN = 0.05


def _two_states(points: List[Dict[str, Any]], threshold: float) -> Optional[Tuple[Dict[str, Any], Dict[str, Any]]]:
    """A trial that lost frames (it delivered less than it was offered by
    more than the threshold) and one at a higher offered rate that delivered
    more than it by more than ``TWO_STATES_MARGIN`` (or the threshold):
    past its knee a device delivers what it sustains whatever the excess,
    so the two were in different states. Returns the lossy trial that
    delivered least and the first such trial above it, or None."""
    margin = max(TWO_STATES_MARGIN, threshold)
    lossy = [p for p in points if p["achieved_pps"] < p["offered_pps"] * (1 - threshold)]
    for lo in sorted(lossy, key=lambda p: p["achieved_pps"]):
        above = [hi for hi in points
                 if hi["offered_pps"] > lo["offered_pps"] and hi["achieved_pps"] > lo["achieved_pps"] * (1 + margin)]
        if above:
            return lo, min(above, key=lambda p: p["offered_pps"])
    return None


def _find(search: _Search, line_pps: float, resolution: float, max_trials: int,
          k: int) -> Tuple[Optional[Dict[str, Any]], Optional[Dict[str, Any]], int, bool]:
    """The search proper: line rate first, then the bisection (``k`` = 1)
    or the k-ary search. At the fast fidelity the best passing rate is
    then confirmed; if the confirmation fails, the search goes on with
    confirmations only (``_refine``). Returns (best passing point or None,
    lowest failing point above it or None, k-ary rounds, whether the best
    was refuted)."""
    first = search.run(line_pps)
    if first["passed"]:
        best, above, rounds = first, None, 0
    else:
        best, above, rounds = _narrow(search, 0.0, line_pps, None, first, resolution, max_trials, k)
    if not search.length.fast or best is None or len(search.trials) >= max_trials:
        return best, above, rounds, False
    check = search.run(best["requested_pps"], confirm=True)
    if check["passed"]:
        return best, above, rounds, False
    best, above, more = _refine(search, best["requested_pps"], check, resolution, max_trials, k)
    return best, above, rounds + more, True


def _refine(search: _Search, refuted: float, above: Dict[str, Any], resolution: float, max_trials: int,
            k: int) -> Tuple[Optional[Dict[str, Any]], Optional[Dict[str, Any]], int]:
    """The search below a fast best rate its confirmation refuted: fast
    trials near it passed a rate the device does not sustain once its
    buffers are full, so only confirmations are trusted from here. They
    step down 2, 4, 8, … resolutions below it until one passes, then
    narrow the bracket to twice the resolution (each costs a full trial's
    warm-up; the full test's own trials scatter about that much at a knee,
    an estimate). Returns (best, above, rounds)."""
    best: Optional[Dict[str, Any]] = None
    lo, hi, j, rounds = 0.0, refuted, 1, 0
    while best is None and len(search.trials) < max_trials:
        # Steps of 2^j resolutions; once a step would be more than half the
        # way to 0, halving instead (never 0 or below).
        rates: List[float] = []
        for _ in range(min(k, max_trials - len(search.trials))):
            prev = rates[-1] if rates else hi
            rates.append(max(refuted * (1 - resolution * 2 ** j), prev / 2))
            j += 1
        rates = [r for r in rates if r * search.length.window_ps / 1e12 >= MIN_TRIAL_PACKETS]
        if not rates:
            return None, above, rounds
        rounds += k > 1
        for r, p in zip(rates, search.run_many(rates, confirm=True)):
            if p["passed"]:
                lo, best = r, p
                break
            hi, above = r, p
    if best is None:
        return None, above, rounds
    best, above, more = _narrow(search, lo, hi, best, above, REFUTED_RESOLUTION * resolution, max_trials, k, confirm=True)
    return best, above, rounds + more


def _narrow(search: _Search, lo: float, hi: float, best: Optional[Dict[str, Any]], above: Dict[str, Any],
            resolution: float, max_trials: int, k: int, confirm: bool = False) -> Any:
    """The bracket (lo, hi) narrowed by the bisection or the k-ary search; returns (best, above, k-ary rounds)."""
    if k == 1:
        return (*_bisect(search, lo, hi, best, above, resolution, max_trials, confirm), 0)
    return _kary(search, lo, hi, best, above, resolution, max_trials, k, confirm)


def _bisect(search: _Search, lo: float, hi: float, best: Optional[Dict[str, Any]], above: Dict[str, Any],
            resolution: float, max_trials: int, confirm: bool = False) -> Any:
    """Bisects (lo, hi) until ``hi - lo <= resolution * hi``; returns (best passing point or None, lowest failing point above it)."""
    while len(search.trials) < max_trials and hi - lo > resolution * hi:
        mid = (lo + hi) / 2
        if mid * search.length.window_ps / 1e12 < MIN_TRIAL_PACKETS:
            break
        point = search.run(mid, confirm)
        if point["passed"]:
            lo, best = mid, point
        else:
            hi, above = mid, point
    return best, above


def _kary(search: _Search, lo: float, hi: float, best: Optional[Dict[str, Any]], above: Dict[str, Any],
          resolution: float, max_trials: int, k: int, confirm: bool = False) -> Any:
    """The search with k rates a round in (lo, hi); returns (best passing point or None,
    lowest failing point above it, rounds run)."""
    rounds = 0
    while len(search.trials) < max_trials and hi - lo > resolution * hi:
        n = min(k, max_trials - len(search.trials))
        rates = [lo + (hi - lo) * i / (n + 1) for i in range(1, n + 1)]
        rates = [r for r in rates if r * search.length.window_ps / 1e12 >= MIN_TRIAL_PACKETS]
        if not rates:
            break
        tried = list(zip(rates, search.run_many(rates, confirm)))
        rounds += 1
        passed = [(r, p) for r, p in tried if p["passed"]]
        if passed:
            lo, best = passed[-1]
        failed = [(r, p) for r, p in tried if not p["passed"] and r > lo]
        if failed:
            hi, above = failed[0]
    return best, above, rounds


def _msb_dict(
    search: _Search,
    best: Optional[Dict[str, Any]],
    above: Optional[Dict[str, Any]],
    threshold: float,
    resolution: float,
    mean_bytes: float,
) -> Dict[str, Any]:
    # The core's figures for the whole generator: its sending ports and their line rate.
    lg = search.trials[0]["loadgen"]
    sending = int(lg["sending_ports"])
    return {
        "bps": best["offered_bps"] if best else 0.0,
        "pps": best["offered_pps"] if best else 0.0,
        # Several ports: the MSB is the aggregate of the sending ports; each port's share is here.
        "ports": best.get("ports", []) if best else [],
        "sending_ports": sending,
        "threshold": threshold,
        "resolution": resolution,
        "trials": len(search.trials),
        # The line rate the trials' rates are fractions of (the nominal mean's).
        "line_rate_pps": lg["nominal_line_rate_pps"],
        "line_rate_bps": lg["nominal_line_rate_pps"] * mean_bytes * 8,
        "mean_frame_bytes": mean_bytes,
        "knee": {"below": best, "above": above},
        "curve": sorted(search.points, key=lambda p: (p["offered_bps"], p["requested_pps"])),
    }


def _sim_totals(trials: List[Result]) -> Dict[str, Any]:
    sims = [t.to_dict()["sim"] for t in trials]
    wall = sum(s["wall_s"] for s in sims)
    packets = sum(s["packets_per_wall_s"] * s["wall_s"] for s in sims)
    return {
        "simulated_ps": sum(s["simulated_ps"] for s in sims),
        "wall_s": wall,
        "packets_per_wall_s": packets / wall if wall > 0 else 0.0,
        "events": sum(s.get("events", 0) for s in sims),
        "seed": sims[0]["seed"] if sims else None,
        "version": sims[0].get("version") if sims else None,
    }


def _passed_share(trial: Result) -> float:
    """The share of a trial's DRAM accesses that were row hits passed out
    of booking order, from its counters, as the core's warning computes
    it (``system/warnings.rs``)."""
    d = trial["mem"]["dram"]
    accesses = d["row_hits"] + d["row_misses"] + d["row_conflicts"]
    return d["passed_hits"] / max(1, accesses)


def _merge_warnings(trials: List[Result], extra: List[str]) -> List[str]:
    """Every distinct warning once. A trial whose buffers grew says so in
    its own words; the test counts that growth as loss (``curve_point``),
    so those become one line that counts them. So do the trials whose
    DRAM row hits were passed out of booking order."""
    # How the core starts the warnings that a trial's buffers grew
    # (``system::FELL_BEHIND``), that a fast trial warmed up until the
    # application's tables stopped growing (``sample::TABLES_GREW``), and
    # that row hits were passed out of booking order (``system::PASSED``).
    fell_behind, tables_grew, passed = core().FELL_BEHIND, core().TABLES_GREW, core().PASSED
    seen: Dict[str, None] = {}
    for w in extra:
        seen.setdefault(w, None)
    behind = grew = 0
    passed_trials = 0
    shares: List[float] = []
    for t in trials:
        behind += any(w.startswith(fell_behind) for w in t.warnings)
        grew += any(w.startswith(tables_grew) for w in t.warnings)
        for w in t.warnings:
            if w.startswith(passed):
                passed_trials += 1
                shares.append(_passed_share(t))
            elif not w.startswith((fell_behind, tables_grew)):
                seen.setdefault(w, None)
    if behind:
        seen.setdefault(f"msb: {_trials(behind)} ended with the device's buffers still growing; their growth counts "
                        "as loss against the threshold (curve: backlog_growth_rate)", None)
    if passed_trials:
        seen.setdefault(f"msb: {_trials(passed_trials)} warned that {passed} (up to {max(shares) * 100:.1f} % of "
                        "their DRAM accesses): the latencies of the hits passed (mostly cores') are optimistic (docs/reference/dram-pcie.md)", None)
    if grew:
        # The test asks for the steady state: a longer warm-up is what it needs.
        seen.setdefault(f"msb: {grew} fast trial{'' if grew == 1 else 's'} warmed up until the application's tables stopped growing "
                        "(curve: warmup_ps, warmup_reason), past their configured length where it took longer", None)
    return list(seen)
