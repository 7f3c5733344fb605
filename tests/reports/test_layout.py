"""Every report of a quick reproduce fits a 1400 px window: no table or figure overflows the page
and the console shows no error (scripts/check_report_layout.py, in headless Chromium).

The reports are rebuilt from stored quick runs (tests/fixtures/reports/<paper>.json.gz, written
by scripts/refresh_report_fixtures.py), so no experiment runs here. A paper whose registered
experiments differ from those of its fixture fails until the fixture is refreshed.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from attnlab.reports import build_report
from attnlab.commands.reproduce import experiments_for

ROOT = Path(__file__).resolve().parents[2]
CHECK = ROOT / "scripts" / "check_report_layout.py"
FIXTURES = ROOT / "tests" / "fixtures" / "reports"
WIDTH = 1400


def _script(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


layout = _script("check_report_layout")
fixtures = _script("refresh_report_fixtures")
PAPERS = fixtures.reproduced_papers()


def _require_chromium():
    if layout.chromium_binary():
        return
    if os.environ.get("CI"):
        pytest.fail("CI is set but Chromium is missing: .ci/run should have installed it")
    pytest.skip("Chromium is not installed (apt-get install chromium)")


def test_every_reproduced_paper_has_a_fixture():
    assert PAPERS and sorted(p.name.removesuffix(".json.gz") for p in FIXTURES.glob("*.json.gz")) == PAPERS


@pytest.mark.parametrize("paper", PAPERS)
def test_every_registered_experiment_is_in_its_fixture(paper):
    """A new, renamed or removed experiment: run scripts/refresh_report_fixtures.py PAPER."""
    stored = fixtures.read_fixture(fixtures.fixture_path(paper))
    assert set(stored) == {"config.json", "env.json", "results.json"}
    assert stored["config.json"]["scale"] == "quick" and stored["config.json"]["papers"] == [paper]
    registered = sorted(e.id for e in experiments_for([paper]))
    assert sorted(stored["results.json"]["experiments"]) == registered
    assert sorted(stored["config.json"]["experiments"]) == registered


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.parametrize("paper", PAPERS)
def test_the_quick_report_fits_1400_px(paper, tmp_path):
    _require_chromium()
    run_dir = fixtures.unpack_fixture(fixtures.fixture_path(paper), tmp_path / paper)
    html, _ = build_report(run_dir)
    lay = layout.check_layout(html, width=WIDTH)
    assert lay.ok, f"{paper} at {WIDTH} px:\n" + "\n".join(lay.lines())
    # every table and figure of the page was measured, in a viewport of the window's width
    page = html.read_text()
    assert lay.tables == len(re.findall(r"<table\b", page)) > 0
    assert lay.figures >= len(re.findall(r"<img\b", page))
    assert WIDTH - 20 <= lay.viewport <= WIDTH and lay.scroll_width <= lay.viewport


# A page with one of each kind of offender, every width fixed in CSS so the overflow is known:
# a 2000 px table in a 1000 px scrolling box (1000 px too wide), a 1500 px image in a 1000 px
# figure (500 px), which also widens the page past the viewport, a number too long for its
# 40 px cell, a number broken across two lines of a 70 px cell, an uncaught error and a
# console.error.
BAD = """<!DOCTYPE html><html><head><meta charset="utf-8"><style>
body { margin:0; font:14px sans-serif; } main { width:1000px; }
.table-wrap { overflow-x:auto; } table { border-collapse:collapse; } td { padding:0; border:0; }
td.w { min-width:100px; max-width:100px; width:100px; } td.n { width:40px; max-width:40px; white-space:nowrap; }
figure { margin:0; padding:0; width:1000px; } img { display:block; width:1500px; height:10px; }
</style></head><body><main>
<section><h2><span class="id">paper.wide</span></h2><h3>A wide table</h3>
<div class="table-wrap"><table><tr>CELLS</tr></table></div>
<h3>A narrow cell</h3><div class="table-wrap"><table><tr><td class="n">-1.234567e-16</td></tr></table></div>
<h3>A broken number</h3><table style="width:70px; table-layout:fixed"><tr><td>x 12.34567e-16</td></tr></table>
<figure><img alt="x" src="data:image/gif;base64,R0lGODlhAQABAAAAACw=">
<figcaption><b>A wide figure.</b> caption</figcaption></figure></section>
<script>console.error("boom"); null.x = 1;</script></main></body></html>
""".replace("CELLS", '<td class="w">1</td>' * 20)


@pytest.mark.browser
def test_the_check_finds_overflowing_tables_figures_and_console_errors(tmp_path):
    _require_chromium()
    page = tmp_path / "bad.html"
    page.write_text(BAD)
    lay = layout.check_layout(page, width=WIDTH)
    by = {}
    for o in lay.offenders:
        by.setdefault(o.kind, []).append(o)
    (table,) = by["table"]
    assert table.where == "paper.wide / A wide table" and table.px == pytest.approx(1000, abs=2)
    (cell,) = by["cell"]
    assert "A narrow cell" in cell.where and cell.px > 40  # 13 characters do not fit 40 px
    (split,) = by["split-number"]
    assert split.where == "paper.wide / A broken number" and split.detail.startswith('"12.34567e-16"')
    (figure,) = [o for o in by["figure"] if o.detail.startswith("img")]
    assert figure.where == "paper.wide / A broken number / A wide figure"
    assert figure.px == pytest.approx(500, abs=2)
    (wide_page,) = by["page"]
    assert wide_page.px == pytest.approx(1500 - lay.viewport, abs=2) and lay.scroll_width == pytest.approx(1500, abs=2)
    assert any(c.startswith("console.error: boom") for c in lay.console)
    assert any("Uncaught TypeError" in c for c in lay.console)
    assert not lay.ok and page.read_text() == BAD  # measured in a temporary copy
    # the same page with its widths inside the viewport and no script passes: the check does not
    # report what fits
    good = tmp_path / "good.html"
    good.write_text(BAD.replace("min-width:100px; max-width:100px; width:100px;", "width:40px;")
                    .replace("width:70px", "width:200px")
                    .replace("width:1500px", "width:900px").replace("width:40px; max-width:40px;", "")
                    .split("<script>")[0] + "</main></body></html>")
    fine = layout.check_layout(good, width=WIDTH)
    assert fine.ok, fine.lines()
    assert (fine.tables, fine.viewport) == (3, lay.viewport)


@pytest.mark.browser
def test_the_cli_exit_status(tmp_path):
    _require_chromium()
    bad = tmp_path / "bad.html"
    bad.write_text(BAD)
    proc = subprocess.run([sys.executable, str(CHECK), str(bad), "--width", str(WIDTH)],
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 1, proc.stderr
    assert "table: paper.wide / A wide table by 10" in proc.stdout and "console: " in proc.stdout
    proc = subprocess.run([sys.executable, str(CHECK), str(tmp_path / "none.html")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "does not exist" in proc.stderr and proc.stderr.count("\n") == 1


def test_the_measuring_scripts_go_first_in_head_and_last_in_body():
    page = "<!DOCTYPE html><html><head><title>t</title></head><body><p>x</p></body></html>"
    out = layout.instrumented(page)
    assert out.index("<head>") < out.index("__attnlabLayoutErrors") < out.index("<title>")
    assert out.index("<p>x</p>") < out.index(layout.RESULT_ID) < out.index("</body>")
    assert "http" not in out and out.count("<script>") == 2


def test_fixtures_round_trip(tmp_path):
    """A fixture holds a run's three files exactly, and writing it twice gives the same bytes."""
    src = tmp_path / "run"
    src.mkdir()
    files = {"config.json": {"papers": ["p"], "scale": "quick", "seed": 0, "x": [1.5, None]},
             "env.json": {"python": "3"}, "results.json": {"experiments": {"p.a": {"status": "ok", "s": "é"}}}}
    for name, content in files.items():
        (src / name).write_text(json.dumps(content))
    a = fixtures.write_fixture(src, tmp_path / "a.json.gz")
    b = fixtures.write_fixture(src, tmp_path / "b.json.gz")
    assert a.read_bytes() == b.read_bytes() and a.read_bytes()[:2] == b"\x1f\x8b"
    assert fixtures.read_fixture(a) == files
    back = fixtures.unpack_fixture(a, tmp_path / "back")
    assert {p.name for p in back.iterdir()} == set(files)
    files["config.json"]["scale"] = "paper"
    (src / "config.json").write_text(json.dumps(files["config.json"]))
    with pytest.raises(ValueError, match="quick runs"):
        fixtures.write_fixture(src, tmp_path / "c.json.gz")


@pytest.mark.parametrize("paper", PAPERS)
def test_every_stored_experiment_with_text_rows_lists_its_deviations(paper):
    """The stored quick run: each experiment that decides a text's row lists its deviations (an empty
    list: none), and every row it decides (reproduced or differs) that a deviation touches names its
    control run; an uncontrolled one is inconclusive (issue's rule, attnlab.checks.Check)."""
    stored = fixtures.read_fixture(fixtures.fixture_path(paper))["results.json"]
    for name, exp in stored["experiments"].items():
        res = exp["results"]
        rows = res.get("summary", [])
        if any(r.get("role") == "text" for r in rows):
            assert res.get("deviations") is not None, f"{name}: no deviations list"
        declared = {d["id"] for d in res.get("deviations") or []}
        for r in rows:
            assert set(r.get("deviations") or ()) <= declared, (name, r["quantity"])
            if r.get("deviations") and r.get("verdict") in ("reproduced", "differs"):
                assert r.get("control"), f"{name}: {r['quantity']} is decided without its control"
