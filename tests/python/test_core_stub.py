"""The typed stub ``hostsim/_core.pyi`` matches the built core module, and the core's error types."""

import ast
import inspect
import json
from pathlib import Path

import pytest

import hostsim
from hostsim import _core
from hostsim.config import resolve

STUB = Path(hostsim.__file__).with_name("_core.pyi")


def _stub_functions():
    tree = ast.parse(STUB.read_text())
    funcs = {n.name: [a.arg for a in n.args.args] for n in tree.body if isinstance(n, ast.FunctionDef)}
    names = {t.target.id for t in tree.body if isinstance(t, ast.AnnAssign)}
    return funcs, names


def test_stub_lists_exactly_the_module_functions_with_their_parameters():
    funcs, names = _stub_functions()
    public = {n for n in dir(_core) if not n.startswith("_") and callable(getattr(_core, n))}
    assert set(funcs) == public
    for name, params in funcs.items():
        assert list(inspect.signature(getattr(_core, name)).parameters) == params, name
    assert names == {"__version__", "SAMPLE_FRAMES", "FELL_BEHIND", "TABLES_GREW", "PASSED"} and isinstance(_core.__version__, str)
    assert isinstance(_core.SAMPLE_FRAMES, int)
    assert isinstance(_core.FELL_BEHIND, str) and isinstance(_core.TABLES_GREW, str) and isinstance(_core.PASSED, str)


def test_core_rejects_unknown_fields_and_bad_values_with_value_error():
    cfg = resolve({})
    cfg["loadgen"]["bogus"] = 1
    with pytest.raises(ValueError, match="bogus"):
        _core.validate(json.dumps(cfg))
    cfg = resolve({})
    cfg["loadgen"]["flows"] = 0
    with pytest.raises(ValueError, match=r"^loadgen\.flows: invalid value"):
        _core.simulate(json.dumps(cfg))


def test_simulate_accepts_a_config_file_path(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text('preset = "a72-quad"\n[loadgen]\nrate = "2Mpps"\n[sim]\ndrain = "10us"\n')
    r = hostsim.simulate(path)
    assert r.loadgen.tx_packets == 1800
    assert r.config["link"]["rate_bps"] == 200 * 10**9
    r = hostsim.simulate(str(path), overrides={"loadgen.rate": "1Mpps"})
    assert r.loadgen.tx_packets == 900
