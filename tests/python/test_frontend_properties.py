"""Properties of the Python front end over arbitrary input (issue 57, item
3): a ``--set`` assignment, a unit string or a sweep file gives a config, a
value or points, or a ConfigError (SweepError is one) that names a field —
never another exception, never a traceback for the user.

CI runs a bounded number of examples; for a long campaign:

    HOSTSIM_FRONTEND_EXAMPLES=20000 .venv/bin/python -m pytest -q tests/python/test_frontend_properties.py
"""

from __future__ import annotations

import os
from typing import Any, Dict, List

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from hostsim import units
from hostsim.config import Config, apply_assignments, known_fields, resolve
from hostsim.sweep import Sweep
from hostsim.units import ConfigError

EXAMPLES = int(os.environ.get("HOSTSIM_FRONTEND_EXAMPLES", "150"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _host_fields() -> List[str]:
    """Every dotted host field of a resolved config (``host.cpu.freq_hz``, …)."""
    out: List[str] = []

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                walk(f"{prefix}.{k}", v)
        else:
            out.append(prefix)

    walk("host", resolve({"app": "testpmd"})["host"])
    return out


FIELDS = sorted(set(known_fields()) | set(_host_fields()))
UNITS = ["", "ns", "us", "µs", "ms", "s", "ps", "bps", "Gbps", "Mbps", "pps", "Mpps", "kpps", "%", "Hz", "GHz",
         "MHz", "B", "KiB", "MiB", "GiB", "KB", "x", " ms", "e3"]

numbers = st.one_of(
    st.integers(-2**70, 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, 1, -1, 2**31, 2**32, 2**63, 2**64, 1e-300, 1e300]),
)
quantity = st.builds(lambda n, u: f"{n}{u}", numbers, st.sampled_from(UNITS))
junk = st.text(alphabet="0123456789.-+eE%/ µkMGTpnsbBHzi[]{}=,\"':trufalsenul", max_size=16)
values = st.one_of(quantity, junk, st.sampled_from(["true", "false", "null", "[]", "{}", "[1, 2]", "{a = 1}",
                                                    '"64"', "imix", "auto", "none", "-", "=", "nan", "inf"]))


def _mutate(name: str, how: int) -> str:
    """The name as given, cut short, extended or misspelt (a user's slip)."""
    return [name, name.rsplit(".", 1)[0], name + ".x", name + "_ps", name.replace(".", ".."), name.upper(),
            " " + name + " ", name[:-1]][how]


keys = st.builds(_mutate, st.sampled_from(FIELDS), st.integers(0, 7))


def _only_config_errors(fn, *args: Any) -> Any:
    """``fn(*args)``; a ConfigError is an answer (it must name a field), any other exception a defect."""
    try:
        return fn(*args)
    except ConfigError as e:
        assert e.field and str(e), repr(e)
        return e


@SETTINGS
# Found by this test: an empty host table on the reflector raised StopIteration.
@example(app="reflector", assignments=["host.app.bridge.ageing_time_ps={}"])
@given(app=st.sampled_from(["testpmd", "touchfwd", "memcached", "reflector", "l2fwd", "ipfwd"]),
       assignments=st.lists(st.builds(lambda k, v: f"{k}={v}", keys, values), min_size=1, max_size=3))
def test_any_set_assignment_gives_a_config_or_an_error_naming_a_field(app, assignments):
    def run() -> Dict[str, Any]:
        cfg = Config(app=app)
        apply_assignments(cfg, assignments)
        return resolve(cfg)

    out = _only_config_errors(run)
    assert isinstance(out, (dict, ConfigError))


PARSERS = [
    lambda v: units.parse_time_ps(v, "f"),
    lambda v: units.parse_time_ps(v, "f", positive=False),
    lambda v: units.parse_rate(v, "f"),
    lambda v: units.parse_bit_rate_bps(v, "f"),
    lambda v: units.parse_frequency_hz(v, "f"),
    lambda v: units.parse_byte_rate(v, "f"),
    lambda v: units.parse_size_bytes(v, "f"),
    lambda v: units.parse_int(v, "f", 0, 100),
    lambda v: units.parse_bool(v, "f"),
]


@SETTINGS
@given(parser=st.sampled_from(range(len(PARSERS))), value=st.one_of(values, numbers, st.booleans(), st.none(),
                                                                     st.lists(numbers, max_size=2)))
def test_every_unit_parser_gives_a_value_or_an_error(parser, value):
    _only_config_errors(PARSERS[parser], value)


axis = st.one_of(
    st.fixed_dictionaries({"key": keys, "values": st.lists(values, min_size=0, max_size=3)}),
    st.fixed_dictionaries({"key": keys, "range": st.fixed_dictionaries(
        {"start": numbers, "stop": numbers, "step": numbers})}),
    st.fixed_dictionaries({"key": keys, "zip": st.sampled_from(["g", ""]), "values": st.lists(values, max_size=3)}),
    st.dictionaries(st.sampled_from(["key", "values", "range", "zip", "other"]), st.one_of(values, numbers), max_size=3),
)


@SETTINGS
@given(kind=st.sampled_from(["run", "msb", "other", 3]),
       base=st.dictionaries(keys, values, max_size=2),
       axes=st.lists(axis, min_size=0, max_size=3),
       msb=st.one_of(st.none(), st.dictionaries(st.sampled_from(["threshold", "resolution", "max_trials", "x"]),
                                                st.one_of(values, numbers), max_size=2)))
def test_any_sweep_gives_points_or_an_error_naming_a_field(kind, base, axes, msb):
    data: Dict[str, Any] = {"name": "p", "kind": kind, "base": dict(base, app="reflector"), "axes": axes}
    if msb is not None:
        data["msb"] = msb

    def points() -> Any:
        sw = Sweep.from_dict(data)
        return sw.points() if sw.count() <= 64 else []

    _only_config_errors(points)
