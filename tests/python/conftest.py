"""Shared helpers for the Python tests: short configs and a CLI runner."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict

import pytest

REPO = Path(__file__).resolve().parents[2]


def deep_merge(base: Dict[str, Any], extra: Dict[str, Any]) -> Dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


# A short run on a link with 1 us latency: 1 ms simulated, 100 us warm-up.
SHORT = {
    "preset": "a72-quad",
    "sim": {"duration": "1ms", "warmup": "100us", "drain": "100us"},
}


@pytest.fixture(scope="session")
def short():
    """Builds a short config dict: ``short(loadgen={"rate": "1Mpps"})``."""

    def make(**sections: Any) -> Dict[str, Any]:
        return deep_merge(SHORT, sections)

    return make


@pytest.fixture
def cli(tmp_path):
    """Runs ``python -m hostsim ARGS`` in ``tmp_path``; returns the CompletedProcess."""

    def run(*args: str, check: bool = False) -> subprocess.CompletedProcess:
        env = dict(os.environ)
        env["PYTHONPATH"] = str(REPO / "python") + os.pathsep + env.get("PYTHONPATH", "")
        proc = subprocess.run(
            [sys.executable, "-m", "hostsim", *args],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"hostsim {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}")
        return proc

    return run


@pytest.fixture(autouse=True)
def every_result_keeps_its_invariants(monkeypatch):
    """Every simulation a test runs in this process is checked: frames are
    conserved (sent = returned + consumed + dropped + in flight), rates and
    utilisations are possible, latencies lie within the run."""
    import importlib

    runner = importlib.import_module("hostsim.runner")
    search = importlib.import_module("hostsim.msb")

    real = runner.simulate_resolved

    def checked(resolved, preset=None):
        result = real(resolved, preset)
        assert not result.violations, result.violations
        return result

    monkeypatch.setattr(runner, "simulate_resolved", checked)
    monkeypatch.setattr(search, "simulate_resolved", checked)
