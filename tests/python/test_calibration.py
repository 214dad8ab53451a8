"""The calibration set, the fitting procedure and the fitted values (issue 61).

The set loads and links (every target names an experiment and metric,
every group has targets); metrics read results; the procedure recovers
a known multiplier; the core lays the committed fitted values over the
presets; and the fitted targets hold on the built core.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from hostsim import calibration, params
from hostsim.calibration import evaluate, fit, spec
from hostsim.host import preset_host


def test_the_set_loads_links_and_cites_params_md():
    cs = calibration.load()
    assert len(cs.targets) >= 60 and cs.groups
    for t in cs.targets:
        assert "params.md §" in t.source, t.id
    fitted = [t for t in cs.targets if t.group]
    assert {t.group for t in fitted} == set(cs.groups)
    # Every table II cell the kernel systems publish is a target of the kernel fit.
    for system in ("ipfwd", "bridge", "ovs"):
        for col in ("RX", "TX", "memory", "skb", "processing"):
            assert any(t.id == f"fwd.{system}.{col}" and t.group == "kernel-stages" for t in cs.targets)


def test_a_bad_set_is_refused_with_what_is_wrong(tmp_path):
    good = spec.TARGETS_FILE.read_text(encoding="utf-8")
    bad = tmp_path / "t.toml"
    bad.write_text(good.replace('experiment = "fwd-ipfwd"\nmetric = "RX"', 'experiment = "fwd-ipfwd"\nmetric = "nope"', 1))
    with pytest.raises(ValueError, match="experiment fwd-ipfwd has no metric 'nope'"):
        spec.load(bad)
    bad.write_text(good.replace('metrics = { RX = "cores.0', 'metrics = { RX = "__import__(1) + cores.0', 1))
    with pytest.raises(ValueError, match="only numbers, dotted paths"):
        spec.load(bad)


def test_metrics_are_arithmetic_over_result_paths():
    r = {"cores": [{"c": {"rx": 10.0, "mempool": 4.0}}], "x": 3}
    assert spec.evaluate("cores.0.c.rx + cores.0.c.mempool / 2", r) == 12.0
    assert spec.evaluate("x * 1e6 - 0.5", r) == 2999999.5
    with pytest.raises(ValueError, match="the result has no cores.1.c"):
        spec.evaluate("cores.1.c.rx", r)


def test_residuals_and_passes_for_values_ranges_and_points():
    t = spec.Target(id="a", experiment="e", metric="m", reference=100, unit="u", tolerance=0.1, source="s")
    assert t.residual(110) == pytest.approx(0.1) and t.passes(110) and not t.passes(110.5)
    r = spec.Target(id="b", experiment="e", metric="m", reference=(10, 20), unit="u", tolerance=0.1, source="s")
    assert r.residual(15) == 0 and r.residual(22) == pytest.approx(0.1) and r.passes(22) and not r.passes(8.9)
    assert r.center() == 15
    p = spec.Target(id="c", experiment="e", metric="m", reference=90, unit="%", tolerance=5, points=True, source="s")
    assert p.residual(84) == -6 and not p.passes(84) and p.passes(95)


def test_the_procedure_recovers_a_multiplier_it_is_given(monkeypatch):
    """A target made from the model itself at a known multiplier: the fit finds it back."""
    cs = calibration.load()
    g = cs.groups["copy"]
    f = fit.Fit(cs)
    prior = f.priors["kernel.costs.copy_instr_per_line"]
    truth = f.values(g, [2.0])
    made = f.runner.metrics("copy-skx-l1", truth)["cycles_per_byte"]
    target = next(t for t in cs.targets if t.group == "copy")
    moved = target.model_copy(update={"reference": made})
    monkeypatch.setattr(spec.CalibrationSet, "group_targets", lambda self, name: [moved])
    f.fit_group(g)
    assert f.fitted["kernel.costs.copy_instr_per_line"] == pytest.approx(2 * prior, abs=1)
    assert f.groups["copy"]["targets"][0]["pass"]


def test_the_core_lays_the_fitted_values_over_every_preset_and_params_names_their_targets():
    built = calibration.fitted_in_core()
    assert built["values"], "no fitted values in the core"
    for v in built["values"]:
        for preset in ("altra", "xeon-e3-1230v2"):
            fitted = evaluate.lookup(preset_host(preset), v["key"])
            unfitted = evaluate.lookup(evaluate.unfitted_host(preset), v["key"])
            assert fitted == v["value"] and unfitted == v["prior"], (preset, v["key"])
    rows = {r.field: r for r in params.params("xeon-e3-1230v2")}
    first = built["values"][0]
    row = rows[f"host.{first['key']}"]
    assert row.kind == "fitted" and built["groups"][first["group"]]["targets"][0]["id"] in row.source, row


def test_the_kernel_fit_holds_on_the_built_core():
    """Table II's kernel cells are within ±10 % with the committed values (as the fit recorded)."""
    cs = calibration.load()
    rows = calibration.evaluate_all(cs.model_copy(update={"targets": cs.group_targets("kernel-stages")}))
    assert len(rows) == 15
    failed = [(r["id"], r["simulated"], r["reference"]) for r in rows if not r["pass"]]
    assert not failed, failed


def test_calibrate_writes_nothing_outside_its_targets(tmp_path):
    p = subprocess.run([sys.executable, "-m", "hostsim", "calibrate", "--out", str(tmp_path / "no" / "f.json")],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "--out" in p.stderr and "existing directory" in p.stderr, p.stderr


def test_validate_prints_the_targets_with_their_residuals(tmp_path):
    out = tmp_path / "v.json"
    p = subprocess.run([sys.executable, "-m", "hostsim", "validate", "--json", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    data = json.loads(out.read_text())
    assert len(data["targets"]) == len(calibration.load().targets)
    assert "calibration targets within tolerance" in p.stdout.splitlines()[-1]
    assert any(r["id"] == "fwd.ipfwd.RX" and r["group"] == "kernel-stages" for r in data["targets"])


def test_every_declared_figure_is_drawn_from_its_targets_rows(tmp_path):
    from hostsim.calibration.report import draw, figure_file

    cs = calibration.load()
    drawn = [t for t in cs.targets if t.figure]
    assert {t.figure for t in drawn} == set(cs.figures) and all(t.x is not None for t in drawn)
    rows = [{"id": t.id, "simulated": t.center()} for t in drawn]
    paths = draw(cs, rows, tmp_path / "calibration.md")
    assert sorted(paths) == sorted(figure_file(tmp_path / "calibration.md", n) for n in cs.figures)
    for p in paths:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 10_000


def test_a_figure_a_target_names_must_be_declared(tmp_path):
    good = spec.TARGETS_FILE.read_text(encoding="utf-8")
    bad = tmp_path / "t.toml"
    bad.write_text(good.replace('figure = "ddio-ways"', 'figure = "nope"', 1))
    with pytest.raises(ValueError, match=r"figure 'nope' needs a \[figure.nope\] and an x"):
        spec.load(bad)
