"""``hostsim validate``: the public calibration checks run, pass, and are
printed with their references and sources (issue 15, item 2)."""

from __future__ import annotations

import json
import subprocess
import sys

from hostsim import validate


def test_every_calibration_check_passes_and_names_its_source():
    rows = validate.checks()
    areas = {r["area"] for r in rows}
    assert areas == {"pcie", "line_rate", "rss", "dram", "queue"}, areas
    assert len(rows) >= 30
    failed = [r for r in rows if not r["pass"]]
    assert not failed, failed
    for r in rows:
        assert r["source"] and r["unit"], r
        err = abs(r["simulated"] - r["reference"]) / abs(r["reference"])
        assert err <= r["tolerance"] + 1e-12, r


def test_a_check_outside_its_tolerance_is_reported_as_a_failure():
    rows = [{"area": "dram", "name": "x", "unit": "ns", "reference": 81.0, "simulated": 90.0,
             "tolerance": 0.01, "source": "s", "pass": False}]
    text = validate.format_checks(rows)
    assert "FAIL" in text and text.endswith("0 of 1 checks pass; 1 FAIL")


def test_the_cli_prints_the_table_and_writes_json(tmp_path):
    out = tmp_path / "checks.json"
    p = subprocess.run([sys.executable, "-m", "hostsim", "validate", "--checks-only", "--json", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].split()[:4] == ["area", "check", "reference", "simulated"]
    rows = json.loads(out.read_text())["checks"]
    assert lines[-1] == f"{len(rows)} of {len(rows)} checks pass"
    assert any("M/D/1" in r["name"] for r in rows)
