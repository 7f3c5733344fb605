"""report.html is self-contained; report.md says the same; both come from stored results."""

from __future__ import annotations

import base64
import re

import pytest

from attnlab.reports import build_report
from attnlab.reports.format import fmt_count, fmt_value
from attnlab.checks import NO_ERROR, Bound, anchored, at_least, at_most, compare, info, near
from attnlab.errata import TextError
from attnlab.reports.viewer import viewer_data
from attnlab.results import ExperimentResult, Table, bar_figure, line_figure, series
from attnlab.runs.rundir import RunDir

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _entry(id, results, status="ok"):
    e = {"id": id, "paper": id.split(".")[0], "description": f"about {id}", "config": {"scale": "quick"},
         "seed": 0, "seconds": 0.25, "status": status}
    if status == "ok":
        e["results"] = results
    else:
        e["error"] = "Traceback (most recent call last):\nValueError: <boom> & more"
    return e


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    rd = RunDir.create(tmp_path_factory.mktemp("html") / "run")
    rd.write_config({"papers": ["transformer-math"], "titles": {"transformer-math": "The math behind transformers"},
                     "scale": "quick", "seed": 7, "device": "cpu"},
                    ["attnlab", "reproduce", "transformer-math"])
    rd.write_env(seed=7, device="cpu")
    line = line_figure("curve.png", "A curve <with> & caption.", xlabel="x", ylabel="y",
                       xscale="log", yscale="log", title="Curve",
                       series=[series("a", [1, 10, 100], [1.0, 0.0, 0.01]),
                               series("b", [1, 10, 100], [2.0, None, 0.5], style="dashed")])
    bar = bar_figure("bars.png", "Bars.", categories=["GPT-1", "BERT"],
                     groups=[{"label": "paper", "values": [117e6, 340e6]},
                             {"label": "ours", "values": [116534784, None]}], ylabel="n", yscale="log")
    same_name = line_figure("curve.png", "Same file name, other experiment.", xlabel="x", ylabel="y",
                            series=[series("c", [0, 1], [3, 4])])
    with anchored("transformer-math.statement", "a value outside the criterion"):
        summary = [near(1.0088, 1, 0.05, "d = 4..1024", quantity="slope", paper_value="1", where="Fig. 1"),
                   at_most(0.2, 0.05, "x", quantity="GPT-1 relative error", paper_value=117e6, where="Table 1",
                           anchor="transformer-math.table-1", erratum=NO_ERROR),
                   at_least(Bound.at_least(750, "search stopped at its step budget"), 1000, quantity="T* at H = 8",
                            paper_value="~1300", where="App. H"),
                   compare("composite <= mean residual", 0.0, "<=", 1e-8, role="sanity"),
                   compare("max |y_hat - y|", 0.5, "<=", 1e-8, role="construction", where="Theorem 1"),
                   compare("Adam memorizes 1.37x", 1.37, ">=", 1.0, role="own", anchor="", falsifier=""),
                   info("parameters", 116534784, paper_value=117e6)]
        claim = at_most(1e-15, 1e-12).to_dict()
    erratum = TextError("transformer-math.eq2", "§2, eq. 2", "softmax(QK^T) V / sqrt(d)", "softmax(QK^T / sqrt(d)) V",
                        "the text", "typo", "the scale sits inside the softmax in every source", "yes",
                        "the text's later use is right", "transformer-math.k")
    table = Table("T", ["model", "paper", "rel"], [["GPT-1", 117e6, 0.00398]], ["text", "count", "percent"])
    maps = [[[[0.25, 0.75], [1.0, 0.0]]]]
    view = viewer_data(maps, ["<a>", "b & c"], title="Two tokens")
    rd.write_results({
        "papers": ["transformer-math"],
        "experiments": {
            "transformer-math.a": _entry("transformer-math.a", ExperimentResult(
                summary=summary, tables=[table], figures=[line, bar], notes=["A note."],
                interactive=[view]).to_dict()),
            "transformer-math.b": _entry("transformer-math.b", ExperimentResult(figures=[same_name]).to_dict()),
            "transformer-math.c": _entry("transformer-math.c", None, status="error"),
            "transformer-math.d": _entry("transformer-math.d", {"data": {"x": [1, 2]}}),
        },
        "claims": [{"id": "transformer-math.k", "where": "§1", "statement": "s", "paper_value": "exact",
                    **claim}],
        "errata": [erratum.to_dict()],
    })
    build_report(rd.path)
    return rd.path


def _html(run_dir):
    """report.html with its numbers' unbreakable spans taken out (``<span class="n">0.5</span>`` -> ``0.5``)."""
    return re.sub(r'<span class="n">([^<]*)</span>', r"\1", (run_dir / "report.html").read_text())


def _md(run_dir):
    return (run_dir / "report.md").read_text()


VIEWER_SCRIPTS = re.compile(r'<script type="application/json" id="(attnlab-viewer-[A-Za-z0-9_-]+)-data">[^<]*</script>'
                            r"<script>\s*\(function \(\) \{\s*var UID = \"\1\";")


def only_viewer_scripts(html: str) -> int:
    """Every <script> of ``html`` is an attention viewer's inline data or code (no src=, nothing external);
    the number of viewers."""
    tags = re.findall(r"<script\b[^>]*>", html, re.I)
    viewers = VIEWER_SCRIPTS.findall(html)
    assert len(tags) == 2 * len(viewers) == 2 * html.count("data-attnlab-viewer "), tags
    assert all(t in ("<script>", '<script type="application/json" id="' + v + '-data">')
               for t in tags for v in [next((v for v in viewers if v in t), "")]), tags
    return len(viewers)


def test_report_html_is_self_contained(run_dir):
    html = _html(run_dir)
    for bad in ("http://", "https://", 'src="//', "<link", "@import", "@font-face", "<iframe", "fetch(",
                "XMLHttpRequest", "import("):
        assert bad not in html, bad
    assert only_viewer_scripts(html) == 1  # the one interactive block: inline code and data, nothing loaded
    assert not re.search(r"""(src|href)\s*=\s*["'](?!data:|#)""", html)
    assert all(u.startswith("data:") for u in re.findall(r"url\(\s*['\"]?([^'\")]*)", html))
    imgs = re.findall(r"<img[^>]*>", html)
    assert len(imgs) == 3
    for tag in imgs:
        src = re.search(r'src="([^"]*)"', tag).group(1)
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1])[:8] == PNG_MAGIC


def test_report_html_content(run_dir):
    html = _html(run_dir)
    assert "<title>The math behind transformers" in html
    assert "attnlab reproduce transformer-math" in html  # the command line
    for v in ("reproduced", "differs", "inconclusive", "holds", "sanity", "fail"):
        assert f'<span class="pill {v}">{v}</span>' in html, v
    # the headline counts the text's rows, attnlab's own statements and the rest apart
    assert '<b>the text</b><span class="pill reproduced">2 reproduced</span>' in html
    assert '<span class="pill differs">1 differs (1 finding)</span>' in html
    assert "<b>attnlab&#x27;s own statements</b>" in html or "<b>attnlab's own statements</b>" in html
    assert "117.0M" in html and "116.5M (116,534,784)" in html and "0.40%" in html
    assert "<h3>Interactive view</h3>" in html and 'id="attnlab-viewer-transformer-math-a-0"' in html
    assert "Two tokens" in html and "&lt;a&gt;" not in html.split("-data\">", 1)[1].split("</script>")[0]
    assert "Interactive view: Two tokens: open report.html" in _md(run_dir)
    assert "&gt;= 750" in html and "censored: &gt;= 750 cannot decide &gt;= 1000" in html
    assert "A curve &lt;with&gt; &amp; caption." in html  # escaped, never raw
    assert "ValueError: &lt;boom&gt; &amp; more" in html
    assert "A note." in html and "&quot;x&quot;" in html  # result without summary shown as JSON
    assert ">1e-15<" in html  # claim measured value


def test_the_report_opens_with_the_counts_and_where_the_measurements_differ(run_dir):
    for text in (_html(run_dir), _md(run_dir)):
        differs = text.index("Where the measurements differ from the text")
        assert differs < text.index("GPT-1 relative error") < text.index("What the measurements cannot decide")
        assert differs < min(text.index(k) for k in ("<img", "![") if k in text)
        own = text.index("<h3>attnlab's own statements" if text.startswith("<!") else "### attnlab's own statements")
        assert text.index("What the measurements cannot decide") < own < text.index("Failures of attnlab")
        assert "Errors in the text" in text and "the scale sits inside the softmax" in text
        # the differs row is listed under its finding: a statement that does not hold, no error in the text
        plain = re.sub(r"<wbr>|<span class=\"nb\">|</span>", "", text)
        assert "transformer-math.table-1 (Table 1): the statement does not hold (no error in the text)" in plain
        assert "Adam memorizes 1.37x" in text


def test_figures_written_and_name_clash_resolved(run_dir):
    names = sorted(p.name for p in (run_dir / "figures").iterdir())
    assert names == ["bars.png", "curve.png", "transformer-math.b.curve.png"]
    for p in (run_dir / "figures").iterdir():
        assert p.read_bytes()[:8] == PNG_MAGIC and p.stat().st_size > 5000


def test_report_md_says_the_same(run_dir):
    md = _md(run_dir)
    assert md.startswith("# The math behind transformers\n")
    assert re.findall(r"\]\((figures/[^)]+\.png)\)", md) == [
        "figures/curve.png", "figures/bars.png", "figures/transformer-math.b.curve.png"]
    assert "| GPT-1 relative error | 117.0M | 0.2 | <= 0.05 | ≠ differs | Table 1 | x |" in md
    # summary rows and claims, by verdict; the experiment that raised counts as an error
    assert ("**the text: 2 reproduced · 1 differs (1 finding) · 1 inconclusive** · attnlab's own statements: 1 holds "
            "· 0 refuted · 0 inconclusive · checks of attnlab: 1 sanity · 1 fail · 1 error · 1 info") in md
    assert "ValueError: <boom> & more" in md


def test_a_run_stored_before_verdicts_still_reports(tmp_path):
    """Rows stored as status pass/FAIL with the criterion as text read back as reproduced/fail."""
    rd = RunDir.create(tmp_path / "old")
    rd.write_config({"papers": ["transformer-math"], "scale": "quick", "seed": 0, "device": "cpu"}, ["attnlab"])
    rd.write_env(seed=0, device="cpu")
    rows = [{"quantity": "q", "paper_value": "1", "measured": 1.0, "expected": "1 ± 0.1", "status": "pass"},
            {"quantity": "r", "paper_value": "2", "measured": 3.0, "expected": "== 2", "status": "FAIL"}]
    rd.write_results({"papers": ["transformer-math"], "experiments": {"transformer-math.x": _entry(
        "transformer-math.x", {"summary": rows})}})
    build_report(rd.path)
    md = (rd.path / "report.md").read_text()
    assert "| q | 1 | 1 | 1 ± 0.1 | ✅ reproduced |" in md and "| r | 2 | 3 | == 2 | ❌ fail |" in md


def test_rebuild_is_deterministic(run_dir):
    html, md = (run_dir / "report.html").read_text(), _md(run_dir)
    assert [p.read_text() for p in build_report(run_dir)] == [html, md]


@pytest.mark.parametrize("value, fmt, text", [
    (None, None, "–"), (116534784, None, "116,534,784"), (117e6, "count", "117.0M"),
    (1557611200, "count", "1.558B"), (0.0384, "percent", "3.84%"), (1.0088, None, "1.009"),
    (4.5e-15, None, "4.500e-15"), (0.0, None, "0"), (True, None, "yes"), ("x", None, "x"),
])
def test_fmt_value(value, fmt, text):
    assert fmt_value(value, fmt) == text


def test_fmt_count_units():
    assert [fmt_count(x) for x in (999, 1500, 2.5e6, 175e9, 3e12)] == ["999", "1.5k", "2.5M", "175.0B", "3T"]


def test_cells_keep_signed_numbers_whole_and_wide_tables_are_marked():
    from attnlab.reports.html import WIDE_COLUMNS, _table, _txt

    # a line may break after the dash of "e-16" or "-0.5", and a narrow window breaks long words anywhere:
    # every number of two or more characters (with its unit) and every option goes in one unbreakable
    # span; a range or a name ("11-12", "GPT-2", "X_1") is not a signed number, a trailing comma not
    # part of one, and text is escaped
    assert _txt("off by 2.2e-16, lower -5.5e-04 <x>") == (
        'off by <span class="n">2.2e-16</span>, lower <span class="n">-5.5e-04</span> &lt;x&gt;')
    assert _txt("GPT-2 1.5B, Figs. 11-12, rank(1e-2) 0.5 & 3% of X_1, 7") == (
        'GPT-2 <span class="n">1.5B</span>, Figs. <span class="n">11</span>-<span class="n">12</span>, '
        'rank(<span class="n">1e-2</span>) <span class="n">0.5</span> &amp; <span class="n">3%</span> of X_1, 7')
    assert _txt("--scale paper decides") == '<span class="n">--scale</span> paper decides'
    # a dotted name may break after its dots; a decimal point never
    assert _txt("measured by paper.claim-1 at 0.25") == 'measured by paper.<wbr>claim-1 at <span class="n">0.25</span>'

    narrow = _table(["a", "b c d e f"], [["1", "a long text of more than twenty-four characters"]], ["num", "num"])
    assert narrow.startswith('<div class="table-wrap"><table><thead><tr><th>a</th><th>b c d e f</th>')
    # a header of words over shorter cells wraps
    assert '<th class="wrap">conclusion survives</th>' in _table(["conclusion survives"], [["yes"]])
    assert '<td class="num">1</td><td class="num long">a long' in narrow
    wide = _table([str(i) for i in range(WIDE_COLUMNS)], [["0"] * WIDE_COLUMNS])
    assert wide.startswith('<div class="table-wrap wide"><table>') and wide.count("<td>0</td>") == WIDE_COLUMNS


def test_the_title_is_read_from_the_run_directory_not_the_installed_papers(tmp_path):
    """A report is rebuilt from files alone: a paper this install does not have keeps the title the
    run stored, and a run that stored none is titled by the papers' names."""
    from attnlab.reports.format import outline
    from attnlab.runs.rundir import load_run

    rd = RunDir.create(tmp_path / "run")
    rd.write_config({"papers": ["elsewhere"], "titles": {"elsewhere": "A paper installed elsewhere"}}, ["attnlab"])
    rd.write_results({"papers": ["elsewhere"], "experiments": {}, "claims": []})
    assert outline(load_run(rd.path)).title == "A paper installed elsewhere"
    rd.write_config({"papers": ["elsewhere", "logic"]}, ["attnlab"])
    assert outline(load_run(rd.path)).title == "elsewhere · logic"
