"""Sweeps on a Ray cluster (``--ray``): a real head on loopback, the same results as one process,
a worker killed mid-sweep retried, this source tree's hostsim on the workers, bad addresses."""

from __future__ import annotations

import importlib.util
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, Iterator, Optional

import pytest

import hostsim
from hostsim.executor_ray import KILL_ONCE_ENV, RayExecutor
from hostsim.store import Store, canonical_json
from hostsim.sweep import counts, run_sweep
from hostsim.units import ConfigError

from test_sweep import FAST_BASE, env, summary_line, write

needs_ray = pytest.mark.skipif(importlib.util.find_spec("ray") is None,
                               reason="the ray package is not installed (pip install 'ray>=2.9'; CI installs it)")

# Five bandwidth tests of about 0.1 s each.
RAY_SWEEP = 'name = "refl-ray"\nkind = "msb"\n[msb]\nthreshold = "1%"\n' + FAST_BASE + """
[[axes]]
key = "reflector.service_time"
values = ["100ns", "150ns", "200ns", "250ns", "300ns"]
"""
POINTS = 5
HEAD_START_TIMEOUT_S = 180


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stored(path: Path) -> Dict[str, str]:
    with Store(path, read_only=True) as db:
        return {r["key"]: canonical_json(r["result"]) for r in db.rows()}


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture(scope="module")
def head() -> Iterator[str]:
    """A Ray head of 2 CPUs on 127.0.0.1 (``ray start --head --block``), stopped by its PID afterwards.

    It starts outside the source tree and without PYTHONPATH, so its workers
    find this hostsim only through what the driver tells them. It requires a
    fresh token (Ray >= 2.5x: RAY_AUTH_MODE, RAY_AUTH_TOKEN; older Rays ignore
    them), set in this process's environment for the drivers the tests start,
    so a token in ~/.ray does not change what the test does.
    """
    if importlib.util.find_spec("ray") is None:
        pytest.skip("the ray package is not installed (pip install 'ray>=2.9'; CI installs it)")
    port = free_port()
    temp = Path(tempfile.mkdtemp(prefix="hsray-", dir="/tmp"))  # short: Ray's unix sockets live in it
    auth = pytest.MonkeyPatch()
    auth.setenv("RAY_AUTH_MODE", "token")
    auth.setenv("RAY_AUTH_TOKEN", secrets.token_hex(32))
    auth.delenv("RAY_AUTH_TOKEN_PATH", raising=False)
    head_env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "RAY_ADDRESS")}
    log = open(temp / "head.log", "w")
    proc = subprocess.Popen(
        [str(Path(sys.executable).with_name("ray")), "start", "--head", "--block", f"--port={port}",
         "--node-ip-address=127.0.0.1", "--num-cpus=2", "--include-dashboard=false", "--disable-usage-stats",
         f"--temp-dir={temp}"],
        cwd=temp, env=head_env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + HEAD_START_TIMEOUT_S
        while "Ray runtime started" not in (temp / "head.log").read_text():
            assert proc.poll() is None, "ray start exited:\n" + (temp / "head.log").read_text()
            assert time.monotonic() < deadline, "ray start timed out:\n" + (temp / "head.log").read_text()
            time.sleep(0.5)
        socket.create_connection(("127.0.0.1", port), timeout=10).close()
        yield f"127.0.0.1:{port}"
    finally:
        _stop(proc)
        auth.undo()
        log.close()
        shutil.rmtree(temp, ignore_errors=True)


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM to `ray start --block` stops the processes it started; SIGKILL to its group if it hangs."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.fixture(scope="module")
def one_process(tmp_path_factory):
    """The sweep computed with --jobs 1 (in this process): its file and stored results."""
    root = tmp_path_factory.mktemp("ray")
    path = write(root, RAY_SWEEP)
    start = time.perf_counter()
    rows = run_sweep(path, store=root / "b.duckdb", jobs=1)
    print(f"--jobs 1: {POINTS} points in {time.perf_counter() - start:.2f} s")
    assert counts(rows)["computed"] == POINTS
    return path, stored(root / "b.duckdb")


def sweep_cli(tmp_path: Path, sweep: Path, *args: str, extra_env: Optional[Dict[str, str]] = None
              ) -> subprocess.CompletedProcess:
    """``hostsim sweep sweep.toml --store a.duckdb ARGS`` in ``tmp_path``, timed."""
    shutil.copy(sweep, tmp_path / "sweep.toml")
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "hostsim", "sweep", "sweep.toml", "--store", "a.duckdb",
                           "--no-progress", *args], cwd=tmp_path, env={**env(), **(extra_env or {})},
                          capture_output=True, text=True, timeout=300)
    print(f"hostsim sweep {' '.join(args)}: {time.perf_counter() - start:.2f} s")
    return proc


@needs_ray
def test_workers_import_the_drivers_hostsim(head):
    with RayExecutor(head) as executor:
        answers = sorted(executor.map_unordered(abs, [-3, -1, -2]))
        assert answers == [(0, 3), (1, 1), (2, 2)]
        assert executor.worker_package == str(Path(hostsim.__file__).resolve().parent)


@needs_ray
def test_a_connection_the_caller_made_is_used_and_left_open(head):
    import ray

    ray.init(address=head, log_to_driver=False)
    try:
        with RayExecutor(head) as executor:
            assert list(executor.map_unordered(abs, [-5])) == [(0, 5)]
            assert executor.worker_package == str(Path(hostsim.__file__).resolve().parent)
        assert ray.is_initialized()
    finally:
        ray.shutdown()


@needs_ray
def test_a_k_ary_bandwidth_test_on_ray_matches_the_local_pool(head, short):
    from test_msb import _config
    from test_msb_kary import scrub

    local = hostsim.msb(_config(short), jobs=2)
    with RayExecutor(head) as executor:
        remote = hostsim.msb(_config(short), jobs=2, executor=executor)
    assert remote.msb.search.to_dict() == {"kind": "k-ary", "k": 2, "rounds": local.msb.search.rounds}
    assert scrub(remote.to_dict()) == scrub(local.to_dict())


@needs_ray
def test_a_sweep_on_ray_stores_the_same_results_as_one_process(head, one_process, tmp_path):
    path, expected = one_process
    proc = sweep_cli(tmp_path, path, "--ray", head)
    assert proc.returncode == 0, proc.stderr
    assert summary_line(proc.stdout) == {"points": POINTS, "computed": POINTS, "cached": 0, "failed": 0}
    assert stored(tmp_path / "a.duckdb") == expected
    # Run again: everything is cached, nothing goes to the cluster.
    again = sweep_cli(tmp_path, path, "--ray", head)
    assert summary_line(again.stdout) == {"points": POINTS, "computed": 0, "cached": POINTS, "failed": 0}


@needs_ray
def test_a_worker_killed_mid_sweep_is_retried(head, one_process, tmp_path):
    path, expected = one_process
    marker = tmp_path / "killed"
    proc = sweep_cli(tmp_path, path, "--ray", head, extra_env={KILL_ONCE_ENV: str(marker)})
    assert proc.returncode == 0, proc.stderr
    # The marker holds the PID of the worker that took a task and called os._exit(1) ...
    pid = int(marker.read_text())
    assert not alive(pid)
    # ... and yet every point was computed (the dead worker's task ran again) and is right.
    assert summary_line(proc.stdout) == {"points": POINTS, "computed": POINTS, "cached": 0, "failed": 0}
    assert stored(tmp_path / "a.duckdb") == expected


@needs_ray
def test_without_retries_the_killed_workers_point_fails(head, one_process, tmp_path, monkeypatch):
    # The control for the test above: the hook really costs a point when Ray may not retry it.
    path, expected = one_process
    marker = tmp_path / "killed"
    monkeypatch.setenv(KILL_ONCE_ENV, str(marker))
    with RayExecutor(head, max_retries=0) as executor:
        rows = run_sweep(path, store=tmp_path / "a.duckdb", executor=executor)
    assert marker.exists()
    assert counts(rows) == {"computed": POINTS - 1, "cached": 0, "failed": 1, "pending": 0}
    failed = next(r for r in rows if r["status"] == "failed")
    assert failed["error"].startswith("WorkerCrashedError: "), failed["error"]
    got = stored(tmp_path / "a.duckdb")
    assert len(got) == POINTS - 1 and all(expected[k] == v for k, v in got.items())


@pytest.mark.parametrize("args, names", [
    (("--ray", "127.0.0.1:{port}"), ["--ray", "127.0.0.1:{port}", "allowed:"]),
    (("--ray", "no-port"), ["--ray", "'no-port'", "allowed:"]),
    (("--ray", "127.0.0.1:{port}", "--jobs", "2"), ["jobs", "'2'", "--ray local"]),
])
def test_a_bad_ray_address_exits_2_with_a_message_naming_it(args, names, tmp_path, cli):
    port = str(free_port())  # nothing listens there
    write(tmp_path, RAY_SWEEP)
    args = tuple(a.replace("{port}", port) for a in args)
    for command in (("sweep", "sweep.toml", "--store", "s.duckdb", "--no-progress"),
                    ("study", "rx-sharing", "--quick", "--store", "s.duckdb", "--no-progress")):
        start = time.perf_counter()
        proc = cli(*command, *args)
        assert proc.returncode == 2, proc.stderr
        assert "Traceback" not in proc.stderr
        message = proc.stderr.strip().splitlines()[-1]
        assert message.startswith("hostsim: error: "), proc.stderr
        for name in names:
            assert name.replace("{port}", port) in message, message
        assert time.perf_counter() - start < 30  # Ray alone would wait minutes for a head that is not there
    assert not (tmp_path / "s.duckdb").exists() or not stored(tmp_path / "s.duckdb")


def test_without_the_ray_package_the_error_says_how_to_install_it(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ray" else real(name, *a))
    with pytest.raises(ConfigError) as e:
        RayExecutor("127.0.0.1:6379")
    assert str(e.value).startswith("--ray: 127.0.0.1:6379: the ray package is not installed")
    assert "pip install" in str(e.value)
