"""Typed results: every stack and application family's result validates into the models."""

from __future__ import annotations

import pydantic
import pytest

import hostsim
from hostsim import models
from hostsim import rx_sharing as study

SHORT = {"sim": {"duration": "100us", "warmup": "10us"}}
I9 = dict(SHORT, preset="i9-7940x-cx5")

RUNS = {
    "reflector": SHORT,
    "testpmd": dict(I9, app="testpmd"),
    "memcached-closed-loop": dict(I9, app="memcached", loadgen={"closed_loop": {"outstanding": 4}}),
    "udp-echo-kernel": dict(I9, app="udp-echo", stack="kernel"),
    "iperf-kernel": dict(I9, app="iperf", stack="kernel"),
    "tcp-send": {"app": "tcp-send", "stack": "kernel", "preset": "altra", "link": {"propagation": "1us"},
                 "sim": {"duration": "200us", "warmup": "0ps", "drain": "1ms"},
                 "host": {"app": {"tcp_send": {"writes": 1, "buffer_bytes": 100_000}}},
                 "loadgen": {"tcp": {"rtt": "10us"}}},
    "l2fwd-two-ports": dict(I9, app="l2fwd", host={"ports": 2}),
    "rx-sharing": study.point("parent_worker", 2, mode="macswap", duration="100us", warmup="20us"),
    "testpmd-fast": dict(I9, app="testpmd", loadgen={"rate": "20Mpps"}, sim={"duration": "5ms", "fidelity": "fast"}),
    "memcached-closed-loop-fast": dict(I9, app="memcached", loadgen={"closed_loop": {"outstanding": 4}},
                                       sim={"fidelity": "fast"}),
}


@pytest.mark.parametrize("name", list(RUNS))
def test_every_kind_of_run_validates_into_the_typed_model(name):
    r = hostsim.simulate(RUNS[name])
    t = r.typed()
    assert isinstance(t, models.RunResult)
    assert t.loadgen.tx_packets == r.loadgen.tx_packets and t.loadgen.achieved_pps == r.loadgen.achieved_pps
    assert t.config.app == r.config.app and t.preset == r.preset
    assert t.sim.events == r.sim.events
    if r.config.app != "reflector":
        assert t.drops is not None and t.drops.dma == r.drops.dma
    assert t.sim.fidelity == r.config.sim.fidelity
    if name.endswith("-fast"):
        # Sampled where the load is stationary; a closed loop runs whole.
        assert t.sim.sample is not None and t.sim.sample.sampled == ("closed-loop" not in name)
    else:
        assert t.sim.sample is None


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_bandwidth_test_validates_into_the_typed_model(jobs):
    m = hostsim.msb({"reflector": {"service_time": "100ns", "queue_frames": 64},
                     "sim": {"duration": "200us", "warmup": "50us"}}, jobs=jobs, points=2)
    t = m.typed()
    assert isinstance(t, models.MsbResult)
    assert t.msb.pps == m.msb.pps and len(t.msb.curve) == len(m.msb.curve) == t.msb.trials
    assert t.msb.knee.below is not None and t.msb.knee.below.passed
    assert (t.msb.search is not None) == (jobs > 1)


def test_a_field_the_models_do_not_know_fails_validation():
    """The models forbid unknown fields, so the tests above fail when the core adds one."""
    d = hostsim.simulate(SHORT).to_dict()
    d["loadgen"]["new_figure"] = 1
    with pytest.raises(pydantic.ValidationError, match="new_figure"):
        models.RunResult.model_validate(d)
    d = hostsim.simulate(SHORT).to_dict()
    del d["sim"]["events"]
    with pytest.raises(pydantic.ValidationError, match="events"):
        models.RunResult.model_validate(d)


def test_trace_replay_and_kept_samples_validate(tmp_path):
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    from scapy.utils import wrpcap

    path = tmp_path / "t.pcap"
    wrpcap(str(path), [Ether() / IP(dst="10.0.0.2") / UDP(dport=9) / (b"x" * 30) for _ in range(20)])
    r = hostsim.simulate(dict(SHORT, loadgen={"trace": {"path": str(path)}, "keep_samples": 5}))
    t = r.typed()
    assert t.loadgen.trace_frames == 20 and t.loadgen.trace_frames_sent == r.loadgen.trace_frames_sent
    r = hostsim.simulate(dict(SHORT, loadgen={"keep_samples": 5}))
    assert len(r.typed().loadgen.samples) == 5
