"""report.html: one self-contained file.

Inline CSS, figures as base64 ``data:`` URIs, system fonts and no reference to anything
outside the file (it must render offline, years later). The only scripts are those of the
attention viewers (:mod:`attnlab.reports.viewer`) of a result's interactive blocks: inline,
each with its data inline, loading nothing.
"""

from __future__ import annotations

import json
import re
from html import escape

from attnlab.checks import Check, Tally
from attnlab.errata import COLUMNS as ERRATA_COLUMNS
from attnlab.errata import table_rows
from attnlab.reports.figures import RenderedFigure, spans_row
from attnlab.reports.viewer import viewer_fragment
from attnlab.deviations import COLUMNS as DEVIATION_COLUMNS
from attnlab.deviations import table_rows as deviation_rows
from attnlab.reports.format import (
    Outline,
    Row,
    claim_row,
    row_notes,
    verdict_notes,
    config_items,
    env_items,
    experiment_status,
    fmt_measured_cell,
    fmt_paper,
    fmt_value,
    row_counts,
)
from attnlab.reports.stored_run import StoredClaim, StoredExperiment
from attnlab.results import ExperimentResult

CSS = """
:root { --ink:#1d2430; --muted:#5b6575; --line:#e3e7ed; --bg:#f6f7f9; --card:#fff;
        --accent:#0b5cad; --pass:#1a7f37; --pass-bg:#e6f4ea; --fail:#b42318; --fail-bg:#fdecea;
        --info:#475467; --info-bg:#eef1f5; --differs:#7a2e8e; --differs-bg:#f6ebf9;
        --inconclusive:#8a5a00; --inconclusive-bg:#fdf3dc; --sanity:#1f6f78; --sanity-bg:#e4f3f4; }
* { box-sizing:border-box; }
body { margin:0; background:var(--bg); color:var(--ink);
       font:15px/1.55 -apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,"Noto Sans",sans-serif; }
main { max-width:1080px; margin:0 auto; padding:0 28px 56px; }
header.top { background:#14213d; color:#fff; padding:30px 0 26px; margin-bottom:28px; }
header.top .inner { max-width:1080px; margin:0 auto; padding:0 28px; }
header.top .kicker { text-transform:uppercase; letter-spacing:.08em; font-size:12px; color:#9fb3d9; }
header.top h1 { margin:4px 0 6px; font-size:28px; line-height:1.25; font-weight:650; }
header.top .sub { color:#c9d4ea; font-size:14px; }
header.top code { color:#fff; background:rgba(255,255,255,.12); }
.badges { margin-top:14px; display:flex; gap:8px; flex-wrap:wrap; }
h2 { font-size:21px; margin:38px 0 10px; padding-bottom:6px; border-bottom:2px solid var(--line); }
h2 .id { font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace; font-size:18px; }
h3 { font-size:15px; margin:22px 0 8px; color:var(--muted); text-transform:uppercase; letter-spacing:.04em; }
p.lead { color:var(--muted); margin:4px 0 14px; }
td code.id { white-space:nowrap; }
code { font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace; font-size:.88em;
       background:#eef1f5; padding:1px 5px; border-radius:4px; overflow-wrap:anywhere; }
.cards { display:grid; grid-template-columns:1fr 1fr; gap:18px; }
.card { background:var(--card); border:1px solid var(--line); border-radius:10px; padding:14px 18px; }
.card h3 { margin-top:2px; }
dl.kv { display:grid; grid-template-columns:max-content 1fr; gap:4px 16px; margin:0; font-size:14px; }
dl.kv dt { color:var(--muted); } dl.kv dd { margin:0; overflow-wrap:anywhere; }
.table-wrap { overflow-x:auto; border:1px solid var(--line); border-radius:10px; }
/* a box that scrolls sideways shades the edge it hides content behind: the shadows stay at the box's
   edges, the covers (the card's colour) move with the content and hide a shadow where nothing is hidden */
.table-wrap, .fig-scroll {
  background: linear-gradient(to right, var(--card) 40%, rgba(255,255,255,0)) left center / 40px 100% no-repeat local,
              linear-gradient(to left, var(--card) 40%, rgba(255,255,255,0)) right center / 40px 100% no-repeat local,
              radial-gradient(farthest-side at 0 50%, rgba(16,24,40,.45), rgba(16,24,40,0)) left center / 24px 100% no-repeat scroll,
              radial-gradient(farthest-side at 100% 50%, rgba(16,24,40,.45), rgba(16,24,40,0)) right center / 24px 100% no-repeat scroll,
              var(--card); }
.table-wrap.wide { width:max-content; min-width:100%; max-width:calc(100vw - 48px);
                   position:relative; left:50%; transform:translateX(-50%); }
table { border-collapse:collapse; width:100%; font-size:14px; }
.wide table { font-size:13px; }
th, td { text-align:left; padding:8px 12px; border-bottom:1px solid var(--line); vertical-align:top;
         overflow-wrap:break-word; }
.wide th, .wide td { padding:6px 8px; }
th { background:rgba(67,105,155,.08); font-weight:600; color:#344054; white-space:nowrap; }
.wide th, th.wrap { white-space:normal; }
tr:last-child td { border-bottom:none; }
tbody tr:nth-child(even) td { background:rgba(5,55,105,.02); }
td.num { font-variant-numeric:tabular-nums; white-space:nowrap; text-align:right; }
td.num.long { white-space:normal; text-align:left; }
span.n { white-space:nowrap; }
td.paper { color:#344054; }
td.detail { color:var(--muted); font-size:13px; }
.pill { display:inline-block; padding:1px 10px; border-radius:999px; font-size:12.5px; font-weight:600;
        white-space:nowrap; }
.pill.reproduced, .pill.pass { color:var(--pass); background:var(--pass-bg); }
.pill.fail, .pill.FAIL, .pill.error { color:var(--fail); background:var(--fail-bg); }
.pill.differs { color:var(--differs); background:var(--differs-bg); }
.pill.inconclusive { color:var(--inconclusive); background:var(--inconclusive-bg); }
.pill.sanity { color:var(--sanity); background:var(--sanity-bg); }
.pill.holds { color:var(--pass); background:var(--sanity-bg); }
.pill.refuted { color:var(--differs); background:var(--sanity-bg); }
.badges .group { display:inline-block; margin-right:14px; }
.badges .group > b { font-size:12.5px; font-weight:600; margin-right:4px; color:var(--muted, #555); }
section.verdicts h4 { margin:16px 0 4px; font-size:14.5px; }
.pill.info { color:var(--info); background:var(--info-bg); }
.badges .pill.zero { opacity:.55; }
div.why { font-size:12px; color:var(--inconclusive); margin-top:3px; white-space:normal; }
section.verdicts p.lead b { color:var(--ink); }
.badges .pill { font-size:13.5px; padding:3px 12px; }
.figs { display:grid; grid-template-columns:repeat(2, minmax(0, 1fr)); gap:18px; margin-top:8px; }
figure { margin:0; background:var(--card); border:1px solid var(--line); border-radius:10px; padding:12px; }
figure.wide { grid-column:1 / -1; }
.fig-scroll { overflow-x:auto; }
/* at most its own size, at least as wide as keeps its smallest text 9 px (its style's min-width): where the
   row is narrower, it scrolls; multiplied onto the box, the edge's shadow shows on the white figure */
figure img { max-width:100%; height:auto; display:block; margin:0 auto; mix-blend-mode:multiply; }
figcaption { font-size:13px; color:var(--muted); margin-top:8px; }
figcaption b { color:var(--ink); }
.note { border-left:3px solid var(--accent); background:#eef4fb; padding:8px 14px; border-radius:0 8px 8px 0;
        font-size:14px; margin:12px 0; }
details { margin-top:12px; font-size:13.5px; }
summary { cursor:pointer; color:var(--accent); }
pre { background:#0f172a; color:#e2e8f0; padding:12px 14px; border-radius:8px; overflow-x:auto; font-size:12.5px;
      white-space:pre-wrap; overflow-wrap:anywhere; }
footer { margin-top:48px; color:var(--muted); font-size:13px; text-align:center; }
@media (max-width:999px) {
  main, header.top .inner { padding-left:16px; padding-right:16px; }
  .figs { grid-template-columns:minmax(0, 1fr); }
  th { white-space:normal; }
  th, td { padding:6px 8px; }
  td:not(.num) { overflow-wrap:anywhere; }  /* a long formula or path wraps; numbers and ids stay whole */
}
@media (max-width:760px) { .cards { grid-template-columns:1fr; } }
/* on paper nothing scrolls: every table and figure fits the page's width, closed details open */
@media print {
  body { background:#fff; font-size:12px; }
  header.top { -webkit-print-color-adjust:exact; print-color-adjust:exact; padding:14px 0; }
  main { max-width:none; padding:0; }
  .table-wrap, .fig-scroll, pre { overflow:visible; background:none; }
  .table-wrap.wide { width:auto; max-width:none; left:auto; transform:none; }
  table, .wide table { font-size:10px; }
  table code { font-size:.95em; }
  th, td, .wide th, .wide td { padding:3px 4px; white-space:normal; }
  td:not(.num) { overflow-wrap:anywhere; }
  td.num { white-space:normal; }
  figure img { min-width:0 !important; max-width:100%; mix-blend-mode:normal; }
  figure, tr, .note, .card, pre { break-inside:avoid; }
  h2, h3, h4 { break-after:avoid; }
  details::details-content { content-visibility:visible; display:block; }
  summary { color:var(--muted); }
  .attnlab-viewer .av-grid, .attnlab-viewer .av-text { overflow:visible !important; max-height:none !important; }
}
"""


def _short(id: str) -> str:
    """'transformer-math.softmax-jacobian' -> 'softmax-jacobian' (the paper is the page title)."""
    return id.split(".", 1)[-1]


def _pill(status: str) -> str:
    return f'<span class="pill {escape(status)}">{escape(status)}</span>'


# A number of two or more characters ("0.5", "-0.5", "2.2e-16", "1.5B", "3%") and a command-line option
# ("--scale"): kept in one piece. Browsers may start a new line after a dash, and a narrow window breaks
# long words anywhere (CSS below); a number or option never. A dash after a letter, digit or bracket is a
# range or a name ("2-3", "GPT-2"), where a line may break.
_WHOLE = re.compile(r"(?<![\w.)\]-])--?[A-Za-z][\w-]*"
                    r"|(?<![\w.)\]])[-+\u2212]?(?:\d(?:[\d,]*\d)?(?:\.\d+)?|\.\d+)(?:[eE][-+\u2212]?\d+)?(?:%|[A-Za-z]{1,2}\b)?")

# The smallest text a reader is asked to read, in CSS pixels: a figure is never shown so narrow that its
# smallest text is smaller (its box scrolls instead).
LEGIBLE_TEXT_PX = 9.0
# Tables with at least this many columns are set smaller and may grow past the text column up to
# the viewport's width (a sweep's parameters and measures side by side).
WIDE_COLUMNS = 9
# A cell of a number column holding more than this many characters of text wraps (at spaces).
LONG_CELL = 24


# The dot of a dotted name ("memorization.proposition3-reduction"): a line may break after it.
_NAME_DOT = re.compile(r"(?<=[A-Za-z_])\.(?=[A-Za-z])")


def _txt(s: object) -> str:
    """Escaped text for a table cell, with every number of two or more characters and every option in
    one unbreakable piece (:data:`_WHOLE`) and a line-break opportunity after each dot of a dotted name."""
    text, out, at = str(s), [], 0

    def words(t: str) -> str:
        return _NAME_DOT.sub(".<wbr>", escape(t))

    for m in _WHOLE.finditer(text):
        if len(m.group(0)) > 1:
            out += [words(text[at:m.start()]), f'<span class="n">{escape(m.group(0))}</span>']
            at = m.end()
    return "".join(out) + words(text[at:])


def _plain_length(cell: str) -> int:
    """The number of characters ``cell`` shows (tags left out, an entity counted as one)."""
    return len(re.sub(r"&[#\w]+;", "_", re.sub(r"<[^>]*>", "", cell)))


def _table(header: list[str], rows: list[list[str]], classes: list[str] | None = None) -> str:
    """Cells are already-escaped HTML (:func:`_txt` for text); ``classes`` gives a td class per column.

    Text cells wrap between words and after the dots of dotted names; numbers never break (a
    ``num`` cell is one line unless it holds more than :data:`LONG_CELL` characters of text, and
    :func:`_txt` keeps signed numbers whole). A header stays on one line unless it is longer
    than every cell below it. A table of :data:`WIDE_COLUMNS` or more columns is set smaller,
    may use the viewport's width, and all its header cells wrap at spaces."""
    classes = classes or [""] * len(header)
    # a header of several words longer than every cell of its column wraps ("conclusion
    # survives" over "yes"); the others keep their column at their width
    longest = [max((_plain_length(r[i]) for r in rows), default=0) for i in range(len(header))]
    head = "".join(f'<th class="wrap">{escape(h)}</th>' if " " in h and len(h) > n else f"<th>{escape(h)}</th>"
                   for h, n in zip(header, longest))

    def td(cell: str, c: str) -> str:
        if c == "num" and " " in cell and _plain_length(cell) > LONG_CELL:
            c = "num long"
        return f'<td class="{c}">{cell}</td>' if c else f"<td>{cell}</td>"

    body = "".join("<tr>" + "".join(td(cell, c) for cell, c in zip(r, classes)) + "</tr>" for r in rows)
    wrap = "table-wrap wide" if len(header) >= WIDE_COLUMNS else "table-wrap"
    return f'<div class="{wrap}"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def _kv(items: list[tuple[str, str]]) -> str:
    return '<dl class="kv">' + "".join(
        f"<dt>{escape(k)}</dt><dd>{'<code>' + escape(v) + '</code>' if k in ('command', 'git_commit') else escape(v)}</dd>"
        for k, v in items) + "</dl>"


def render_html(o: Outline, figures: dict[tuple[str, str], RenderedFigure]) -> str:
    """The page; ``figures`` maps (experiment id, spec file) to its rendered figure."""
    t = o.tally()
    judged = t.total - t.info
    badges = tally_badges(t) if judged else (
        f'<span class="pill info">{t.info} info</span>' if t.info else '<span class="pill">descriptive: nothing judged</span>')
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(o.title)} · attnlab report</title><style>{CSS}</style></head><body>",
        f'<header class="top"><div class="inner"><div class="kicker">{escape(_kicker(o))}</div>'
        f"<h1>{escape(o.title)}</h1><div class=\"sub\">run <code>{escape(o.run_name)}</code> · {escape(o.date)}</div>"
        f'<div class="badges">{badges}</div></div></header><main>',
        _verdict_sections(o) if judged else "",
        '<section class="cards">',
        f'<div class="card"><h3>Run</h3>{_kv(config_items(o.config))}</div>',
        f'<div class="card"><h3>Environment</h3>{_kv(env_items(o.env))}</div></section>',
    ]
    if o.experiments:
        parts.append("<h2>Summary</h2>")
        parts.append(_table(
            ["experiment", "what it measures", "verdicts", "most serious", "time"],
            [[f'<code class="id">{escape(_short(e.id))}</code>', _txt(e.entry.description), _txt(row_counts(e)),
              _pill(experiment_status(e)), _txt(fmt_value(e.entry.seconds)) + " s"] for e in o.experiments],
            ["", "detail", "num", "", "num"]))
    if o.claims:
        parts.append(_claims(o.claims))
    if o.errata:
        parts.append(_errata(o.errata))
    for e in o.experiments:
        parts.append(_experiment(e, figures))
    parts.append("<footer>Generated by attnlab from the stored results of this run directory "
                 "(<code>attnlab report RUN_DIR</code> rebuilds it).</footer></main></body></html>")
    return "\n".join(parts) + "\n"


def _img(f: RenderedFigure) -> str:
    """The figure's <img>: shown at most at its own size, never narrower than keeps its smallest text
    :data:`LEGIBLE_TEXT_PX` high (its box scrolls there); ``data-text-px`` is that text's height in the
    PNG's pixels (the layout check reads it)."""
    w, h = f.size_px
    size = f' width="{w}" height="{h}" style="min-width:{f.legible_width(LEGIBLE_TEXT_PX)}px"' if w else ""
    return (f'<img alt="{escape(f.title or f.path.name)}"{size} data-text-px="{f.text_px:.2f}" '
            f'src="data:image/png;base64,{f.png_base64}">')


def _kicker(o: Outline) -> str:
    return "attnlab analysis report" if o.config.get("command") == "analyze" else "attnlab reproduction report"


def _rows_table(rows: list[Row], with_reason: bool = False) -> str:
    header = ["where measured", "quantity", "the text", "measured", "required", "where in the text",
              "why" if with_reason else "detail"]
    body = [[f'<code class="id">{escape(_short(r.source))}</code>', _txt(r.quantity), _txt(fmt_paper(r.paper_value)),
             _txt(r.measured), _txt(r.criterion), _txt(r.where),
             _txt(r.reason if with_reason else r.detail)] for r in rows]
    return _table(header, body, ["", "", "paper", "num", "num", "", "detail"])


def tally_badges(t: Tally) -> str:
    """The headline: the texts' rows (differs with their distinct findings), attnlab's own
    statements, and the rest, each verdict a pill."""
    def pill(v: str, n: int, label: str = "") -> str:
        return f'<span class="pill {v}{"" if n else " zero"}">{n} {escape(label or v)}</span>'

    differs = t.text["differs"]
    texts = (pill("reproduced", t.text["reproduced"])
             + pill("differs", differs, "differs" + (f" ({t.findings} finding{'s' if t.findings != 1 else ''})"
                                                     if differs else ""))
             + pill("inconclusive", t.text["inconclusive"]))
    own = "".join(pill(v, t.own[v]) for v in ("holds", "refuted", "inconclusive"))
    rest = pill("sanity", t.sanity) + pill("fail", t.fail) + (pill("error", t.error) if t.error else "") + (
        pill("info", t.info) if t.info else "")
    return (f'<span class="group"><b>the text</b>{texts}</span>'
            + (f'<span class="group"><b>attnlab\'s own statements</b>{own}</span>' if sum(t.own.values()) else "")
            + f'<span class="group"><b>checks of attnlab</b>{rest}</span>')


def _verdict_sections(o: Outline) -> str:
    """Where the measurements differ from the text (by finding), what they cannot decide,
    attnlab's own statements, and what failed: first in the report, before any figure."""
    out = ['<section class="verdicts"><h2>Where the measurements differ from the text</h2>']
    findings = o.findings()
    if findings:
        rows = sum(len(f.rows) for f in findings)
        records = sum(f.record is not None for f in findings)
        out.append(f'<p class="lead"><b>{len(findings)}</b> distinct finding(s), evidenced by <b>{rows}</b> row(s): '
                   f"{records} error(s) of the text (errata records, the table below says whose error it is) and "
                   f"{len(findings) - records} statement(s) that do not hold with no error in the text (a measured "
                   "number that differs). Each row gives the text's value, ours and the criterion.</p>")
        for f in findings:
            out.append(f"<h4>{_txt(f.title)}</h4>")
            out.append(_rows_table(list(f.rows)))
    else:
        out.append('<p class="lead">None: every judged measurement agrees with the text, holds by '
                   "construction, or cannot decide.</p>")
    undecided = o.undecided()
    if undecided:
        out.append("<h3>What the measurements cannot decide</h3>"
                   f'<p class="lead"><b>{len(undecided)}</b> row(s) are inconclusive: a value censored at a '
                   "budget or grid edge, too few seeds, or not like for like with the text.</p>")
        out.append(_rows_table(undecided, with_reason=True))
    own = o.own()
    if own:
        out.append("<h3>attnlab's own statements</h3>"
                   f'<p class="lead"><b>{len(own)}</b> row(s) test statements of attnlab beyond the text (a '
                   "conjecture, a corrected theorem, another paper's result, a property of the optimiser): they "
                   "hold, are refuted or cannot be decided, and never count as reproductions.</p>")
        out.append(_own_table(own))
    failures = o.failures()
    if failures:
        out.append("<h3>Failures of attnlab's own checks</h3>"
                   f'<p class="lead"><b>{len(failures)}</b> row(s) break an invariant of attnlab itself: a bug.</p>')
        out.append(_rows_table(failures, with_reason=True))
    out.append("</section>")
    return "".join(out)


def _own_table(rows: list[Row]) -> str:
    body = [[f'<code class="id">{escape(_short(r.source))}</code>', _txt(r.quantity), _txt(r.measured),
             _txt(r.criterion), _pill(r.verdict) + "".join(f'<div class="why">{_txt(n)}</div>'
                                                           for n in row_notes(r)),
             _txt(r.detail)] for r in rows]
    return _table(["where measured", "statement", "measured", "required", "verdict", "detail"], body,
                  ["", "", "num", "num", "", "detail"])


def _errata(errata: list[dict]) -> str:
    rows = [[_txt(c) for c in r] for r in table_rows(errata)]
    return ("<h2>Errors in the text</h2><p class=\"lead\">Every place where the text is wrong or loose, whose "
            "error it is (the text, or the source it copies), the witness, and whether the conclusion survives "
            "(<code>attnlab errata</code> lists them).</p>"
            + _table(list(ERRATA_COLUMNS), rows, ["", "", "", "", "", "detail", "", ""]))


def _claims(claims: list[StoredClaim]) -> str:
    rows = []
    for c in claims:
        r = claim_row(c)
        rows.append([f'<code class="id">{escape(_short(c.id))}</code>', _txt(c.where), _txt(c.statement),
                     _txt(fmt_paper(c.paper_value)), _txt(r.measured), _txt(r.criterion), _pill(r.verdict) + "".join(
                         f'<div class="why">{_txt(n)}</div>' for n in row_notes(r))])
    return ("<h2>Claims</h2><p class=\"lead\">Fast checks of the paper's statements "
            "(<code>attnlab verify</code>), paper value next to the measured number.</p>"
            + _table(["claim", "where", "statement", "paper", "measured", "required", "verdict"], rows,
                     ["", "detail", "", "paper", "num", "num", ""]))


def _where(c: Check) -> str:
    """Where the text states a row's statement, and the ledger entry it is anchored to."""
    return _txt(c.where) + (f'<div class="why"><code>{escape(c.anchor)}</code></div>' if c.anchor else "")


def _experiment(e: StoredExperiment, figures: dict[tuple[str, str], RenderedFigure]) -> str:
    x = e.entry
    status = experiment_status(e)
    out = [f'<section><h2><span class="id">{escape(x.id)}</span> {_pill(status)}</h2>',
           f'<p class="lead">{escape(x.description)} · {escape(fmt_value(x.seconds))} s</p>']
    if e.result is None:
        out.append(f"<pre>{escape(x.error or '')}</pre></section>")
        return "".join(out)
    res: ExperimentResult = e.result
    if res.summary:
        out.append(_table(
            ["quantity", "the text", "measured", "required", "verdict", "where in the text", "detail"],
            [[_txt(c.quantity), _txt(fmt_paper(c.paper_value)), _txt(fmt_measured_cell(c)), _txt(c.criterion),
              _pill(c.verdict) + "".join(f'<div class="why">{_txt(n)}</div>' for n in verdict_notes(c)),
              _where(c), _txt(c.detail)] for c in res.summary],
            ["", "paper", "num", "num", "", "", "detail"]))
    if res.deviations:
        out.append("<h3>Deviations from the text's protocol</h3><p class=\"lead\">Where this experiment departs "
                   "from the text's setup, and why. A row touched by one is reproduced or differs only with a "
                   "control run without it; otherwise it is inconclusive.</p>")
        out.append(_table(list(DEVIATION_COLUMNS), [[_txt(c) for c in r] for r in deviation_rows(res.deviations)],
                          ["", "", "detail", "detail", "detail"]))
    elif res.summary and res.deviations is not None:
        out.append('<p class="lead">Deviations from the text\'s protocol: none.</p>')
    for t in res.tables:
        fmts = t.formats or [None] * len(t.columns)
        cls = ["num" if f in ("count", "percent", "float", "int") else "" for f in fmts]
        out.append(f"<h3>{escape(t.title)}</h3>")
        out.append(_table(list(t.columns), [[_txt(fmt_value(v, f)) for v, f in zip(row, fmts)] for row in t.rows],
                          cls))
    specs = [s for s in res.figures if (x.id, s.file) in figures]
    figs = [figures[(x.id, s.file)] for s in specs]
    if figs:
        out.append('<h3>Figures</h3><div class="figs">')
        for s, f in zip(specs, figs):
            wide = ' class="wide"' if spans_row(s) else ""
            out.append(f'<figure{wide}><div class="fig-scroll">{_img(f)}</div>'
                       f"<figcaption><b>{escape(f.title)}.</b> {escape(f.caption)} "
                       f"<code>figures/{escape(f.path.name)}</code></figcaption></figure>")
        out.append("</div>")
    if res.interactive:
        out.append("<h3>Interactive view</h3>")
        slug = re.sub(r"[^A-Za-z0-9_-]", "-", x.id)
        out += [viewer_fragment(b, uid=f"attnlab-viewer-{slug}-{i}") for i, b in enumerate(res.interactive)]
    out += [f'<div class="note">{escape(n)}</div>' for n in res.notes]
    if not (res.summary or res.tables or res.figures or res.interactive):
        out.append(f"<pre>{escape(json.dumps(x.results or {}, indent=2)[:4000])}</pre>")
    out.append(f"<details><summary>config</summary><pre>{escape(json.dumps(x.config, indent=2))}"
               "</pre></details></section>")
    return "".join(out)
