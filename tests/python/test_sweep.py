"""Sweeps and the result store: points, validation, caching, kill -9, parallel determinism, query and export."""

from __future__ import annotations

import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Dict, List

import duckdb
import pytest

import hostsim
from hostsim.store import Store, StoreError, canonical_json
from hostsim.sweep import MAX_SWEEP_POINTS, SweepError, counts, load_sweep, run_sweep

from conftest import REPO

# The reflector at 100/200 ns on a 1 us link: a bandwidth test takes about 0.1 s.
FAST_BASE = """
[base]
app = "reflector"
preset = "a72-quad"
[base.sim]
duration = "1ms"
warmup = "500us"
drain = "100us"
"""

MSB_SWEEP = """name = "refl"
kind = "msb"
[msb]
threshold = "1%"
""" + FAST_BASE + """
[[axes]]
key = "reflector.service_time"
values = ["100ns", "200ns"]
[[axes]]
zip = "g"
key = "loadgen.size"
values = [64, 128]
[[axes]]
zip = "g"
key = "reflector.queue_frames"
range = { start = 16, stop = 32, step = 16 }
"""


def write(tmp_path: Path, text: str, name: str = "sweep.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def env() -> Dict[str, str]:
    out = dict(os.environ)
    out["PYTHONPATH"] = str(REPO / "python") + os.pathsep + out.get("PYTHONPATH", "")
    return out


def summary_line(stdout: str) -> Dict[str, int]:
    """The counts of ``N points: a computed, b cached, c failed``."""
    m = re.search(r"(\d+) points: (\d+) computed, (\d+) cached, (\d+) failed", stdout)
    assert m, stdout
    return dict(zip(("points", "computed", "cached", "failed"), map(int, m.groups())))


@pytest.fixture(scope="module")
def computed(tmp_path_factory):
    """The 4-point MSB sweep computed once into a store; tests copy the store."""
    root = tmp_path_factory.mktemp("computed")
    path = write(root, MSB_SWEEP)
    rows = run_sweep(path, store=root / "s.duckdb", jobs=1)
    return root, path, rows


def copy_store(computed, tmp_path: Path) -> Path:
    root, _, _ = computed
    target = tmp_path / "s.duckdb"
    shutil.copy(root / "s.duckdb", target)
    return target


# ---------------------------------------------------------------- points


def test_points_are_the_product_of_standalone_axes_and_zip_groups(tmp_path):
    points = load_sweep(write(tmp_path, MSB_SWEEP)).points()
    assert [p.params for p in points] == [
        {"reflector.service_time": "100ns", "loadgen.size": 64, "reflector.queue_frames": 16},
        {"reflector.service_time": "100ns", "loadgen.size": 128, "reflector.queue_frames": 32},
        {"reflector.service_time": "200ns", "loadgen.size": 64, "reflector.queue_frames": 16},
        {"reflector.service_time": "200ns", "loadgen.size": 128, "reflector.queue_frames": 32},
    ]
    assert [p.idx for p in points] == [0, 1, 2, 3]
    # Each point is the base with its values set, resolved: the core's units.
    assert [p.resolved["reflector"]["service_time_ps"] for p in points] == [100_000, 100_000, 200_000, 200_000]
    assert [p.resolved["reflector"]["queue_frames"] for p in points] == [16, 32, 16, 32]
    assert {p.resolved["sim"]["duration_ps"] for p in points} == {10**9}
    assert len({p.key for p in points}) == 4 and all(re.fullmatch(r"[0-9a-f]{64}", p.key) for p in points)


def test_ranges_are_inclusive_and_keep_ints_or_floats(tmp_path):
    text = FAST_BASE + """
[[axes]]
key = "loadgen.flow_skew"
range = { start = 0.0, stop = 0.3, step = 0.1 }
[[axes]]
key = "loadgen.flows"
range = { start = 4, stop = 1, step = -2 }
"""
    points = load_sweep(write(tmp_path, text)).points()
    assert [p.params["loadgen.flow_skew"] for p in points[::2]] == [0.0, 0.1, 0.2, 0.3]
    assert [p.params["loadgen.flows"] for p in points[:2]] == [4, 2]
    assert all(isinstance(p.params["loadgen.flows"], int) for p in points)


def test_yaml_and_json_sweeps_give_the_same_points_as_toml(tmp_path):
    data = {"name": "refl", "kind": "msb", "msb": {"threshold": 0.01},
            "base": {"app": "reflector", "preset": "a72-quad",
                     "sim": {"duration": "1ms", "warmup": "500us", "drain": "100us"}},
            "axes": [{"key": "reflector.service_time", "values": ["100ns", "200ns"]},
                     {"zip": "g", "key": "loadgen.size", "values": [64, 128]},
                     {"zip": "g", "key": "reflector.queue_frames", "range": {"start": 16, "stop": 32, "step": 16}}]}
    import yaml

    toml_keys = [p.key for p in load_sweep(write(tmp_path, MSB_SWEEP)).points()]
    json_keys = [p.key for p in load_sweep(write(tmp_path, json.dumps(data), "refl.json")).points()]
    yaml_keys = [p.key for p in load_sweep(write(tmp_path, yaml.safe_dump(data), "refl.yaml")).points()]
    assert toml_keys == json_keys == yaml_keys  # "1%" and 0.01 are the same option


def test_the_example_sweep_file_is_valid():
    sweep = load_sweep(REPO / "examples" / "testpmd-sizes.toml")
    points = sweep.points()
    assert sweep.name == "testpmd-sizes" and sweep.kind == "msb"
    assert len(points) == 6 and {p.resolved["app"] for p in points} == {"testpmd"}


HEAD = 'name = "t"\nkind = "run"\n[base]\napp = "reflector"\n'

BAD = [
    ("unknown top-level key", 'name = "t"\nkinds = "run"\n',
     ["sweep.toml:2:", "kinds", "unknown field 'kinds'", "allowed: name, kind"]),
    ("unknown axis field", HEAD + '[[axes]]\nkey = "loadgen.size"\nvalue = [64]\n',
     ["sweep.toml:7:", "axes[0].value", "unknown field 'value'", "allowed: key, values, range, zip"]),
    ("empty values", HEAD + '[[axes]]\nkey = "loadgen.size"\nvalues = []\n',
     ["sweep.toml:7:", "axes[0].values", "invalid value []", "a non-empty array"]),
    ("empty range", HEAD + '[[axes]]\nkey = "loadgen.size"\nrange = { start = 128, stop = 64, step = 64 }\n',
     ["sweep.toml:7:", "axes[0].range", "empty range from 128 to 64 by 64", "allowed:"]),
    ("zero step", HEAD + '[[axes]]\nkey = "loadgen.size"\nrange = { start = 64, stop = 128, step = 0 }\n',
     ["sweep.toml:7:", "axes[0].range.step", "invalid value '0'", "non-zero"]),
    ("unequal zip group", HEAD + '[[axes]]\nzip = "g"\nkey = "loadgen.size"\nvalues = [64, 128]\n'
     '[[axes]]\nzip = "g"\nkey = "loadgen.flows"\nvalues = [1, 2, 3]\n',
     ["sweep.toml:10:", "axes[1].zip", "zip group 'g'", "axes[0] (loadgen.size) has 2", "axes[1] (loadgen.flows) has 3",
      "allowed: the same number"]),
    ("unknown config key", HEAD + '[[axes]]\nkey = "loadgen.sizee"\nvalues = [64]\n',
     ["sweep.toml:6:", "axes[0].key", "unknown field 'loadgen.sizee'", "did you mean 'loadgen.size'"]),
    ("unknown host key", 'kind = "run"\n[base]\napp = "testpmd"\n[[axes]]\nkey = "loadgen.size"\nvalues = [64]\n'
     '[[axes]]\nkey = "host.dca"\nvalues = [true, false]\n',
     ["sweep.toml:8:", "axes[1].key", "unknown field 'host.dca'", "known: cpu, mem"]),
    ("bad value", HEAD + '[[axes]]\nkey = "loadgen.size"\nvalues = [64, 99999]\n',
     ["sweep.toml:7:", "axes[0].values", "at point 1 (loadgen.size=99999)", "invalid value '99999'", "64 to 9216"]),
    ("bad base field", HEAD + '[base.loadgen]\nsizee = 64\n',
     ["sweep.toml:6:", "base.loadgen.sizee", "unknown field"]),
    ("bad kind", 'kind = "msbb"\n', ["sweep.toml:1:", "kind", "invalid value 'msbb'", "allowed: run or msb"]),
    ("bad msb option", 'kind = "msb"\n[msb]\nthreshold = "150%"\n',
     ["sweep.toml:3:", "msb.threshold", "invalid value '150%'", "from 0 to below 1"]),
    ("msb options on a run", 'kind = "run"\n[msb]\nthreshold = "1%"\n',
     ["sweep.toml:2:", "msb", "kind = 'msb' only"]),
    ("both values and range", HEAD + '[[axes]]\nkey = "loadgen.size"\nvalues = [64]\nrange = { start = 64, stop = 65 }\n',
     ["sweep.toml:5:", "axes[0]", "exactly one of values or range"]),
    ("a key twice", HEAD + '[[axes]]\nkey = "loadgen.size"\nvalues = [64]\n[[axes]]\nkey = "loadgen.size"\nvalues = [128]\n',
     ["sweep.toml:9:", "axes[1].key", "already the key of axes[0]"]),
    ("a field by two names", HEAD + '[[axes]]\nkey = "sim.duration"\nvalues = ["1ms"]\n[[axes]]\nkey = "sim.duration_ps"\n'
     'values = [2000000000]\n', ["sweep.toml:9:", "axes[1].key", "'sim.duration_ps' is already the key of axes[0] "
                                  "('sim.duration', the same field) (allowed: each field once)"]),
    ("base gives a field by two names", HEAD + '[base.sim]\nduration = "1ms"\nduration_ps = 2000000000\n',
     ["sweep.toml:6:", "base.sim.duration", 'given twice, as sim.duration = "1ms" and as sim.duration_ps = 2000000000']),
    ("malformed TOML", 'name = \n', ["sweep.toml:", "cannot parse", "line 1"]),
]


@pytest.mark.parametrize("text,expected", [pytest.param(t, e, id=i) for i, t, e in BAD])
def test_a_bad_sweep_file_names_the_line_field_value_and_allowed(tmp_path, text, expected):
    with pytest.raises(SweepError) as info:
        load_sweep(write(tmp_path, text)).points()
    message = str(info.value)
    assert isinstance(info.value, hostsim.ConfigError)
    for part in expected:
        assert part in message, (part, message)


def test_a_bad_yaml_sweep_names_the_line_too(tmp_path):
    text = "kind: run\nbase:\n  app: reflector\naxes:\n  - key: loadgen.size\n    values: [64]\n" \
           "  - key: loadgen.flowz\n    values: [1, 2]\n"
    with pytest.raises(SweepError, match=r"sweep\.yaml:7: axes\[1\]\.key: .*unknown field 'loadgen\.flowz'"):
        load_sweep(write(tmp_path, text, "sweep.yaml")).points()


def test_a_sweep_too_large_is_refused_before_it_is_built(tmp_path):
    # A mistyped range: 1e9 values, refused at once and in little memory (it took minutes and gigabytes).
    start, rss = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(SweepError) as info:
        load_sweep(write(tmp_path, HEAD + '[[axes]]\nkey = "loadgen.size"\nrange = {start=64, stop=1e9, step=1}\n'))
    assert str(info.value) == (f"{tmp_path / 'sweep.toml'}:7: axes[0].range: range from 64 to 1000000000.0 by 1 has "
                               f"999999937 values (allowed: at most {MAX_SWEEP_POINTS} points in a sweep; a larger "
                               "step or a shorter range)")
    assert time.perf_counter() - start < 5
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss < 200_000  # KiB
    # Axes each within the limit whose product is not; a zip group counts once.
    text = HEAD + ('[[axes]]\nkey = "loadgen.size"\nrange = {start=64, stop=1063}\n'
                   '[[axes]]\nkey = "loadgen.flows"\nrange = {start=1, stop=1000}\n'
                   '[[axes]]\nzip = "z"\nkey = "reflector.queue_frames"\nvalues = [16, 32]\n'
                   '[[axes]]\nzip = "z"\nkey = "seed"\nvalues = [1, 2]\n')
    with pytest.raises(SweepError) as info:
        load_sweep(write(tmp_path, text))
    assert str(info.value) == (f"{tmp_path / 'sweep.toml'}:5: axes: 2000000 points = 1000 (loadgen.size) x "
                               "1000 (loadgen.flows) x 2 (reflector.queue_frames, seed) "
                               f"(allowed: at most {MAX_SWEEP_POINTS} points in a sweep)")
    small = load_sweep(write(tmp_path, text.replace("stop=1000}", "stop=10}")))
    assert small.count() == 1000 * 10 * 2


@pytest.mark.parametrize("name, text, expected", [
    ("sweep.json", '{"base": {"app": "reflector"},\n "axes": [{"key": "loadgen.size", "values": [64]}],\n'
                   ' "base": {"app": "testpmd"}}\n', "sweep.json: sweep: duplicate key 'base'"),
    ("sweep.yaml", "base:\n  app: reflector\naxes:\n  - key: loadgen.size\n    values: [64]\n    values: [128]\n",
     "sweep.yaml:6: sweep: duplicate key 'values'"),
])
def test_a_key_twice_in_a_json_or_yaml_sweep_is_refused(tmp_path, name, text, expected):
    with pytest.raises(SweepError) as info:
        load_sweep(write(tmp_path, text, name))
    assert str(info.value).startswith(f"{tmp_path / expected} (allowed: each key once in a table"), str(info.value)


# A run that replays a trace (see write_pcap), short enough to take a few milliseconds.
TRACE_SWEEP = """[base]
app = "reflector"
preset = "a72-quad"
[base.sim]
duration = "100us"
warmup = "1us"
[[axes]]
key = "loadgen.trace.path"
values = VALUES
"""


def write_pcap(path: Path, frames: int = 10, size: int = 82) -> Path:
    """A small valid pcap: ``frames`` UDP frames of ``size`` bytes, 1 us apart."""
    scapy = pytest.importorskip("scapy.all")
    pkts = [scapy.Ether(dst="02:00:00:00:00:02", src="02:00:00:00:00:01") / scapy.IP(src="10.0.0.1", dst="10.0.0.2")
            / scapy.UDP(sport=1, dport=2) / scapy.Raw(b"x" * (size - 42)) for _ in range(frames)]
    for i, p in enumerate(pkts):
        p.time = i * 1e-6
    path.parent.mkdir(parents=True, exist_ok=True)
    scapy.wrpcap(str(path), pkts)
    return path


def test_a_missing_trace_file_is_refused_before_any_point_runs(tmp_path):
    write_pcap(tmp_path / "t1.pcap")
    (tmp_path / "adir.pcap").mkdir()
    for missing, why in (("nonexist.pcap", "No such file or directory"), ("adir.pcap", "Is a directory")):
        path = write(tmp_path, TRACE_SWEEP.replace("VALUES", f'["t1.pcap", "{missing}"]'))
        with pytest.raises(SweepError) as info:
            run_sweep(path, store=tmp_path / "s.duckdb")
        assert str(info.value) == (f"{path}:9: axes[0].values: at point 1 (loadgen.trace.path={missing}): "
                                   f"loadgen.trace.path: cannot read '{tmp_path.resolve() / missing}' ({why}) "
                                   "(allowed: a readable pcap or pcapng file)")
        assert not (tmp_path / "s.duckdb").exists()  # nothing ran, not even the good point


def test_relative_trace_paths_in_a_sweep_or_config_file_are_the_files(tmp_path, cli, monkeypatch):
    """A relative trace path in a sweep file or a --config file is taken from
    that file's directory, whatever the working directory, and the point's
    key holds the absolute path: one key, one file."""
    for name in ("a", "b"):
        write_pcap(tmp_path / name / "t1.pcap", frames=10 if name == "a" else 20)
        write(tmp_path / name, TRACE_SWEEP.replace("VALUES", '["t1.pcap"]'), "tr.toml")
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    points = {name: load_sweep(Path("..") / name / "tr.toml").points()[0] for name in ("a", "b")}
    for name, p in points.items():
        assert p.resolved["loadgen"]["trace"]["path"] == str((tmp_path / name / "t1.pcap").resolve())
        assert p.params == {"loadgen.trace.path": "t1.pcap"}  # as the file gives it
    assert points["a"].key != points["b"].key
    # The first frame leaves within the 1 us warm-up: 9 of a's 10 frames and 19 of b's 20 are measured.
    rows = run_sweep(Path("..") / "a" / "tr.toml", store=tmp_path / "s.duckdb")
    assert [r["status"] for r in rows] == ["computed"] and rows[0]["result"]["loadgen"]["tx_packets"] == 9
    proc = cli("sweep", "b/tr.toml", "--store", "s.duckdb", "--no-progress")  # in tmp_path
    assert summary_line(proc.stdout) == {"points": 1, "computed": 1, "cached": 0, "failed": 0}, proc.stderr
    (tmp_path / "b" / "cfg.toml").write_text('app = "reflector"\npreset = "a72-quad"\n[sim]\nduration = "100us"\n'
                                            'warmup = "1us"\n[loadgen.trace]\npath = "t1.pcap"\n')
    result = hostsim.simulate(Path("..") / "b" / "cfg.toml")
    assert result.config["loadgen"]["trace"]["path"] == str((tmp_path / "b" / "t1.pcap").resolve())
    assert result.to_dict()["loadgen"]["tx_packets"] == 19
    proc = cli("run", "--config", "b/cfg.toml")
    assert proc.returncode == 0 and re.search(r"tx packets +19\b", proc.stdout), proc.stdout + proc.stderr


@pytest.mark.parametrize("where", ["under_a_file", "a_directory"])
def test_a_store_that_cannot_be_written_is_a_clear_error(tmp_path, cli, where):
    (tmp_path / "somefile").write_text("not a directory")
    (tmp_path / "adir").mkdir()
    store = "somefile/x.duckdb" if where == "under_a_file" else "adir"
    expected = "'somefile' is a file, not a directory" if where == "under_a_file" else "is a directory"
    with pytest.raises(StoreError, match=re.escape(expected[1:])):
        Store(tmp_path / store)
    write(tmp_path, MSB_SWEEP)
    proc = cli("sweep", "sweep.toml", "--store", store, "--no-progress")
    assert proc.returncode == 2
    assert f"hostsim: error: store: '{store}': {expected}" in proc.stderr
    assert "allowed: a path where a DuckDB file can be created" in proc.stderr


# ---------------------------------------------------------------- running and caching


def test_a_sweep_stores_every_point_and_a_rerun_computes_none(computed, tmp_path):
    root, path, rows = computed
    assert counts(rows) == {"computed": 4, "cached": 0, "failed": 0, "pending": 0}
    again = run_sweep(path, store=copy_store(computed, tmp_path))
    assert counts(again) == {"computed": 0, "cached": 4, "failed": 0, "pending": 0}
    assert [r["result"] for r in again] == [r["result"] for r in rows]
    # What a row holds: the MSB, its summary columns, the config, no wall-clock figures in the result.
    first = rows[0]
    assert first["msb_pps"] == pytest.approx(10.1e6, rel=0.01) and rows[2]["msb_pps"] == pytest.approx(5.05e6, rel=0.01)
    assert first["msb_gbps"] == pytest.approx(first["result"]["msb"]["bps"] / 1e9)
    assert first["config"]["reflector"]["service_time_ps"] == 100_000 and "config" not in first["result"]
    assert "wall_s" not in first["result"]["sim"] and first["wall_s"] > 0
    assert first["options"] == {"threshold": 0.01, "resolution": 0.005, "points": 0, "overload": 0.005,
                                "max_trials": 40}
    assert first["model_version"] == hostsim.__version__ and first["seed"] == 1
    with Store(root / "s.duckdb", read_only=True) as db:
        assert [r["key"] for r in db.rows(sweep="refl")] == [r["key"] for r in rows]
        assert db.rows(sweep="other") == []
        table = db.query("SELECT idx, params->>'$.\"loadgen.size\"' AS size FROM points ORDER BY idx")
        assert table.columns == ["idx", "size"] and table.rows == [(0, "64"), (1, "128"), (2, "64"), (3, "128")]


def test_a_changed_option_or_value_is_a_new_point(computed, tmp_path):
    store = copy_store(computed, tmp_path)
    text = MSB_SWEEP.replace('threshold = "1%"', 'threshold = "2%"')
    assert counts(run_sweep(write(tmp_path, text), store=store, dry_run=True))["pending"] == 4
    text = MSB_SWEEP.replace('values = ["100ns", "200ns"]', 'values = ["100ns", "300ns"]')
    rows = run_sweep(write(tmp_path, text), store=store, dry_run=True)
    assert [r["status"] for r in rows] == ["cached", "cached", "pending", "pending"]
    # A memory limit bounds the run, not its result: the same points.
    text = MSB_SWEEP.replace('drain = "100us"', 'drain = "100us"\nmemory_limit_bytes = "3GiB"')
    assert counts(run_sweep(write(tmp_path, text), store=store, dry_run=True))["pending"] == 0


def test_dry_run_lists_points_and_what_is_cached(computed, tmp_path, cli):
    copy_store(computed, tmp_path)
    write(tmp_path, MSB_SWEEP.replace('values = ["100ns", "200ns"]', 'values = ["100ns", "300ns"]'))
    proc = cli("sweep", "sweep.toml", "--store", "s.duckdb", "--dry-run", check=True)
    assert "4 points: 2 cached, 2 to compute (store s.duckdb)" in proc.stdout
    lines = [line.split() for line in proc.stdout.splitlines() if re.match(r" +\d+ ", line)]
    assert [(cells[0], cells[1], cells[4]) for cells in lines] == [
        ("0", "100ns", "cached"), ("1", "100ns", "cached"), ("2", "300ns", "pending"), ("3", "300ns", "pending")]
    with Store(tmp_path / "s.duckdb", read_only=True) as db:
        assert db.count() == 4  # nothing computed


def test_parallel_workers_store_the_same_results_as_one_process(computed, tmp_path):
    _, path, rows = computed
    parallel = run_sweep(path, store=tmp_path / "p.duckdb", jobs=2)
    assert counts(parallel)["computed"] == 4
    with Store(tmp_path / "p.duckdb", read_only=True) as db:
        stored = {r["key"]: canonical_json(r["result"]) for r in db.rows()}
    assert stored == {r["key"]: canonical_json(r["result"]) for r in rows}


def test_a_failing_point_is_reported_not_stored_and_exits_1(tmp_path, cli):
    hostsim.simulate({"preset": "a72-quad", "sim": {"duration": "200us", "warmup": "10us", "drain": "100us"},
                      "loadgen": {"rate": "1Mpps", "capture_tx": str(tmp_path / "good.pcap")}})
    (tmp_path / "bad.pcap").write_text("not a pcap")
    write(tmp_path, FAST_BASE + '[[axes]]\nkey = "loadgen.trace.path"\nvalues = ["bad.pcap", "good.pcap"]\n')
    proc = cli("sweep", "sweep.toml", "--store", "s.duckdb", "--no-progress")
    assert proc.returncode == 1, proc.stderr
    assert summary_line(proc.stdout) == {"points": 2, "computed": 1, "cached": 0, "failed": 1}
    # The core reads the trace by the absolute path the point's config holds (the sweep file's directory).
    bad = re.escape(str((tmp_path / "bad.pcap").resolve()))
    assert re.search(rf"\[\d/2\] failed +#0 loadgen.trace.path=bad.pcap +OSError: {bad}: not a valid pcap",
                     proc.stderr), proc.stderr
    with Store(tmp_path / "s.duckdb", read_only=True) as db:
        assert [r["params"] for r in db.rows()] == [{"loadgen.trace.path": "good.pcap"}]
    # The failed point is tried again next time; the stored one is not.
    again = cli("sweep", "sweep.toml", "--store", "s.duckdb", "--no-progress")
    assert summary_line(again.stdout) == {"points": 2, "computed": 0, "cached": 1, "failed": 1}


KILL_POINTS = 8
KILL_AFTER = 4


def test_kill_9_mid_sweep_loses_only_points_in_flight(tmp_path):
    # Eight bandwidth tests of about 0.3 s each on two workers; the whole
    # process group (parent, forkserver, workers) is killed once four are stored.
    text = MSB_SWEEP.replace('duration = "1ms"', 'duration = "6ms"').replace(
        'values = ["100ns", "200ns"]', 'values = ["100ns", "150ns", "200ns", "250ns"]')
    path = write(tmp_path, text)
    assert len(load_sweep(path).points()) == KILL_POINTS
    args = [sys.executable, "-m", "hostsim", "sweep", "sweep.toml", "--store", "s.duckdb", "--jobs", "2",
            "--no-progress"]
    proc = subprocess.Popen(args, cwd=tmp_path, env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    watchdog = threading.Timer(120, lambda: os.killpg(proc.pid, signal.SIGKILL))
    watchdog.start()
    done, seen = 0, []
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            seen.append(line)
            done += bool(re.match(r"\[\d+/\d+\] computed ", line))
            if done == KILL_AFTER:
                os.killpg(proc.pid, signal.SIGKILL)
                break
        proc.wait()
    finally:
        watchdog.cancel()
    assert done == KILL_AFTER and proc.returncode == -signal.SIGKILL, "".join(seen)

    with Store(tmp_path / "s.duckdb", read_only=True) as db:  # DuckDB replays its log here
        after_kill = db.count()
        distinct = db.query("SELECT count(DISTINCT key), count(result), count(msb_pps) FROM points").rows[0]
    assert KILL_AFTER <= after_kill < KILL_POINTS
    assert distinct == (after_kill, after_kill, after_kill)  # whole rows, no duplicates

    rerun = subprocess.run(args, cwd=tmp_path, env=env(), capture_output=True, text=True, timeout=120)
    assert rerun.returncode == 0, rerun.stderr
    counted = summary_line(rerun.stdout)
    assert counted == {"points": KILL_POINTS, "computed": KILL_POINTS - after_kill, "cached": after_kill, "failed": 0}
    with Store(tmp_path / "s.duckdb", read_only=True) as db:
        assert db.query("SELECT count(*), count(DISTINCT key), count(DISTINCT idx) FROM points").rows[0] == \
            (KILL_POINTS, KILL_POINTS, KILL_POINTS)
    print(f"kill -9: {KILL_POINTS} points, {after_kill} rows after the kill, "
          f"{counted['computed']} computed on re-run")


# ---------------------------------------------------------------- query and export


def test_query_prints_the_rows(computed, tmp_path, cli):
    copy_store(computed, tmp_path)
    proc = cli("query", "SELECT sweep, idx, round(msb_pps / 1e6, 2) AS mpps FROM points ORDER BY idx",
               "--store", "s.duckdb", check=True)
    lines = [line.split() for line in proc.stdout.splitlines()]
    assert lines[0] == ["sweep", "idx", "mpps"]
    assert [cells for cells in lines if cells and cells[0] == "refl"] == [
        ["refl", "0", "10.1"], ["refl", "1", "10.06"], ["refl", "2", "5.05"], ["refl", "3", "5.03"]]
    assert "4 rows" in proc.stdout


def test_query_exports_csv_and_parquet(computed, tmp_path, cli):
    copy_store(computed, tmp_path)
    for flag, name in (("--csv", "out.csv"), ("--parquet", "out.parquet")):
        proc = cli("query", "SELECT * FROM points WHERE idx < 3;", "--store", "s.duckdb", flag, name, check=True)
        assert f"wrote 3 rows to {name}" in proc.stdout
        back = duckdb.sql(f"SELECT idx, msb_pps, key FROM '{tmp_path / name}' ORDER BY idx").fetchall()
        assert [r[0] for r in back] == [0, 1, 2] and all(len(r[2]) == 64 and r[1] > 0 for r in back)


def test_query_errors_name_the_store_or_the_sql(tmp_path, cli):
    proc = cli("query", "SELECT 1", "--store", "missing.duckdb")
    assert proc.returncode == 2 and "store: 'missing.duckdb': no store here" in proc.stderr
    Store(tmp_path / "s.duckdb").close()
    proc = cli("query", "SELECT nope FROM points", "--store", "s.duckdb")
    assert proc.returncode == 2 and "hostsim: error: query:" in proc.stderr and "nope" in proc.stderr


def test_an_empty_query_is_refused_by_name(computed, tmp_path, cli):
    store = copy_store(computed, tmp_path)
    for sql in ("", "  ;  "):
        proc = cli("query", sql, "--store", str(store))
        assert proc.returncode == 2 and proc.stderr.startswith("hostsim: error: query: invalid value") \
            and "one SQL statement" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_only_duckdbs_lock_error_is_taken_for_another_process():
    from hostsim.store import _open_error

    damaged = _open_error(RuntimeError("IO Error: Failed to read block 7 of the file"), "s.duckdb", True)
    assert damaged.startswith("cannot open (IO Error: Failed to read block"), damaged
    held = _open_error(RuntimeError('IO Error: Could not set lock on file "s.duckdb": Conflicting lock is held '
                                    'in python (PID 42)'), "s.duckdb", True)
    assert held.startswith("being written by another process (PID 42,"), held


def test_reading_a_store_another_process_writes_says_so(computed, tmp_path, cli):
    """DuckDB's lock keeps readers out while a sweep writes: query, report and a
    dry run say the store is being written and that they must wait (or read a copy)."""
    store = copy_store(computed, tmp_path)
    code = "import sys\nfrom hostsim.store import Store\ns = Store(sys.argv[1])\nprint('open', flush=True)\nsys.stdin.read()\n"
    writer = subprocess.Popen([sys.executable, "-c", code, str(store)], env=env(), stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline().strip() == "open"
        write(tmp_path, MSB_SWEEP)
        expected = (f"hostsim: error: store: 's.duckdb': being written by another process (PID {writer.pid}, such as "
                    "a running sweep): DuckDB lets no other process open a store, not even to read it, until the "
                    "writer ends; wait until it ends, or query a copy (cp s.duckdb copy.duckdb, then --store "
                    "copy.duckdb), which may lack the latest points")
        for args in (("query", "SELECT count(*) FROM points"), ("report", "-o", "r.html"),
                     ("sweep", "sweep.toml", "--dry-run")):
            proc = cli(*args, "--store", "s.duckdb")
            assert proc.returncode == 2 and proc.stderr.strip() == expected, (args, proc.stderr)
        # A second writer is told what it was told before.
        proc = cli("sweep", "sweep.toml", "--store", "s.duckdb", "--no-progress")
        assert proc.returncode == 2 and "'s.duckdb': in use by another process (DuckDB lets one process write" \
            in proc.stderr, proc.stderr
    finally:
        writer.communicate("", timeout=60)
    proc = cli("query", "SELECT count(*) AS n FROM points", "--store", "s.duckdb", check=True)
    assert re.search(r"^ 4 +$", proc.stdout, re.M), proc.stdout


def test_the_sweep_command_prints_status_lines_and_a_final_table(computed, tmp_path, cli):
    copy_store(computed, tmp_path)
    text = MSB_SWEEP.replace('values = ["100ns", "200ns"]', 'values = ["100ns", "300ns"]')
    write(tmp_path, text)
    proc = cli("sweep", "sweep.toml", "--store", "s.duckdb", "--no-progress", check=True)
    assert summary_line(proc.stdout) == {"points": 4, "computed": 2, "cached": 2, "failed": 0}
    status = [line for line in proc.stderr.splitlines() if line.startswith("[")]
    assert len(status) == 4 and sum(" cached " in s for s in status) == 2
    assert any(re.search(r"computed +#2 reflector.service_time=300ns loadgen.size=64 reflector.queue_frames=16 +"
                         r"MSB 3\.3\d\d Mpps = 1\.7\d\d Gbps +\d+\.\d\d s", s) for s in status), status
    table: List[List[str]] = [line.split() for line in proc.stdout.splitlines() if re.match(r" +\d+ ", line)]
    assert [row[:5] for row in table] == [["0", "100ns", "64", "16", "cached"], ["1", "100ns", "128", "32", "cached"],
                                          ["2", "300ns", "64", "16", "computed"],
                                          ["3", "300ns", "128", "32", "computed"]]
