"""Check that a report.html fits the page in headless Chromium, and prints whole.

    python scripts/check_report_layout.py RUN_DIR/report.html [--width 1400] [--print] [--scrolling]

The report is copied into a temporary directory with a small measuring script added to the
copy (the report itself is left as it is and gains no reference to anything). Chromium opens
the copy with a fresh profile and every network feature off, at a window ``--width`` pixels
wide; after the page has loaded and its own scripts have run, the measuring script records

* ``page``: the document is wider than the viewport (the page scrolls sideways);
* ``table``: a table wider than its box where that box does not scroll, or scrolls with no cue,
  or reaching past the viewport;
* ``cell``: a table cell whose content is wider than the cell (drawn over its neighbour);
* ``split-number`` / ``split-id``: a number in a table cell, or an id (``code.id``), broken across
  two lines;
* ``figure``: an ``img``, ``canvas``, ``svg`` or ``figure`` wider than its container or the
  viewport, outside a box that scrolls;
* ``small-text``: text under 9 px: the page's (computed font size), or a figure's, whose
  ``data-text-px`` gives its smallest text in the image's own pixels, scaled as the image is shown;
* ``scroll``: any other box that scrolls sideways with no cue, or clips (its content is cut);
* ``console``: an uncaught script error or a ``console.error`` message;

each with the heading, table title or figure caption it belongs to and by how many pixels it
is too wide. A box that scrolls sideways with a cue is allowed on screen and listed apart
(``--scrolling``): the cue is shading at its edges that moves with the content (background
layers attached ``scroll`` under covers attached ``local``, as report.html draws them) or an
overlay drawn by its ``::before``/``::after``.

``--print`` checks the page as printed: its print rules apply (``@media print`` read as
``@media all``) in a viewport of :data:`PRINT_WIDTH` px with no scrollbar; then every box
that scrolls, sideways or down, is cut (cue or not), content of a closed ``<details>`` that
is not shown is ``hidden``, and figure text is not judged (a figure shrinks to the paper).

The results come back through ``--dump-dom``; console errors also through Chromium's log
(``--enable-logging=stderr``), which sees errors the page's own handlers do not.

Prints one line per offender and exits 1 if there is any, 0 if the page fits; 2 with one line
on stderr if the report or Chromium is missing or Chromium fails.
"""

from __future__ import annotations

import argparse
import html as htmllib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
RESULT_ID = "attnlab-layout-result"
MIN_TEXT_PX = 9.0  # the smallest text a reader is asked to read, in CSS pixels
# A4 (210 mm = 794 CSS px) less Chromium's default margins (about 1 cm each side): the width a page prints at
PRINT_WIDTH = 718

# Runs first in <head>: records uncaught errors and console.error calls of the page's scripts.
_PROBE_HEAD = """<script>(function () {
  var errs = window.__attnlabLayoutErrors = [];
  window.addEventListener("error", function (ev) {
    var msg = ev.message || (ev.error && String(ev.error)) || "error";
    errs.push((/^Uncaught/.test(msg) ? "" : "Uncaught ") + msg +
              (ev.filename ? " (" + ev.filename.split("/").pop() + ":" + ev.lineno + ")" : ""));
  });
  window.addEventListener("unhandledrejection", function (ev) {
    errs.push("Uncaught (in promise) " + String(ev.reason));
  });
  var orig = console.error;
  console.error = function () {
    errs.push("console.error: " + Array.prototype.map.call(arguments, String).join(" "));
    return orig.apply(console, arguments);
  };
})();</script>"""

# Runs after load (and after the page's own load handlers): measures and writes JSON into the DOM.
_PROBE_BODY = """<script>(function () {
  var TOL = 1;  // px: sub-pixel rounding is not an overflow
  var MIN_TEXT = MIN_TEXT_PX, PRINT = PRINT_MODE;
  function text(el) { return el ? el.textContent.replace(/\\s+/g, " ").trim() : ""; }
  function where(el) {
    var parts = [], sec = el.closest("section"), h2 = sec && sec.querySelector("h2");
    if (h2) parts.push(text(h2.querySelector(".id") || h2));
    // the nearest heading before el inside its section (a table's title, "Figures", ...)
    var n = el.closest(".table-wrap, figure, .figs, .attnlab-viewer") || el;
    for (var p = n; p && p !== sec; p = p.parentElement) {
      var s = p.previousElementSibling, found = false;
      while (s) {
        if (/^H[1-4]$/.test(s.tagName)) { if (!h2 || s !== h2) parts.push(text(s)); found = true; break; }
        s = s.previousElementSibling;
      }
      if (found) break;
    }
    var fig = el.closest("figure"), cap = fig && fig.querySelector("figcaption b");
    if (cap) parts.push(text(cap).replace(/\\.$/, ""));
    return parts.join(" / ").slice(0, 200) || el.tagName.toLowerCase();
  }
  function scrolls(el) { var o = getComputedStyle(el).overflowX; return o === "auto" || o === "scroll"; }
  // inside a box that scrolls or clips sideways, what counts is that box ("scroll" below)
  function clipped(el) {
    for (var p = el.parentElement; p && p !== document.body; p = p.parentElement)
      if (getComputedStyle(p).overflowX !== "visible") return true;
    return false;
  }
  // a cue that the box scrolls: shadows fixed to its edges under covers that move with the content
  // (background layers attached "scroll" and "local"), or an overlay drawn by ::before/::after
  function cue(el) {
    var cs = getComputedStyle(el), att = cs.backgroundAttachment.split(/,\\s*/);
    if (/gradient/.test(cs.backgroundImage) && att.indexOf("local") >= 0 && att.indexOf("scroll") >= 0)
      return "edge shadows";
    for (var ps of ["::before", "::after"]) {
      var q = getComputedStyle(el, ps);
      if (q.content !== "none" && q.display !== "none" && parseFloat(q.opacity) > 0 &&
          (q.backgroundImage !== "none" || q.content.length > 2)) return "overlay " + ps;
    }
    return "";
  }
  function label(el) {
    var cls = (el.getAttribute("class") || "").split(" ")[0];
    return el.tagName.toLowerCase() + (cls ? "." + cls : "");
  }
  function shown(el) {
    return el.getClientRects().length > 0 && getComputedStyle(el).visibility === "visible" &&
           (!el.checkVisibility || el.checkVisibility());  // false under content-visibility:hidden (closed <details>)
  }
  function measure() {
    var out = {viewport: document.documentElement.clientWidth, inner: window.innerWidth,
               scroll_width: document.documentElement.scrollWidth, offenders: [], scrolling: [],
               console: window.__attnlabLayoutErrors || [], tables: 0, figures: 0, cells: 0, texts: 0};
    var vw = out.viewport, seen = new Set();
    function add(kind, el, over, detail) {
      out.offenders.push({kind: kind, where: el === document.body ? "the page" : where(el), px: Math.round(over),
                          detail: detail || ""});
    }
    // a box whose content is wider than it: in print a cut; on screen allowed where it scrolls with a cue
    function sideways(box, kind, over, detail) {
      var c = scrolls(box) && !PRINT ? cue(box) : "";
      if (c) out.scrolling.push(where(box) + ": " + label(box) + " scrolls " + Math.round(over) + " px (" + c + ")");
      else add(kind, box, over, detail + (PRINT ? ": cut on paper" : scrolls(box) ? ": scrolls sideways with no cue"
                                                                                   : ": cuts its content"));
    }
    if (out.scroll_width > vw + TOL)
      add("page", document.body, out.scroll_width - vw, out.scroll_width + " px wide in a " + vw + " px viewport");
    document.querySelectorAll("table").forEach(function (t) {
      out.tables++;
      var box = t.parentElement, r = t.getBoundingClientRect(), br = box.getBoundingClientRect();
      var cols = t.rows.length ? t.rows[0].cells.length + " columns, " : "";
      var desc = cols + Math.round(r.width) + " px in " + box.clientWidth + " px";
      if (getComputedStyle(box).overflowX !== "visible") {  // its own box (.table-wrap): that box scrolls or cuts
        seen.add(box);
        if (box.scrollWidth > box.clientWidth + TOL) sideways(box, "table", box.scrollWidth - box.clientWidth, desc);
        if (br.right - vw > TOL) add("table", t, br.right - vw, "its box reaches past the viewport");
      } else {
        var over = Math.max(Math.max(t.scrollWidth, r.width) - box.clientWidth, clipped(t) ? 0 : r.right - vw);
        if (over > TOL) add("table", t, over, desc);
      }
      t.querySelectorAll("th, td").forEach(function (c) {
        out.cells++;
        if (c.scrollWidth > c.clientWidth + TOL)
          add("cell", t, c.scrollWidth - c.clientWidth, "cell " + JSON.stringify(text(c).slice(0, 60)));
      });
    });
    // a number broken across lines: the client rects of its characters lie on different lines
    // (a dash after a letter, digit or bracket is a range or a name, "2-3", "GPT-2", not a sign;
    // digits after a letter or underscore belong to a name, "X_1")
    var NUM = /(?<![\\w.)\\]])[-+\\u2212]?(?:\\d(?:[\\d,]*\\d)?\\.?\\d*|\\.\\d+)(?:[eE][-+\\u2212]?\\d+)?%?/g;
    var walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT, {acceptNode: function (n) {
      return n.parentElement && n.parentElement.closest("td, th") ? NodeFilter.FILTER_ACCEPT : NodeFilter.FILTER_SKIP;
    }});
    var range = document.createRange(), node;
    function lines(node, start, end) {
      range.setStart(node, start); range.setEnd(node, end);
      var tops = new Set();
      Array.prototype.forEach.call(range.getClientRects(), function (q) { if (q.width > 0) tops.add(Math.round(q.top)); });
      return tops.size;
    }
    while ((node = walker.nextNode())) {
      var m, s = node.data;
      NUM.lastIndex = 0;
      while ((m = NUM.exec(s))) {
        if (m[0].length < 2) continue;
        if (lines(node, m.index, m.index + m[0].length) > 1)
          add("split-number", node.parentElement, 0, JSON.stringify(m[0]) + " in " +
              JSON.stringify(s.slice(Math.max(0, m.index - 30), m.index + m[0].length + 10)));
      }
    }
    // an id (code.id) broken across lines
    document.querySelectorAll("code.id").forEach(function (c) {
      if (c.firstChild && c.firstChild.nodeType === 3 && shown(c) && lines(c.firstChild, 0, c.firstChild.data.length) > 1)
        add("split-id", c, 0, JSON.stringify(text(c)));
    });
    document.querySelectorAll("img, canvas, svg, figure").forEach(function (f) {
      out.figures++;
      var box = f.parentElement, r = f.getBoundingClientRect();
      if (!box || r.width === 0) return;
      var cs = getComputedStyle(box);
      var inner = box.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
      var over = Math.max(r.width - inner, r.right - vw);
      if (over > TOL && !clipped(f))
        add("figure", f, over, f.tagName.toLowerCase() + " " + Math.round(r.width) + " px in " + Math.round(inner) + " px");
      // the smallest text drawn in the image (data-text-px, in the image's own pixels) as shown
      var tp = parseFloat(f.getAttribute("data-text-px"));
      if (f.tagName === "IMG" && tp > 0 && f.naturalWidth > 0 && !PRINT) {
        var px = tp * r.width / f.naturalWidth;
        if (px < MIN_TEXT - 0.05)
          add("small-text", f, 0, "figure text " + px.toFixed(1) + " px (" + Math.round(r.width) + " of " +
              f.naturalWidth + " px shown)");
      }
    });
    // text of the page under MIN_TEXT px, once per element
    var small = new Set(), tw = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT), t;
    while ((t = tw.nextNode())) {
      var el = t.parentElement;
      if (!el || !t.data.trim() || small.has(el) || el.closest("script, style, #RESULT_ID")) continue;
      out.texts++;
      var fs = parseFloat(getComputedStyle(el).fontSize);
      if (fs < MIN_TEXT - 0.05 && shown(el)) {
        small.add(el);
        add("small-text", el, 0, label(el) + " " + fs.toFixed(1) + " px: " + JSON.stringify(text(el).slice(0, 40)));
      }
    }
    document.querySelectorAll("body *").forEach(function (el) {
      if (seen.has(el) || el.tagName === "TABLE" || el.clientWidth === 0) return;
      var cs = getComputedStyle(el);
      if (cs.overflowX !== "visible" && el.scrollWidth > el.clientWidth + TOL)
        sideways(el, "scroll", el.scrollWidth - el.clientWidth, label(el));
      // on paper a box that scrolls down is cut too
      if (PRINT && cs.overflowY !== "visible" && el.scrollHeight > el.clientHeight + TOL)
        add("scroll", el, el.scrollHeight - el.clientHeight, label(el) + " scrolls down: cut on paper");
    });
    if (PRINT)  // closed <details> print their summary only
      document.querySelectorAll("details:not([open]) > :not(summary)").forEach(function (el) {
        if (!shown(el)) add("hidden", el, 0, label(el) + " in a closed <details> is not printed");
      });
    var pre = document.createElement("pre");
    pre.id = "RESULT_ID"; pre.hidden = true;
    pre.textContent = JSON.stringify(out);
    document.body.appendChild(pre);
  }
  window.addEventListener("load", function () { setTimeout(measure, 50); });
})();</script>""".replace("RESULT_ID", RESULT_ID)


@dataclass
class Offender:
    """One thing that does not fit: its kind (see the module doc), where it is on the page,
    how many pixels too wide (0 where the measure is not a width), and what was measured."""

    kind: str
    where: str
    px: int
    detail: str = ""

    def __str__(self) -> str:
        by = f" by {self.px} px" if self.px else ""
        return f"{self.kind}: {self.where}{by}" + (f" ({self.detail})" if self.detail else "")


@dataclass
class Layout:
    """What the measuring script found in one report at one window width (``printed``: as printed):
    the offenders, the console errors, and each box that scrolls sideways with a cue (``scrolling``,
    allowed on screen)."""

    width: int
    viewport: int
    scroll_width: int
    tables: int
    figures: int
    cells: int
    texts: int = 0
    offenders: list[Offender] = field(default_factory=list)
    console: list[str] = field(default_factory=list)
    scrolling: list[str] = field(default_factory=list)
    printed: bool = False

    @property
    def ok(self) -> bool:
        return not self.offenders and not self.console

    def lines(self) -> list[str]:
        return [str(o) for o in self.offenders] + [f"console: {c}" for c in self.console]


def chromium_binary() -> str | None:
    if os.access(CHROMIUM, os.X_OK):
        return CHROMIUM
    return shutil.which("chromium") or shutil.which("chromium-browser")


def instrumented(page: str, *, printed: bool = False, min_text: float = MIN_TEXT_PX) -> str:
    """``page`` with the two measuring scripts added: one first in <head>, one last in <body>.

    ``printed``: the page's print rules (``@media print``) apply as they do on paper (rewritten to
    ``@media all``; they come after the screen rules they override, so the cascade is the one of
    printing), and any box that scrolls, sideways or down, counts as cut."""
    if printed:
        page = re.sub(r"@media\s+print\b", "@media all", page)
    body = _PROBE_BODY.replace("MIN_TEXT_PX", repr(float(min_text))).replace("PRINT_MODE", "true" if printed else "false")
    head = re.search(r"<head[^>]*>", page, re.I)
    page = page[: head.end()] + _PROBE_HEAD + page[head.end():] if head else _PROBE_HEAD + page
    end = page.lower().rfind("</body>")
    return page[:end] + body + page[end:] if end >= 0 else page + body


def _console_errors(log: str) -> list[str]:
    """Uncaught errors and console.error messages from Chromium's log (``--enable-logging=stderr``)."""
    out = []
    for line in log.splitlines():
        if "CONSOLE" not in line and "Uncaught" not in line:
            continue
        m = re.search(r'"(.*)"', line)
        msg = m.group(1) if m else line.strip()
        if "Uncaught" in line or ":ERROR:CONSOLE" in line or "console.error" in line:
            out.append(msg)
    return out


def check_layout(html: str | os.PathLike, *, width: int = 1400, height: int = 1000, timeout: float = 180,
                 printed: bool = False) -> Layout:
    """Open ``html`` in headless Chromium ``width`` px wide and measure what overflows (module doc);
    ``printed``: as printed, :data:`PRINT_WIDTH` px wide with no scrollbar (``width`` is ignored)."""
    binary = chromium_binary()
    if binary is None:
        raise FileNotFoundError(f"Chromium not found at {CHROMIUM}; install it with `apt-get install chromium`")
    html = Path(html).resolve()
    if not html.is_file():
        raise FileNotFoundError(f"{html} does not exist")
    with tempfile.TemporaryDirectory(prefix="attnlab-layout-") as tmp:
        page = Path(tmp) / "page.html"
        page.write_text(instrumented(html.read_text(encoding="utf-8"), printed=printed), encoding="utf-8")
        width = PRINT_WIDTH if printed else width
        profile = Path(tmp) / "profile"
        cmd = [
            binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--enable-logging=stderr", "--v=0", f"--user-data-dir={profile}",
            f"--window-size={width},{height}", "--virtual-time-budget=5000", "--dump-dom", page.as_uri(),
        ]
        if printed:  # paper has no scrollbar: the viewport is the window
            cmd.insert(1, "--hide-scrollbars")
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    m = re.search(rf'<pre id="{RESULT_ID}"[^>]*>(.*?)</pre>', proc.stdout, re.S)
    if proc.returncode != 0 or m is None:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        raise RuntimeError(f"Chromium did not measure {html.name} (exit {proc.returncode}): {tail[0]}")
    d = json.loads(htmllib.unescape(m.group(1)))
    console = list(d["console"])
    for msg in _console_errors(proc.stderr):  # errors the page's handlers did not see
        if not any(msg in c or c.endswith(msg) for c in console):
            console.append(msg)
    return Layout(width=width, viewport=d["viewport"], scroll_width=d["scroll_width"], tables=d["tables"],
                  figures=d["figures"], cells=d["cells"], texts=d["texts"],
                  offenders=[Offender(**o) for o in d["offenders"]], console=console, scrolling=d["scrolling"],
                  printed=printed)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("html", type=Path, nargs="+")
    ap.add_argument("--width", type=int, default=1400)
    ap.add_argument("--height", type=int, default=1000)
    ap.add_argument("--print", dest="printed", action="store_true",
                    help=f"check the page as printed ({PRINT_WIDTH} px wide, its print rules applied)")
    ap.add_argument("--scrolling", action="store_true", help="also list the boxes that scroll with a cue")
    args = ap.parse_args(argv)
    bad = 0
    for path in args.html:
        try:
            lay = check_layout(path, width=args.width, height=args.height, printed=args.printed)
        except (FileNotFoundError, RuntimeError, subprocess.TimeoutExpired) as e:
            print(f"check_report_layout: error: {e}", file=sys.stderr)
            return 2
        head = (f"{path}: {lay.tables} tables, {lay.figures} figures " + ("as printed" if lay.printed else "at")
                + f" {lay.width} px (viewport {lay.viewport} px)")
        if lay.ok:
            print(f"{head}: fits" + (f", {len(lay.scrolling)} box(es) scroll with a cue" if lay.scrolling else ""))
        else:
            bad += 1
            print(f"{head}: {len(lay.offenders)} overflow(s), {len(lay.console)} console error(s)")
            for line in lay.lines():
                print(f"  {line}")
        if args.scrolling:
            for line in lay.scrolling:
                print(f"  scrolls with a cue: {line}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
