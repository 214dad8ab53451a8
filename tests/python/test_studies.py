"""Studies: every shipped study runs (quick) from the CLI, prints its table, writes its figures, and caches."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from hostsim import studies
from hostsim.store import Store
from hostsim.units import ConfigError

NAMES = ["drop-breakdown", "sensitivity", "rxptx-dca", "burst-writebacks", "kernel-vs-pmd", "memcached",
         "enhancements", "forwarding", "rx-sharing", "tx-schemes"]


def test_the_list_names_every_study_with_its_points(cli):
    proc = cli("study", "--list")
    assert proc.returncode == 0, proc.stderr
    listed = [line.split()[0] for line in proc.stdout.splitlines()]
    assert listed == NAMES == studies.names()
    for name in NAMES:
        n = int(re.search(rf"^{re.escape(name)}\s+(\d+) points", proc.stdout, re.M).group(1))
        assert n == studies.get(name).points() > 0


def test_an_unknown_study_is_named_with_the_allowed_ones(cli):
    proc = cli("study", "no-such")
    assert proc.returncode == 2
    assert "no-such" in proc.stderr and "drop-breakdown" in proc.stderr
    with pytest.raises(ConfigError, match="unknown study 'x'"):
        studies.get("x")


@pytest.mark.long
def test_the_forwarding_study_shows_table_ii_beside_the_split(tmp_path):
    run = studies.run_study("forwarding", out=tmp_path, store=tmp_path / "s.duckdb", quick=True)
    assert [param for param in run.rows] == ["msb", "freq", "split"]
    row = run.table[1]
    assert row[0] == "ipfwd" and row[-5:][0].endswith("/453")  # RX simulated / published (Table II)
    # 90 % of the MSB, which is both sending ports' sum: 45 % of it on each.
    split, msb = run.rows["split"][0], run.rows["msb"][0]["result"]["msb"]
    assert msb["sending_ports"] == 2
    assert split["params"]["loadgen.rate"] == f"{0.45 * msb['pps']:.0f}pps"
    lg = split["result"]["loadgen"]
    assert abs(lg["offered_pps"] / (0.9 * msb["pps"]) - 1) < 0.01, lg["offered_pps"]  # whole frames in a short window


def test_quick_keeps_the_first_and_last_value_and_two_parts():
    full, quick = studies.get("sensitivity").sweep_objects(), studies.get("sensitivity").sweep_objects(quick=True)
    assert len(full) == 6 and list(quick) == list(full)[:2]
    l2 = {a.key: a.values for a in quick["l2"].axes}
    assert l2["host.mem.l2.size"] == ["512KiB", "2MiB"] and l2["app"] == ["testpmd"]


#: Studies whose quick run takes more than ~20 s here: `make test-long` runs them
#: (drop-breakdown runs in `make test` too: test_the_drop_breakdown_table_shows_the_stored_msb).
LONG = {"forwarding", "kernel-vs-pmd", "memcached", "enhancements", "sensitivity", "drop-breakdown"}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.long) if n in LONG else n for n in NAMES])
def test_each_study_runs_prints_its_table_and_writes_its_figures(cli, tmp_path, name):
    proc = cli("study", name, "--quick", "--no-progress", "--store", "s.duckdb", "--jobs", "2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    points = studies.get(name).points(quick=True)
    assert re.search(r"points: \d+ computed, \d+ cached, 0 failed", proc.stdout)
    figures = re.findall(r"^wrote (\S+)$", proc.stdout, re.M)
    assert figures
    for fig in figures:
        root = ET.parse(tmp_path / fig).getroot()  # a well-formed SVG
        assert root.tag.endswith("svg")
    table = (tmp_path / "study-out" / name / "table.txt").read_text().splitlines()
    assert table[0] in proc.stdout
    with Store(tmp_path / "s.duckdb", read_only=True) as db:
        stored = len(db.rows())
    # Follow-ups (forwarding's runs at 90 % of each MSB) add points; parts may share a point.
    total = int(re.search(r"(\d+) points: (\d+) computed", proc.stdout).group(1))
    assert total >= points and stored <= total
    # The table: a row per point, but forwarding's (a row per system) and tx-schemes' (every part's points).
    if name != "forwarding":
        assert len(table) - 1 == total
    again = cli("study", name, "--quick", "--no-progress", "--store", "s.duckdb")
    assert f"{total} points: 0 computed, {total} cached, 0 failed" in again.stdout


def test_the_drop_breakdown_table_shows_the_stored_msb(tmp_path):
    run = studies.run_study("drop-breakdown", out=tmp_path, store=tmp_path / "s.duckdb", quick=True)
    rows = run.rows["msb"]
    for cells, row in zip(run.table[1:], rows):
        assert cells[0] == row["params"]["app"] and cells[1] == str(row["params"]["loadgen.size"])
        assert cells[2] == f"{row['msb_gbps']:.2f}"
        shares = [int(c) for c in cells[4:7]]
        assert sum(shares) in (0, 99, 100, 101)


def test_the_enhancement_steps_start_at_the_preset_and_double_from_it():
    from hostsim.host import preset_host
    from hostsim.studies.benchmarks import _enhancement_steps

    host = preset_host("a72-quad")
    steps = dict(_enhancement_steps())
    base, last = steps["baseline"], steps["+DCA"]
    assert base["host.mem.l2.size_bytes"] == host["mem"]["l2"]["size_bytes"]
    assert base["host.mem.llc.dca.enabled"] is host["mem"]["llc"]["dca"]["enabled"] is False
    assert last["host.mem.l2.size_bytes"] == 2 * host["mem"]["l2"]["size_bytes"]
    assert last["host.cpu.rob_entries"] == 2 * host["cpu"]["rob_entries"]
    assert last["host.io.bridge.delay_ps"] * 2 == host["io"]["bridge"]["delay_ps"]
    assert steps["+2x L1"]["host.mem.l2.size_bytes"] == base["host.mem.l2.size_bytes"]  # not yet doubled
