"""Check that a report.html fits the page in headless Chromium: no table or figure cut at the edge.

    python scripts/check_report_layout.py RUN_DIR/report.html [--width 1400]

The report is copied into a temporary directory with a small measuring script added to the
copy (the report itself is left as it is and gains no reference to anything). Chromium opens
the copy with a fresh profile and every network feature off, at a window ``--width`` pixels
wide; after the page has loaded and its own scripts have run, the measuring script records

* ``page``: the document is wider than the viewport (the page scrolls sideways);
* ``table``: a table wider than its container (a scrollbar inside ``.table-wrap`` counts: the
  table has to fit without horizontal scrolling), or reaching past the viewport;
* ``cell``: a table cell whose content is wider than the cell (drawn over its neighbour);
* ``split-number``: a number in a table cell broken across two lines;
* ``figure``: an ``img``, ``canvas``, ``svg`` or ``figure`` wider than its container or the
  viewport;
* ``scroll``: any other box that scrolls sideways or clips (its content is cut at its edge);
* ``console``: an uncaught script error or a ``console.error`` message;

each with the heading, table title or figure caption it belongs to and by how many pixels it
is too wide. The results come back through ``--dump-dom``; console errors also through
Chromium's log (``--enable-logging=stderr``), which sees errors the page's own handlers do not.

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
  // inside a box that scrolls or clips sideways, what counts is that box ("scroll" below)
  function clipped(el) {
    for (var p = el.parentElement; p && p !== document.body; p = p.parentElement)
      if (getComputedStyle(p).overflowX !== "visible") return true;
    return false;
  }
  function measure() {
    var out = {viewport: document.documentElement.clientWidth, inner: window.innerWidth,
               scroll_width: document.documentElement.scrollWidth, offenders: [],
               console: window.__attnlabLayoutErrors || [], tables: 0, figures: 0, cells: 0};
    var vw = out.viewport, seen = new Set();
    function add(kind, el, over, detail) {
      out.offenders.push({kind: kind, where: el === document.body ? "the page" : where(el), px: Math.round(over),
                          detail: detail || ""});
    }
    if (out.scroll_width > vw + TOL)
      add("page", document.body, out.scroll_width - vw, out.scroll_width + " px wide in a " + vw + " px viewport");
    document.querySelectorAll("table").forEach(function (t) {
      out.tables++;
      var box = t.parentElement, r = t.getBoundingClientRect();
      var over = Math.max(t.scrollWidth, r.width) - box.clientWidth;
      var past = r.right - vw;
      // a table in its own scrolling box (.table-wrap): the box's scrollbar counts
      if (getComputedStyle(box).overflowX !== "visible" && box.scrollWidth > box.clientWidth + TOL)
        over = Math.max(over, box.scrollWidth - box.clientWidth);
      if (over > TOL || past > TOL) {
        seen.add(box);
        add("table", t, Math.max(over, past), t.rows.length ? t.rows[0].cells.length + " columns, " +
            Math.round(r.width) + " px in " + box.clientWidth + " px" : "");
      }
      t.querySelectorAll("th, td").forEach(function (c) {
        out.cells++;
        if (c.scrollWidth > c.clientWidth + TOL)
          add("cell", t, c.scrollWidth - c.clientWidth, "cell " + JSON.stringify(text(c).slice(0, 60)));
      });
    });
    // a number broken across lines: the client rects of its characters lie on different lines
    // (a dash after a letter, digit or bracket is a range or a name, "2-3", "GPT-2", not a sign)
    var NUM = /(?:(?<![\\w.)\\]])[-+\\u2212])?(?:\\d[\\d,]*\\.?\\d*|\\.\\d+)(?:[eE][-+\\u2212]?\\d+)?%?/g;
    var walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT, {acceptNode: function (n) {
      return n.parentElement && n.parentElement.closest("td, th") ? NodeFilter.FILTER_ACCEPT : NodeFilter.FILTER_SKIP;
    }});
    var range = document.createRange(), node;
    while ((node = walker.nextNode())) {
      var m, s = node.data;
      NUM.lastIndex = 0;
      while ((m = NUM.exec(s))) {
        if (m[0].length < 2) continue;
        range.setStart(node, m.index); range.setEnd(node, m.index + m[0].length);
        var tops = new Set();
        Array.prototype.forEach.call(range.getClientRects(), function (q) {
          if (q.width > 0) tops.add(Math.round(q.top));
        });
        if (tops.size > 1) add("split-number", node.parentElement, 0, JSON.stringify(m[0]) + " in " +
                               JSON.stringify(s.slice(Math.max(0, m.index - 30), m.index + m[0].length + 10)));
      }
    }
    document.querySelectorAll("img, canvas, svg, figure").forEach(function (f) {
      out.figures++;
      var box = f.parentElement, r = f.getBoundingClientRect();
      if (!box || r.width === 0) return;
      var cs = getComputedStyle(box);
      var inner = box.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
      var over = Math.max(r.width - inner, r.right - vw);
      if (over > TOL && !clipped(f))
        add("figure", f, over, f.tagName.toLowerCase() + " " + Math.round(r.width) + " px in " + Math.round(inner) + " px");
    });
    document.querySelectorAll("body *").forEach(function (el) {
      if (seen.has(el) || el.tagName === "TABLE") return;
      var ox = getComputedStyle(el).overflowX;
      if (ox !== "visible" && el.scrollWidth > el.clientWidth + TOL && el.clientWidth > 0) {
        var cls = (el.getAttribute("class") || "").split(" ")[0];
        add("scroll", el, el.scrollWidth - el.clientWidth, el.tagName.toLowerCase() + (cls ? "." + cls : "") +
            (ox === "auto" || ox === "scroll" ? " scrolls sideways" : " cuts its content"));
      }
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
    """What the measuring script found in one report at one window width."""

    width: int
    viewport: int
    scroll_width: int
    tables: int
    figures: int
    cells: int
    offenders: list[Offender] = field(default_factory=list)
    console: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.offenders and not self.console

    def lines(self) -> list[str]:
        return [str(o) for o in self.offenders] + [f"console: {c}" for c in self.console]


def chromium_binary() -> str | None:
    if os.access(CHROMIUM, os.X_OK):
        return CHROMIUM
    return shutil.which("chromium") or shutil.which("chromium-browser")


def instrumented(page: str) -> str:
    """``page`` with the two measuring scripts added: one first in <head>, one last in <body>."""
    head = re.search(r"<head[^>]*>", page, re.I)
    page = page[: head.end()] + _PROBE_HEAD + page[head.end():] if head else _PROBE_HEAD + page
    end = page.lower().rfind("</body>")
    return page[:end] + _PROBE_BODY + page[end:] if end >= 0 else page + _PROBE_BODY


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


def check_layout(html: str | os.PathLike, *, width: int = 1400, height: int = 1000, timeout: float = 180) -> Layout:
    """Open ``html`` in headless Chromium ``width`` px wide and measure what overflows (module doc)."""
    binary = chromium_binary()
    if binary is None:
        raise FileNotFoundError(f"Chromium not found at {CHROMIUM}; install it with `apt-get install chromium`")
    html = Path(html).resolve()
    if not html.is_file():
        raise FileNotFoundError(f"{html} does not exist")
    with tempfile.TemporaryDirectory(prefix="attnlab-layout-") as tmp:
        page = Path(tmp) / "page.html"
        page.write_text(instrumented(html.read_text(encoding="utf-8")), encoding="utf-8")
        profile = Path(tmp) / "profile"
        cmd = [
            binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--enable-logging=stderr", "--v=0", f"--user-data-dir={profile}",
            f"--window-size={width},{height}", "--virtual-time-budget=5000", "--dump-dom", page.as_uri(),
        ]
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
                  figures=d["figures"], cells=d["cells"], offenders=[Offender(**o) for o in d["offenders"]],
                  console=console)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("html", type=Path, nargs="+")
    ap.add_argument("--width", type=int, default=1400)
    ap.add_argument("--height", type=int, default=1000)
    args = ap.parse_args(argv)
    bad = 0
    for path in args.html:
        try:
            lay = check_layout(path, width=args.width, height=args.height)
        except (FileNotFoundError, RuntimeError, subprocess.TimeoutExpired) as e:
            print(f"check_report_layout: error: {e}", file=sys.stderr)
            return 2
        head = (f"{path}: {lay.tables} tables, {lay.figures} figures at {lay.width} px "
                f"(viewport {lay.viewport} px)")
        if lay.ok:
            print(f"{head}: fits")
        else:
            bad += 1
            print(f"{head}: {len(lay.offenders)} overflow(s), {len(lay.console)} console error(s)")
            for line in lay.lines():
                print(f"  {line}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
