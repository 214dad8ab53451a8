"""``hostsim report``: the page opens in headless Chromium without errors, draws every figure, holds the
store's numbers and configs, escapes what it shows; a missing or empty store is a clean error.

The page is read back in a real browser (Playwright driving Chromium): Playwright and Chromium are
test dependencies (``scripts/setup`` installs both; Chromium is Debian's ``chromium`` package, found on
PATH or at ``$HOSTSIM_CHROMIUM``), so a machine without them fails here rather than skipping.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any, Dict, List

import pytest

from hostsim.report import write_report
from hostsim.store import COLUMNS, Store
from hostsim.studies import run_study
from hostsim.sweep import Sweep, run_sweep

# The reflector on a 1 us link, as test_sweep's FAST_BASE: a bandwidth test takes about 0.1 s.
REFLECTOR = {"app": "reflector", "preset": "a72-quad", "sim": {"duration": "1ms", "warmup": "500us", "drain": "100us"}}
MSB = {"name": "refl-msb", "kind": "msb", "msb": {"threshold": 0.01, "resolution": 0.05, "max_trials": 6},
       "base": REFLECTOR,
       "axes": [{"key": "reflector.service_time", "values": ["100ns", "50ns"]},
                {"key": "loadgen.size", "values": [64, 128]}]}
RUN = {"name": "refl-run", "kind": "run", "base": REFLECTOR,
       "axes": [{"key": "loadgen.rate", "values": ["1Gbps", "5Gbps", "20Gbps"]}]}
#: A sweep name that is markup: the page must show it as text.
ODD = 'odd <i>name</i> & "quotes"'

#: How the page shows each store column (written out here, not taken from the report module).
SHOWN = {
    "msb_gbps": lambda v: f"{v:.3f}",
    "msb_pps": lambda v: f"{v / 1e6:.3f}",
    "achieved_gbps": lambda v: f"{v:.3f}",
    "loss_rate": lambda v: f"{100 * v:.3f}",
    "wall_s": lambda v: f"{v:.2f}",
}
HEADLINE = {"msb": {"msb_gbps", "msb_pps"}, "run": {"achieved_gbps", "loss_rate"}}


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Dict[str, Any]:
    """A store with an msb sweep, a run sweep, the quick rx-sharing study and an oddly named copy of a point."""
    root = tmp_path_factory.mktemp("report")
    store = root / "s.duckdb"
    for table in (MSB, RUN):
        rows = run_sweep(Sweep.from_dict(table), store=store)
        assert all(r["status"] == "computed" for r in rows)
    study = run_study("rx-sharing", out=root / "study-out", store=store, quick=True)
    assert study.counts["failed"] == 0
    with Store(store) as db:
        row = dict(db.rows(sweep=MSB["name"])[0])
        row.update(key="0" * 64, sweep=ODD, idx=0)
        assert db.insert({k: row[k] for k in COLUMNS if k != "created"})
    with Store(store, read_only=True) as db:
        rows = db.rows()
    return {"root": root, "store": store, "study": study, "rows": rows}


def chromium_path() -> str:
    """Chromium's executable: ``$HOSTSIM_CHROMIUM``, else ``chromium`` (Debian's package) on PATH."""
    found = os.environ.get("HOSTSIM_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        pytest.fail("no Chromium: the report test needs Debian's chromium package on PATH (scripts/setup "
                    "installs it; apt-get install chromium) or HOSTSIM_CHROMIUM=/path/to/chrome")
    return found


@pytest.fixture(scope="module")
def page(built) -> Any:
    """The report, written and opened in headless Chromium; ``built["problems"]`` collects errors and fetches."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("Playwright is not installed: the report test needs it (scripts/setup installs it; "
                    "pip install playwright)")
    out = built["root"] / "report.html"
    start = time.perf_counter()
    built["summary"] = write_report(built["store"], out)
    built["write_s"] = time.perf_counter() - start
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path())
        try:
            p = browser.new_page(viewport={"width": 1280, "height": 900})
            problems: List[str] = []
            p.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
            p.on("pageerror", lambda err: problems.append(f"page error: {err}"))
            p.on("request", lambda req: None if req.url.startswith(("file:", "data:"))
                 else problems.append(f"fetched {req.url}"))
            p.goto(out.as_uri(), wait_until="load")
            built["problems"] = problems
            yield p
        finally:
            browser.close()


def by_sweep(rows: List[Dict[str, Any]]) -> Dict[str, List[Dict[str, Any]]]:
    out: Dict[str, List[Dict[str, Any]]] = {}
    for r in rows:
        out.setdefault(r["sweep"], []).append(r)
    return out


def test_the_page_opens_without_errors_or_fetches(page, built):
    assert page.title() == "hostsim report: s.duckdb"
    assert built["problems"] == []


def test_the_header_names_the_store_the_versions_and_the_counts(page, built):
    rows = built["rows"]
    assert page.locator('[data-field="store"]').inner_text() == str(built["store"])
    assert int(page.locator('header [data-field="sweeps"]').inner_text()) == len(by_sweep(rows)) == 5
    assert int(page.locator('header [data-field="points"]').inner_text()) == len(rows) == 13
    versions = page.locator('[data-field="model_version"]').evaluate_all("els => els.map(e => e.dataset.value)")
    assert sorted(versions) == sorted({r["model_version"] for r in rows})
    s = built["summary"]
    assert (s.sweeps, s.points, s.figures) == (5, 13, 3 + len(built["study"].figures))
    assert s.bytes == Path(s.path).stat().st_size


def drawn(page, selector: str) -> List[Dict[str, Any]]:
    """Each matching figure's name and its image's rendered box and decoded size."""
    return page.locator(selector).evaluate_all("""figs => figs.map(f => {
        const img = f.querySelector('img, svg'); const box = img ? img.getBoundingClientRect() : null;
        return {name: f.dataset.figure, w: box ? box.width : 0, h: box ? box.height : 0,
                natural: img && img.naturalWidth !== undefined ? img.naturalWidth : -1,
                complete: img ? (img.complete !== false) : false};
    })""")


def test_every_figure_is_drawn(page, built):
    expected = {MSB["name"]: ["msb.svg"], RUN["name"]: ["run.svg"], ODD: ["msb.svg"]}
    for sweep, names in expected.items():
        figs = drawn(page, f"figure[data-sweep={json.dumps(sweep)}]")
        assert [f["name"] for f in figs] == names, sweep
    study = drawn(page, 'figure[data-study="rx-sharing"]')
    assert [f["name"] for f in study] == [p.name for p in built["study"].figures]
    everything = drawn(page, "figure")
    assert len(everything) == built["summary"].figures == 7
    for f in everything:
        assert f["w"] > 100 and f["h"] > 100 and f["natural"] > 0 and f["complete"], f


def table_cells(page) -> Dict[str, Dict[str, Any]]:
    """Each points table: its header and its cells (key, field, value, text)."""
    tables = page.locator("table.points").evaluate_all("""ts => ts.map(t => ({
        sweep: t.dataset.sweep,
        header: [...t.querySelectorAll('thead th')].map(th => th.textContent),
        rows: [...t.querySelectorAll('tbody tr')].map(tr => tr.dataset.key),
        cells: [...t.querySelectorAll('td[data-field]')].map(td => ({
            key: td.dataset.key, field: td.dataset.field, value: td.dataset.value, text: td.textContent}))
    }))""")
    return {t["sweep"]: t for t in tables}


def expected_text(field: str, row: Dict[str, Any]) -> Any:
    """What a cell holds for the stored row: (the value decoded from data-value, the text shown)."""
    if field.startswith("params."):
        value = row["params"][field[len("params."):]]
        return value, value if isinstance(value, str) else json.dumps(value)
    if field == "idx":
        return row["idx"], str(row["idx"])
    if field == "warnings":
        n = len(row["result"].get("warnings") or [])
        return n, str(n)
    return row[field], SHOWN[field](row[field])


def test_every_sweep_has_a_table_with_the_stores_numbers(page, built):
    tables = table_cells(page)
    stored = by_sweep(built["rows"])
    assert set(tables) == set(stored)
    for sweep, rows in stored.items():
        t, keyed = tables[sweep], {r["key"]: r for r in rows}
        assert t["rows"] == [r["key"] for r in rows], sweep
        seen: Dict[str, set] = {k: set() for k in keyed}
        for cell in t["cells"]:
            row = keyed[cell["key"]]
            value, text = expected_text(cell["field"], row)
            assert (json.loads(cell["value"]), cell["text"]) == (value, text), (sweep, cell)
            seen[cell["key"]].add(cell["field"])
        for key, fields in seen.items():
            r = keyed[key]
            assert HEADLINE[r["kind"]] | {"idx", "wall_s", "warnings"} <= fields, (sweep, fields)
            assert {f"params.{a}" for a in r["params"]} <= fields, (sweep, fields)
    # The sweep's axis order, recovered from the points (the store keeps params with sorted keys).
    assert tables[MSB["name"]]["header"][1:3] == ["reflector.service_time", "loadgen.size"]


def test_the_study_table_is_the_studys_own(page, built):
    cells = page.locator('table.study[data-study="rx-sharing"]').evaluate("""t => [
        [...t.querySelectorAll('thead th')].map(th => th.textContent),
        ...[...t.querySelectorAll('tbody tr')].map(tr => [...tr.querySelectorAll('td')].map(td => td.textContent))]""")
    assert cells == built["study"].table
    section = page.locator('section[data-study="rx-sharing"]')
    assert section.get_attribute("data-quick") == "true"
    assert sorted(section.locator("table.points").evaluate_all("ts => ts.map(t => t.dataset.sweep)")) == [
        "study/rx-sharing/none-quick", "study/rx-sharing/shared-quick"]


def test_a_click_shows_each_points_config(page, built):
    stored = {r["key"]: r for r in built["rows"]}
    details = page.locator("details[data-key]")
    assert details.count() == len(stored)
    for i in range(details.count()):
        d = details.nth(i)
        key = d.get_attribute("data-key")
        pre = d.locator("pre")
        assert not pre.is_visible()
        d.locator("summary").click()
        assert pre.is_visible()
        assert json.loads(pre.inner_text()) == stored[key]["config"]
        d.locator("summary").click()
        assert not pre.is_visible()


def test_markup_in_names_is_shown_as_text(page):
    assert page.locator("main i").count() == 0
    section = page.locator(f"section[data-sweep={json.dumps(ODD)}]")
    assert section.locator("h2").inner_text() == f"sweep {ODD}"


def test_a_study_whose_figures_fail_says_so_and_draws_its_parts_generically(built, monkeypatch, tmp_path):
    from hostsim import studies

    def fail(rows, out):
        raise KeyError("cores")

    monkeypatch.setattr(studies.get("rx-sharing"), "figures", fail)
    out = tmp_path / "r.html"
    summary = write_report(built["store"], out)
    text = out.read_text()
    assert "the study's own table and figures failed on these rows (KeyError: &#x27;cores&#x27;)" in text
    for part in ("none", "shared"):
        assert (f'data-study="rx-sharing" data-sweep="study/rx-sharing/{part}-quick" data-figure="run.svg"'
                in text)
    assert summary.figures == 3 + 2
    assert 'class="study"' not in text


def test_cli_writes_the_report_and_says_what(cli, built, tmp_path):
    proc = cli("report", "--store", str(built["store"]), "-o", "r.html", "--title", "<b>t</b>")
    assert proc.returncode == 0, proc.stderr
    size = (tmp_path / "r.html").stat().st_size
    assert proc.stdout.strip() == (f"wrote r.html: 5 sweeps, 13 points, 7 figures, {size} bytes "
                                   f"(store {built['store']})")
    assert "<title>&lt;b&gt;t&lt;/b&gt;</title>" in (tmp_path / "r.html").read_text()


def test_a_missing_or_empty_store_is_a_clean_error(cli, tmp_path):
    proc = cli("report", "--store", "missing.duckdb", "-o", "r.html")
    assert proc.returncode == 2
    assert "missing.duckdb" in proc.stderr and "--store" in proc.stderr and "Traceback" not in proc.stderr
    Store(tmp_path / "empty.duckdb").close()
    proc = cli("report", "--store", "empty.duckdb")
    assert proc.returncode == 2
    assert "empty.duckdb" in proc.stderr and "no points" in proc.stderr and "--store" in proc.stderr
    assert not (tmp_path / "report.html").exists()
