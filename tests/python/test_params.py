"""The calibration registry (``python/hostsim/sources.toml``, ``hostsim params``):
every default and preset value names its source or says it is an estimate."""

from __future__ import annotations

import json
import re

import pytest

from conftest import REPO
from hostsim import params as P
from hostsim.host import host_presets

PRESETS = host_presets()
PARAMS_MD = REPO.parent / "shared" / "reference" / "params.md"


@pytest.fixture(scope="module")
def registry():
    return P.load_sources()


@pytest.fixture(scope="module")
def rows():
    return {name: P.params(name) for name in PRESETS}


def test_the_registry_covers_every_preset():
    assert set(P.load_sources()["preset"]) == set(PRESETS)


@pytest.mark.parametrize("preset", PRESETS)
def test_every_field_has_a_source(rows, preset):
    missing = [r.field for r in rows[preset] if r.kind == "missing"]
    assert not missing, f"{preset}: {len(missing)} fields without a source in sources.toml: {', '.join(missing)}"


def test_rows_hold_host_and_run_fields(rows):
    fields = {r.field for r in rows["altra"]}
    assert {"host.cpu.freq_hz", "host.pmd.rxd", "host.nic.rss_key", "link.rate", "sim.duration",
            "loadgen.size", "loadgen.tcp.window_bytes", "reflector.service_time"} <= fields
    assert len(fields) == len(rows["altra"]), "each field once"
    fpga = {r.field for r in rows["xeon-6226r-fpga"]}
    assert "host.nic.memory.bytes" in fpga and "host.nic.memory" not in fpga, "a dict of fields is not a leaf"
    bind = next(r for r in rows["altra"] if r.field == "host.bind")
    assert bind.value == [] and bind.unit == "list", "a list value is one leaf"


def test_no_source_is_only_whitespace(registry):
    tables = {"default": registry["default"], **{f"preset.{k}": v for k, v in registry["preset"].items()}}
    blank = [f"[{t}] {k}" for t, table in tables.items() for k, v in table.items()
             if not isinstance(v, str) or not v.strip()]
    assert not blank, f"empty sources: {blank}"


def test_registry_names_only_fields_that_exist(registry):
    every = set()
    stale = []
    for preset in PRESETS:
        names = {f for f, _, _ in P.fields(preset)}
        every |= names
        stale += [f"[preset.{preset}] {k}" for k in registry["preset"][preset] if k not in names]
    stale += [f"[default] {k}" for k in registry["default"] if k not in every]
    assert not stale, f"stale keys in sources.toml: {stale}"


def test_a_default_source_covers_one_value(rows):
    """A field that takes its source from [default] has the same value in
    every preset that does: a preset whose value differs needs its own entry."""
    seen = {}
    for preset in PRESETS:
        for r in rows[preset]:
            if r.where == "default":
                seen.setdefault(r.field, {})[preset] = r.value
    differ = {f: v for f, v in seen.items() if len({json.dumps(x, sort_keys=True) for x in v.values()}) > 1}
    assert not differ, f"[default] sources shared by different values: {differ}"


def test_fitted_values_are_not_presented_as_sourced(rows):
    # A constant `hostsim calibrate` fitted says so, names its targets and
    # keeps its prior's source; a value tuned by hand is an estimate.
    for preset in PRESETS:
        for r in rows[preset]:
            text = r.source.lower()
            if r.where == "fitted":
                assert r.kind == "fitted" and "calibration targets" in text, f"{preset} {r.field}: {r.source}"
            elif "fitted" in text or "tuned" in text:
                assert r.kind == "estimate", f"{preset} {r.field}: {r.source}"
    k = next(r for r in rows["xeon-e3-1230v2"] if r.field == "host.pmd.costs.rx_pkt_instr")
    assert k.kind == "fitted" and "group pmd-stages" in k.source and "estimate" in k.source
    # The kernel's stages are fitted to the forwarding study's Table II; their
    # priors, derived from published per-function times, stay named.
    k = next(r for r in rows["xeon-e3-1230v2"] if r.field == "host.kernel.costs.rx_pkt_instr")
    assert k.kind == "fitted" and "group kernel-stages" in k.source and "host-costs.md" in k.source
    # The interrupt is not fitted: no target exercises it.
    k = next(r for r in rows["xeon-e3-1230v2"] if r.field == "host.kernel.costs.irq_instr")
    assert k.kind == "estimate", k.source


def test_kinds_and_units():
    assert P.kind_of("estimate") == P.kind_of("Estimate: why") == "estimate"
    assert P.kind_of("setting: one core") == "setting"
    assert P.kind_of('params.md §6a "ixgbe"') == "sourced"
    assert P.kind_of("  ") == "missing"
    assert P.kind_of("fitted to calibration targets a (group g)") == "fitted"
    assert [P.unit_of(n, 1) for n in ("a.latency_ps", "a.size_bytes", "a.freq_hz", "a.channel_bandwidth_bytes_per_s",
                                      "nic.memory.bytes", "a.ways", "a.rate_bps")] == ["ps", "B", "Hz", "B/s", "B",
                                                                                       "count", "bit/s"]
    assert (P.unit_of("a.enabled", True), P.unit_of("a.inclusion", "inclusive")) == ("flag", "choice")
    assert P.format_value(200_000, "ps") == "200000 ps (200 ns)"
    assert P.format_value(1518, "B") == "1518 B"


def test_preset_tables_win_over_default(rows):
    r = next(r for r in rows["altra"] if r.field == "host.nic.rx_fifo_bytes")
    assert r.where == "preset" and r.kind == "estimate", "the 100 GbE NIC's FIFOs are the 82599's, an estimate"
    r = next(r for r in rows["xeon-e3-1230v2"] if r.field == "host.nic.rx_fifo_bytes")
    assert r.where == "default" and "82599 datasheet" in r.source


CITE = re.compile(r"params\.md §(\d+[a-z]?)")


def _cited_sections(rows):
    cited = {}
    for preset in PRESETS:
        for r in rows[preset]:
            for sec in CITE.findall(r.source):
                cited.setdefault(sec, f"{preset} {r.field}")
    return cited


def test_cited_params_md_sections_exist(rows):
    if not PARAMS_MD.exists():
        pytest.skip(f"the shared parameter reference is not beside the repo ({PARAMS_MD} absent, as in CI)")
    headings = set(re.findall(r"^#{2,4} (\d+[a-z]?)\.", PARAMS_MD.read_text(encoding="utf-8"), re.M))
    cited = _cited_sections(rows)
    assert cited, "the registry cites params.md"
    unknown = {sec: where for sec, where in cited.items() if sec not in headings}
    assert not unknown, f"params.md has no section {sorted(unknown)} (first cited by {unknown})"


def test_cli_prints_the_table(cli, tmp_path):
    proc = cli("params", "--preset", "i9-7940x-cx5", "--json", "rows.json", check=True)
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["field", "value", "source"]
    freq = next(line for line in lines if line.startswith("host.cpu.freq_hz "))
    assert "3100000000 Hz (3.1 GHz)" in freq and 'SPEC §4 "3.1 GHz"' in freq
    assert lines[-1].startswith("i9-7940x-cx5: ") and "0 without a source" in lines[-1]
    data = json.loads((tmp_path / "rows.json").read_text())
    assert {"field", "value", "unit", "source", "where", "kind"} <= set(data[0])


def test_cli_missing_exits_0_when_all_are_sourced(cli):
    proc = cli("params", "--missing")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines() == [P.summary("altra", P.params("altra"))]


def test_missing_exits_1_and_lists_the_fields(tmp_path, monkeypatch, capsys):
    reg = P.load_sources()
    del reg["default"]["host.pmd.burst"]
    monkeypatch.setattr(P, "load_sources", lambda path=None: reg)
    assert P.main("altra", missing=True) == 1
    out = capsys.readouterr().out
    assert "host.pmd.burst" in out and "1 without a source" in out


@pytest.mark.parametrize("command", ["params", "validate", "bench"])
def test_an_unwritable_json_path_is_refused_before_the_table(cli, tmp_path, command):
    proc = cli(command, "--json", str(tmp_path / "missing-dir" / "rows.json"))
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    assert "--json: invalid value" in proc.stderr and "a file in an existing, writable directory" in proc.stderr
