"""Typed results: pydantic v2 models of a run's and a bandwidth test's result.

``hostsim.simulate(...)`` and ``hostsim.msb(...)`` return :class:`hostsim.Result`
and :class:`hostsim.MsbResult`, read-only views of the core's JSON that read
like dicts and objects. ``.typed()`` validates that JSON into the models here
(:class:`RunResult`, :class:`MsbResult`): every figure the load generator,
the run and the bandwidth test report is a declared, typed field (the
resolved ``config`` is the contract's own model, :class:`hostsim.schema.SimConfig`),
so an editor completes ``r.typed().loadgen.achieved_pps`` and a type checker
knows it is a float. The host model's many counters (``mem``, ``cpu``,
``nic``, ``pmd`` ...) stay tables (``dict``) here; ``to_frame()`` flattens them.

The models forbid unknown fields: ``tests/python/test_models.py`` validates
the results of every stack and application family against them, so a field
the core adds or drops fails a test until the model follows.
"""

from __future__ import annotations

from typing import Any, Dict, List, Literal, Optional

from pydantic import BaseModel, ConfigDict

from .schema import SimConfig

Table = Dict[str, Any]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Latency(_Model):
    """Round-trip latency of the measured window's replies (ns)."""

    count: int
    min: Optional[float] = None
    mean: Optional[float] = None
    max: Optional[float] = None
    std: Optional[float] = None
    p50: Optional[float] = None
    p90: Optional[float] = None
    p99: Optional[float] = None
    p999: Optional[float] = None


class Traffic(_Model):
    """What a generator (or one of its ports) sent and got back in the measured window."""

    tx_packets: int
    rx_packets: int
    tx_bytes: int
    rx_bytes: int
    lost_packets: int
    in_flight_packets: int
    duplicate_packets: int
    invalid_packets: int
    reordered_packets: int
    drop_rate: float
    loss_rate: float
    offered_bps: float
    offered_pps: float
    achieved_bps: float
    achieved_pps: float
    latency_ns: Latency
    # Present with the memcached client, the TCP receiver or a TCP flow, a trace, kept samples.
    memcached: Optional[Table] = None
    tcp: Optional[Table] = None
    rx_tcp_acks: Optional[int] = None
    goodput_bps: Optional[float] = None
    rx_untagged_packets: Optional[int] = None
    trace_frames: Optional[int] = None
    trace_frames_read: Optional[int] = None
    trace_frames_sent: Optional[int] = None
    trace_unsent_frames: Optional[int] = None
    trace_passes: Optional[int] = None
    trace_oversize_frames: Optional[int] = None
    trace_filtered_frames: Optional[int] = None
    trace_truncated_frames: Optional[int] = None
    trace_padded_frames: Optional[int] = None
    trace_checksummed_frames: Optional[int] = None
    trace_span_ps: Optional[int] = None
    trace_delayed_frames: Optional[int] = None
    trace_delay_ps: Optional[int] = None
    trace_complete: Optional[bool] = None
    #: The first ``loadgen.keep_samples`` (sequence number, latency) pairs.
    samples: Optional[List[List[float]]] = None


class PortTraffic(Traffic):
    """One generator port's share."""

    port: int
    sends: bool
    rx_frames_at_port: int


class LoadgenResult(Traffic):
    """The load generator's report (SPEC's measurement vocabulary)."""

    requested_pps: float
    #: For the mean frame sent in the measured window.
    line_rate_bps: float
    line_rate_pps: float
    #: For the mean frame a rate in percent or bps refers to (the configured sizes, a trace's, the memcached mix).
    nominal_line_rate_pps: float
    nominal_mean_frame_bytes: float
    link_rate_bps: int
    rate_capped: bool
    sending_ports: int
    max_frame_bytes: int
    mean_frame_bytes: float
    measured_window_ps: int
    #: (latency bucket in ns, replies) pairs.
    latency_histogram: List[List[float]]
    ports: List[PortTraffic]


class SamplePrediction(_Model):
    """The fluid model's prediction for the configured window (fast fidelity)."""

    tx_packets: int
    lost_packets: int
    in_flight_packets: int
    loss_rate: float
    backlog_growth_frames: int
    backlog_growth_rate: float
    buffers_fill_ps: Optional[int]
    #: Dropped frames by fate (``accounting.*.drops``' names): the sample's,
    #: and each fate's rate in its second half for the rest of the window.
    drops: Dict[str, int]
    #: Frames the fluid model loses after the sample, which no sample saw dropped.
    unclassified_drops: int


class OverflowSample(_Model):
    """The longer sample past the buffers' predicted fill, or why there is none."""

    sampled: bool
    #: When the first sample's fluid model filled the buffers, after the window starts.
    fill_ps: int
    window_ps: Optional[int] = None
    #: Whether its second half dropped (its rates then go on).
    dropped: Optional[bool] = None
    why: Optional[str] = None


class Sample(_Model):
    """A fast run: what it simulated and what that stands for, or why it
    simulated every frame (``sampled`` false, ``why``)."""

    sampled: bool
    why: Optional[str] = None
    warmup_ps: Optional[int] = None
    window_ps: Optional[int] = None
    represented_window_ps: Optional[int] = None
    #: How much later the sample's window starts than the configured one (its warm-up was longer).
    offset_ps: Optional[int] = None
    represented_duration_ps: Optional[int] = None
    represented_packets: Optional[int] = None
    represented_packets_per_wall_s: Optional[float] = None
    doublings: Optional[int] = None
    #: Times the warm-up doubled because the application's tables still grew.
    warmup_doublings: Optional[int] = None
    predicted: Optional[SamplePrediction] = None
    #: Present when the buffers fill within the window (None otherwise).
    overflow: Optional[OverflowSample] = None


class SimResult(_Model):
    """The run itself: simulated time, wall time, speed, buffering."""

    seed: int
    version: str
    simulated_ps: int
    simulated_s: float
    wall_s: float
    events: int
    packets: int
    packets_per_wall_s: float
    path_min_ps: int
    buffer_frames: int
    buffers: Dict[str, int]
    frame_buffers: int
    backlog_frames: Dict[str, int]
    backlog_growth_rate: float
    #: ``full`` or ``fast`` (``sim.fidelity``).
    fidelity: Literal["full", "fast"]
    #: A fast run's sample; None at the full fidelity.
    sample: Optional[Sample]


class Drops(_Model):
    """Where the host dropped frames, by class."""

    dma: int
    core: int
    tx: int
    ring: int
    fifo_tx: int
    no_port: int
    tx_ring_full: int
    socket: int
    qdisc: int


class RunResult(_Model):
    """One simulation's result, typed (``hostsim.Result.typed()``)."""

    config: SimConfig
    preset: str
    loadgen: LoadgenResult
    sim: SimResult
    warnings: List[str]
    stats: List[Table]
    capture: Table
    accounting: Optional[Table] = None
    reflector: Optional[Table] = None
    # The host model's report (every application but the reflector).
    stack: Optional[str] = None
    app: Optional[Table] = None
    drops: Optional[Drops] = None
    cores: Optional[List[Table]] = None
    cpu: Optional[Table] = None
    mem: Optional[Table] = None
    nic: Optional[Table] = None
    nics: Optional[List[Table]] = None
    ports: Optional[List[Table]] = None
    pmd: Optional[Table] = None
    kernel: Optional[Table] = None
    copy_engine: Optional[Table] = None
    pipeline: Optional[Table] = None
    rx_sharing: Optional[Table] = None


class PointLatency(_Model):
    p50: Optional[float] = None
    p99: Optional[float] = None
    mean: Optional[float] = None
    max: Optional[float] = None


class CurvePoint(_Model):
    """One trial of a bandwidth test."""

    requested_pps: Optional[float]
    offered_bps: float
    offered_pps: float
    achieved_bps: float
    achieved_pps: float
    tx_packets: int
    rx_packets: int
    drop_rate: float
    in_flight_packets: int
    loss_rate: float
    backlog_growth_rate: float
    passed: bool
    latency_ns: PointLatency
    warmup_ps: Optional[int] = None
    warmup_reason: Optional[str] = None
    #: A fast trial's simulated window (its sample).
    window_ps: Optional[int] = None
    #: A fast search's confirmation: a sample after the full rule's warm-up.
    confirmation: Optional[bool] = None
    drops: Optional[Dict[str, int]] = None
    ports: Optional[List[Table]] = None


class Knee(_Model):
    below: Optional[CurvePoint]
    above: Optional[CurvePoint]


class Bracket(_Model):
    below_pps: Optional[float]
    above_pps: Optional[float]


class Msb(_Model):
    """The bandwidth test's answer: the MSB, the knee around it, the curve."""

    bps: float
    pps: float
    ports: List[Table]
    sending_ports: int
    threshold: float
    resolution: float
    trials: int
    line_rate_pps: float
    line_rate_bps: float
    mean_frame_bytes: float
    knee: Knee
    curve: List[CurvePoint]
    trial: Table
    monotonic: bool
    retests: List[Table]
    #: The fast fidelity's confirmations of its best passing rate (``msb._find``).
    confirmations: Optional[List[Table]] = None
    bracket: Bracket
    search: Optional[Table] = None
    points: Optional[int] = None


class MsbSim(_Model):
    simulated_ps: int
    wall_s: float
    packets_per_wall_s: float
    events: int
    seed: int
    version: str


class MsbResult(_Model):
    """A bandwidth test's result, typed (``hostsim.MsbResult.typed()``)."""

    msb: Msb
    sim: MsbSim
    config: SimConfig
    preset: str
    warnings: List[str]
