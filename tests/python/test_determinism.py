"""Same config and seed → identical results except wall-clock fields; other seeds differ."""

import hostsim

WALL_CLOCK = ("wall_s", "packets_per_wall_s")


def _strip_wall_clock(d):
    d = dict(d)
    d["sim"] = {k: v for k, v in d["sim"].items() if k not in WALL_CLOCK}
    return d


def _poisson(short, seed):
    return short(seed=seed, loadgen={"rate": "9Mpps", "interarrival": "poisson", "size": "imix"},
                 reflector={"service": "exponential", "service_time": "100ns", "queue_frames": 16})


def test_same_seed_same_result(short):
    a = hostsim.simulate(_poisson(short, 42)).to_dict()
    b = hostsim.simulate(_poisson(short, 42)).to_dict()
    assert a["sim"]["wall_s"] > 0
    assert _strip_wall_clock(a) == _strip_wall_clock(b)
    assert a["loadgen"]["drop_rate"] > 0  # the comparison covers a run with random drops


def test_different_seed_different_result(short):
    a = hostsim.simulate(_poisson(short, 1)).to_dict()
    b = hostsim.simulate(_poisson(short, 2)).to_dict()
    assert a["loadgen"]["tx_packets"] != b["loadgen"]["tx_packets"] or \
        a["loadgen"]["latency_ns"] != b["loadgen"]["latency_ns"]
    assert a["sim"]["seed"] == 1 and b["sim"]["seed"] == 2


def test_msb_is_deterministic(short):
    cfg = _poisson(short, 5)
    a = hostsim.msb(cfg, resolution=0.05).to_dict()
    b = hostsim.msb(cfg, resolution=0.05).to_dict()
    assert _strip_wall_clock(a) == _strip_wall_clock(b)
