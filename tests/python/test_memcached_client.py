"""The memcached client generator (`loadgen.memcached.*`, `loadgen.closed_loop.*`) through the API and the CLI."""

import pytest

import hostsim
from hostsim.cli import main
from hostsim.config import resolve
from hostsim.units import ConfigError

BASE = {"app": "memcached", "preset": "altra", "link": {"propagation": "1us"},
        "sim": {"duration": "500us", "warmup": "0ps"}}


def _cfg(**loadgen):
    return dict(BASE, loadgen=loadgen)


def test_fields_resolve_into_the_core_contract():
    lg = resolve(_cfg(memcached={"keys": 100, "value_size": 64, "key_size": {"max": "32"}},
                      closed_loop={"outstanding": 4, "timeout": "50us"}))["loadgen"]
    m = lg["memcached"]
    assert m["keys"] == 100 and m["value_size"] == {"min": 64, "max": 64, "skew": 0.0}
    assert m["key_size"]["max"] == 32 and m["udp_port"] == 11211 and m["populate"] is True
    assert lg["closed_loop"] == {"outstanding": 4, "timeout_ps": 50_000_000}
    # --app memcached alone implies its client; the user may still turn it off.
    assert resolve(BASE)["loadgen"]["memcached"]["populate"] is True
    assert resolve(dict(BASE, loadgen={"memcached": False}))["loadgen"]["memcached"] is None
    with pytest.raises(ConfigError, match="loadgen.memcached.get_ratio"):
        resolve(_cfg(memcached={"get_ratio": 1.5}))
    with pytest.raises(ConfigError, match="loadgen.closed_loop.outstanding"):
        resolve(_cfg(closed_loop={"timeout": "1ms"}))


def test_populated_gets_all_hit_and_closed_loop_scales():
    r = hostsim.simulate(_cfg(rate="1Mpps", memcached={"keys": 200, "get_ratio": 0.9}))
    m = r.loadgen.memcached
    assert m.requests == 500 and m.replies == m.requests
    assert m.hits == m.gets and m.misses == 0 and m.stored == m.sets
    one = hostsim.simulate(_cfg(memcached={"keys": 50}, closed_loop={"outstanding": 1}))
    rps1, lat1 = one.loadgen.memcached.rps, one.loadgen.latency_ns.mean * 1e-9
    assert rps1 * lat1 == pytest.approx(1.0, rel=0.02)
    eight = hostsim.simulate(_cfg(memcached={"keys": 50}, closed_loop={"outstanding": 8}))
    assert eight.loadgen.memcached.rps > 2 * rps1


def test_cli_prints_the_memcached_row(capsys):
    rc = main(["run", "--preset", "altra", "--app", "memcached", "--duration", "200us", "--warmup", "0ps",
               "--set", "link.propagation=1us", "--set", "loadgen.memcached.keys=100",
               "--set", "loadgen.closed_loop.outstanding=2", "--rate", "1Mpps"])
    captured = capsys.readouterr()
    out = captured.out
    assert rc in (0, None)
    assert "memcached client, closed loop of 2" in out
    row = next(line for line in out.splitlines() if line.strip().startswith("memcached "))
    assert "replies" in row and "hits" in row and "M requests/s" in row
    assert "loadgen.rate is ignored in closed loop" in captured.err
