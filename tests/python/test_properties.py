"""Properties of every run, over small random configs end to end (issue 11,
item 10): frames are conserved exactly, replies never mis-pair, rates,
utilisations and latencies are possible; at the fast fidelity, over longer
runs, the sample keeps those and its prediction adds up.

CI runs a bounded number of examples; for a long campaign:

    HOSTSIM_PROPERTY_EXAMPLES=2000 .venv/bin/python -m pytest -q tests/python/test_properties.py
"""

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hostsim
from hostsim import host

EXAMPLES = int(os.environ.get("HOSTSIM_PROPERTY_EXAMPLES", "40"))

PRESETS = host.host_presets()
SIZES = [64, 128, 512, 1518, "imix"]


@st.composite
def configs(draw):
    apps = ["reflector", *host.pmd_apps(), *host.kernel_apps()]
    app = draw(st.sampled_from(sorted(set(apps))))
    stack = "pmd"
    if app in host.kernel_apps() and (app not in host.pmd_apps() or draw(st.booleans())):
        stack = "kernel"
    size = 1518 if app == "iperf" else draw(st.sampled_from(SIZES))
    cfg = {
        "app": app,
        "stack": stack,
        "preset": draw(st.sampled_from(PRESETS)),
        "seed": draw(st.integers(0, 2**16)),
        "sim": {
            "duration": f"{draw(st.integers(100, 400))}us",
            "warmup": f"{draw(st.integers(0, 50))}us",
            "drain": draw(st.sampled_from(["0us", "50us", "1ms"])),
        },
        "loadgen": {"size": size, "rate": f"{draw(st.integers(2, 120))}%"},
    }
    overrides = {}
    if app != "reflector" and stack == "pmd" and app != "memcached":
        n = draw(st.sampled_from([1, 2]))
        overrides.update({"host.cores": n, "host.queues": n, "loadgen.flows": draw(st.sampled_from([1, 16]))})
    if app == "memcached":
        cfg["loadgen"]["memcached"] = {"keys": draw(st.integers(10, 500))}
        if draw(st.booleans()):
            cfg["loadgen"]["closed_loop"] = {"outstanding": draw(st.sampled_from([1, 8, 32768]))}
    if app == "reflector":
        overrides["reflector.service_time"] = f"{draw(st.integers(10, 500))}ns"
    else:
        # The LLC's alternative readings and the DRAM write queue (off in
        # every preset), where they apply.
        llc = host.preset_host(cfg["preset"])["mem"]["llc"]
        if llc["inclusion"] == "non_inclusive" and draw(st.booleans()):
            overrides["host.mem.llc.clean_victims"] = "drop"
        if llc["on_core_read"] == "move" and llc["dca"]["held_ways"] and draw(st.booleans()):
            overrides["host.mem.llc.on_core_read"] = "migrate"
        if draw(st.booleans()):
            overrides["host.mem.dram.write_queue.entries"] = draw(st.sampled_from([8, 64]))
    return cfg, overrides


# Deterministic examples; runs are slow and large by hypothesis's measures.
SETTINGS = {"deadline": None, "derandomize": True,
            "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large]}


def run_checked(cfg, overrides):
    """The run's result, after the checks that hold at every fidelity: the
    core's own (conservation, rates, utilisation, latency) and the
    accounting's rows, each conserved and its drops summed."""
    r = hostsim.simulate(cfg, overrides).to_dict()
    assert not [w for w in r["warnings"] if w.startswith("invariant violated")], (cfg, overrides, r["warnings"])
    for row in (r["accounting"]["measured"], r["accounting"]["total"]):
        assert row["sent"] == row["returned"] + row["consumed"] + row["dropped"] + row["in_flight"], (cfg, overrides)
        assert row["dropped"] == sum(row["drops"].values()), (cfg, overrides)
    return r


@settings(max_examples=EXAMPLES, **SETTINGS)
@given(configs())
def test_every_random_run_keeps_its_invariants(case):
    cfg, overrides = case
    r = run_checked(cfg, overrides)
    acc, lg = r["accounting"], r["loadgen"]
    if cfg["sim"]["drain"] == "1ms" and cfg["app"] == "reflector":
        assert acc["measured"]["in_flight"] == 0, "a drained reflector holds nothing"
    lat = lg["latency_ns"]
    if lat["count"]:
        assert 0 <= lat["min"] <= lat["max"] <= r["sim"]["simulated_ps"] / 1e3
    mc = lg.get("memcached")
    if mc:
        # Replies pair only with their own request: never more replies than requests, none invalid.
        assert mc["replies"] <= mc["requests"] and mc["invalid"] == 0


@st.composite
def fast_configs(draw):
    """Runs long enough to be sampled (several ms), at rates up to overload."""
    cfg, overrides = draw(configs())
    cfg["sim"] = {
        "fidelity": "fast",
        "duration": f"{draw(st.integers(3, 30))}ms",
        "warmup": draw(st.sampled_from(["10us", "200us", "2ms"])),
        "drain": draw(st.sampled_from(["0us", "50us"])),
    }
    cfg["loadgen"]["rate"] = f"{draw(st.integers(2, 150))}%"
    return cfg, overrides


@settings(max_examples=EXAMPLES // 2, **SETTINGS)
@given(fast_configs())
def test_every_random_fast_run_keeps_its_invariants(case):
    cfg, overrides = case
    r = run_checked(cfg, overrides)
    s = r["sim"]["sample"]
    if not s["sampled"]:
        return
    p = s["predicted"]
    assert p["lost_packets"] == sum(p["drops"].values()) + p["unclassified_drops"], (cfg, overrides, p)
    assert 0 <= p["lost_packets"] <= p["tx_packets"], (cfg, overrides, p)
    assert 0.0 <= p["loss_rate"] <= 1.0, (cfg, overrides, p)
    assert p["in_flight_packets"] >= 0 and p["backlog_growth_frames"] >= 0, (cfg, overrides, p)
    assert s["window_ps"] <= s["represented_window_ps"], (cfg, overrides, s)
