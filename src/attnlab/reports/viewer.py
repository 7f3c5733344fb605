"""An offline, interactive view of attention maps: one self-contained HTML fragment.

The viewer shows the attention weights A (L, H, n, n) of one input (rows are queries,
columns are keys) with its tokens:

* a layer and a head picked with two select boxes, or by clicking one of the small
  thumbnails of the layer x head grid (every map of the model at a glance);
* the picked map drawn on a canvas, one cell per (query, key); hovering a cell reads
  out the query, the key and the weight, clicking it picks that query;
* a text view: the tokens as queries on the left and as keys on the right, one line
  from the picked query to every key it attends to, its opacity and width growing
  with the weight, each key token shaded by its weight with the weight written
  beside it (three decimals). Hovering a query token previews its row, clicking
  picks it; the arrow keys move the query (up, down) and the head (left, right);
* a scale switch: weights from 0 to 1, or relative to the map's (and the row's)
  largest weight, which shows the structure of broad heads;
* optionally, per-head scores (``scores``: name -> an (L, H) array, one number per head,
  e.g. a head's entropy or its attention on the first token): a small table beside the
  map gives the picked head's value of each score and its rank among all H L heads of the
  model (1 = the largest value; heads without a value, NaN, are not ranked), a score's
  description (``score_descriptions``) as the tooltip of its name.

Everything is inline (one ``<style>``, the data as a JSON ``<script>``, the code as
an inline ``<script>``); nothing is fetched from anywhere, so the fragment works in a
file opened years later, in a notebook, or pasted into a report. Weights are stored
in thousandths (``round(1000 * w)``, a map as one string of
comma-separated integers), so every shown weight is the true one to 5e-4; scores to four
significant digits (``float(f"{s:.4g}")``, NaN as null), so every shown score is the true one
to 5e-4 of its size.
At most ``max_tokens`` tokens (the first ones) and as many maps as keep the data under
``max_bytes`` are kept (whole layers, evenly spaced, first and last included); the
fragment says what was left out.

The initial selection comes from the page's URL fragment:
``#layer=3&head=5&query=7`` picks layer 3, head 5 and query 7 of the first viewer on the
page; ``#v1.layer=2`` (the viewer's position on the page, from 0) or ``#ID.layer=2``
(the viewer's element id) address any viewer. Layers and heads are the model's numbers
(from 0), queries are token positions (from 0).

The current selection is written into the DOM, so a script (or a test reading
``chromium --dump-dom``) can read it: the element ``ID-state`` carries ``data-layer``,
``data-head``, ``data-query``, ``data-query-token``, ``data-weights`` (the shown
row's weights, three decimals, comma-separated), ``data-scores`` (the picked head's scores,
``name=value;name=value``, the stored value, ``nan`` for none) and ``data-score-ranks``
(``name=rank/ranked;...``, ``-`` for an unranked head), and every key token of the text view
a ``data-weight``.

    from attnlab.reports import AttentionView
    out = pm(input_ids)                                  # out.attentions: L x (B, H, n, n)
    view = AttentionView.from_output(out, tokens)        # tokens: the n token strings
    view = AttentionView(maps, tokens, scores={"entropy": H_lh},       # H_lh: (L, H), one per head
                         score_descriptions={"entropy": "mean row entropy (nats)"})
    view                                                 # in Jupyter: the viewer
    view.save("attention.html")                          # a standalone page
"""

from __future__ import annotations

import json
import os
import re
import secrets
from html import escape
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from attnlab.errors import ConfigError
from attnlab.results import VIEWER_KIND, check_viewer_data

MAX_TOKENS = 64  # the first 64 tokens of the input are shown
MAX_BYTES = 2_000_000  # the embedded maps stay under ~2 MB
SCALE = 1000  # weights are stored in thousandths
SCORE_DIGITS = 4  # scores are stored to four significant digits
SCORE_NAME_FORBIDDEN = (";", "=")  # they separate the scores in the DOM state
KIND = VIEWER_KIND  # the "kind" of a stored block
_ID = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")


# ---- the data ------------------------------------------------------------------------------
def _as_array(maps: Any) -> np.ndarray:
    if hasattr(maps, "detach"):  # a torch tensor, on any device and in any dtype
        import torch

        maps = maps.detach().to("cpu", torch.float64).numpy()
    a = np.asarray(maps, dtype=np.float64)
    while a.ndim < 4:  # (n, n) or (H, n, n): one layer, one head
        a = a[None]
    if a.ndim != 4 or a.shape[-1] != a.shape[-2]:
        raise ConfigError(f"attention maps must be (L, H, n, n) with square maps; got shape {tuple(a.shape)}")
    if a.size == 0:
        raise ConfigError(f"attention maps are empty (shape {tuple(a.shape)})")
    if not np.isfinite(a).all():
        raise ConfigError("attention maps hold NaN or infinite weights")
    return a


def _labels(given: Sequence[Any] | None, count: int, what: str) -> list[str]:
    if given is None:
        return [str(i) for i in range(count)]
    out = [str(x) for x in given]
    if len(out) != count:
        raise ConfigError(f"{len(out)} {what} labels for {count} {what}s")
    return out


def _score_arrays(scores: Mapping[str, Any] | None, descriptions: Mapping[str, str] | None,
                  L: int, H: int) -> dict[str, np.ndarray]:
    """The per-head scores as float64 (L, H) arrays (a score of fewer axes, like maps of one layer, gets
    leading axes of size 1); a one-line ConfigError for anything the viewer cannot show."""
    if scores is None:
        if descriptions:
            raise ConfigError("score_descriptions given without scores: pass scores={name: (L, H) array}")
        return {}
    if not isinstance(scores, Mapping):
        raise ConfigError(f"scores must map a name to an (L, H) array of per-head values, got "
                          f"{type(scores).__name__}")
    out = {}
    for name, values in scores.items():
        if not isinstance(name, str) or not name.strip() or any(c in name for c in SCORE_NAME_FORBIDDEN):
            raise ConfigError(f"score name {name!r}: a non-empty string without {' or '.join(SCORE_NAME_FORBIDDEN)}")
        if hasattr(values, "detach"):
            values = values.detach().cpu().double().numpy()
        try:
            v = np.asarray(values, dtype=np.float64)
        except (TypeError, ValueError):
            raise ConfigError(f"score {name!r} is not an array of numbers (one per head, shape ({L}, {H}))") from None
        while v.ndim < 2:
            v = v[None]
        if v.shape != (L, H):
            raise ConfigError(f"score {name!r} has shape {tuple(np.shape(values))}; it needs one value per head, "
                              f"shape (L, H) = ({L}, {H})")
        if np.isinf(v).any():
            raise ConfigError(f"score {name!r} holds an infinite value: give finite numbers, NaN for a head "
                              "without one")
        out[name] = v
    for name, text in (descriptions or {}).items():
        if name not in out:
            raise ConfigError(f"a description for {name!r}, which is not a score (scores: {', '.join(out) or 'none'})")
        if not isinstance(text, str):
            raise ConfigError(f"the description of score {name!r} must be a string")
    return out


def _rounded(v: float) -> float | None:
    """A score as stored: four significant digits, None for NaN."""
    return None if np.isnan(v) else float(f"{v:.{SCORE_DIGITS}g}")


def _ranks(v: np.ndarray) -> np.ndarray:
    """rank_lh = 1 + #{heads with a larger value} among the heads with a value (ties share a rank);
    0 where the head has none (NaN)."""
    finite = np.sort(v[~np.isnan(v)])
    r = 1 + finite.size - np.searchsorted(finite, v, side="right")
    return np.where(np.isnan(v), 0, r)


def _evenly(count: int, keep: int) -> list[int]:
    """``keep`` of ``range(count)``, evenly spaced, first and last included."""
    if keep >= count:
        return list(range(count))
    if keep == 1:
        return [0]
    return sorted({int(round(x)) for x in np.linspace(0, count - 1, keep)})


def viewer_data(maps: Any, tokens: Sequence[Any], *, layer_labels: Sequence[Any] | None = None,
                head_labels: Sequence[Any] | None = None, title: str = "", caption: str = "",
                max_tokens: int = MAX_TOKENS, max_bytes: int = MAX_BYTES,
                scores: Mapping[str, Any] | None = None, score_descriptions: Mapping[str, str] | None = None) -> dict:
    """The viewer's data as plain JSON (what results.json stores for an interactive block).

    ``maps`` (L, H, n, n) (or (H, n, n), or (n, n)), rows = queries; ``tokens`` the n token
    strings; ``scores`` (optional) name -> (L, H) per-head numbers (NaN: the head has none),
    ``score_descriptions`` name -> what the score is. Keys: ``kind``, ``title``, ``caption``,
    ``tokens`` (the kept ones), ``layers`` / ``heads`` (labels of the kept layers and heads),
    ``layer_ids`` / ``head_ids`` (their numbers in the model), ``scale`` (1000), ``maps`` (per kept
    layer, per kept head, the kept n x n weights row by row as one string of comma-separated
    integers, weight = integer / scale: one line per map in indented JSON), ``shape`` (the full
    L, H, n, n), ``cut`` (what was left out, "" when nothing) and, with scores, ``scores``: one
    ``{"name", "description", "values", "ranks", "ranked"}`` per score, ``values`` and ``ranks``
    per kept layer, per kept head (values to four significant digits, null for NaN; ranks among
    all L H heads, 1 = the largest value, null for NaN), ``ranked`` how many heads have a value."""
    a = _as_array(maps)
    L, H, n, _ = a.shape
    tokens = [str(t) for t in tokens]
    if len(tokens) != n:
        raise ConfigError(f"{len(tokens)} tokens for maps of {n} x {n}")
    if max_tokens < 1 or max_bytes < 1:
        raise ConfigError("max_tokens and max_bytes must be positive")
    layers, heads = _labels(layer_labels, L, "layer"), _labels(head_labels, H, "head")
    score_arrays = _score_arrays(scores, score_descriptions, L, H)
    descriptions = {k: str((score_descriptions or {}).get(k, "")) for k in score_arrays}
    m = min(n, max_tokens)
    ints = np.rint(a[:, :, :m, :m] * SCALE).astype(np.int64)
    # the size of every map in compact JSON: digits, a minus sign, a comma per weight, brackets
    digits = np.where(ints == 0, 1, np.floor(np.log10(np.maximum(np.abs(ints), 1))).astype(np.int64) + 1)
    size = (digits + (ints < 0) + 1).sum(axis=(2, 3)) + 16  # (L, H), with quotes and indentation
    size += 24 * len(score_arrays)  # a head's value and rank of every score: at most ~24 characters
    budget = (max_bytes - 200 * m - 40 * (L + H)  # tokens, labels and the rest of the JSON
              - sum(len(json.dumps([k, d])) + 60 for k, d in descriptions.items()))
    layer_ids, head_ids = list(range(L)), list(range(H))
    if size.sum() > budget:
        for keep in range(L, 0, -1):
            layer_ids = _evenly(L, keep)
            if size[layer_ids].sum() <= budget:
                break
        else:  # one layer is too big: its first heads
            layer_ids = [0]
            head_ids = [h for h in range(H) if size[0, : h + 1].sum() <= budget] or [0]
    cut = []
    if m < n:
        cut.append(f"the first {m} of {n} tokens are shown (the rows leave out the weights on the later "
                   "keys, so they need not sum to 1)")
    if len(layer_ids) < L:
        cut.append(f"{len(layer_ids)} of {L} layers are shown, evenly spaced "
                   f"({', '.join(layers[l] for l in layer_ids)}), to keep the page under "
                   f"{max_bytes / 1e6:g} MB")
    if len(head_ids) < H:
        cut.append(f"the first {len(head_ids)} of {H} heads are shown, to keep the page under "
                   f"{max_bytes / 1e6:g} MB")
    data = {
        "kind": KIND, "title": str(title), "caption": str(caption), "tokens": tokens[:m],
        "layers": [layers[l] for l in layer_ids], "heads": [heads[h] for h in head_ids],
        "layer_ids": layer_ids, "head_ids": head_ids, "scale": SCALE,
        "maps": [[",".join(map(str, ints[l, h].reshape(-1).tolist())) for h in head_ids] for l in layer_ids],
        "shape": [L, H, n, n], "cut": "; ".join(cut) + ("." if cut else ""),
    }
    if score_arrays:
        data["scores"] = []
        for name, v in score_arrays.items():
            r = _ranks(v)
            data["scores"].append({
                "name": name, "description": descriptions[name],
                "values": [[_rounded(v[l, h]) for h in head_ids] for l in layer_ids],
                "ranks": [[int(r[l, h]) or None for h in head_ids] for l in layer_ids],
                "ranked": int((~np.isnan(v)).sum())})
    return data


# ---- the fragment --------------------------------------------------------------------------
STYLE = """
.attnlab-viewer { font:13px/1.45 -apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif; color:#1d2430;
  background:#fff; border:1px solid #e3e7ed; border-radius:10px; padding:12px 14px; margin:10px 0; outline:none; }
.attnlab-viewer:focus-visible { box-shadow:0 0 0 2px #0b5cad55; }
.attnlab-viewer .av-title { font-weight:650; font-size:14px; margin:0 0 2px; }
.attnlab-viewer .av-caption, .attnlab-viewer .av-cut { color:#5b6575; margin:0 0 6px; }
.attnlab-viewer .av-cut { color:#8a5a00; }
.attnlab-viewer .av-controls { display:flex; flex-wrap:wrap; gap:6px 16px; align-items:center; margin:6px 0 8px; }
.attnlab-viewer label { color:#5b6575; }
.attnlab-viewer select { font:inherit; padding:1px 4px; margin-left:4px; }
.attnlab-viewer .av-state { font-variant-numeric:tabular-nums; background:#eef1f5; border-radius:6px;
  padding:2px 8px; }
.attnlab-viewer .av-readout { color:#5b6575; font-variant-numeric:tabular-nums; min-height:1.45em; }
.attnlab-viewer .av-body { display:flex; flex-wrap:wrap; gap:16px; align-items:flex-start; }
.attnlab-viewer .av-grid { display:grid; justify-content:start; gap:2px; align-items:center; max-width:100%; overflow-x:auto;
  margin-bottom:10px; }
.attnlab-viewer .av-grid .av-lab { color:#5b6575; font-size:11px; text-align:center; white-space:nowrap; }
.attnlab-viewer .av-grid canvas { width:34px; height:34px; cursor:pointer; border:1px solid #e3e7ed;
  image-rendering:pixelated; display:block; }
.attnlab-viewer .av-grid canvas.av-on { border:2px solid #d55e00; }
.attnlab-viewer .av-map { position:relative; line-height:0; }
.attnlab-viewer .av-map canvas { image-rendering:pixelated; border:1px solid #e3e7ed; cursor:crosshair; }
.attnlab-viewer .av-row { position:absolute; left:0; right:0; border:1.5px solid #d55e00; pointer-events:none; }
.attnlab-viewer .av-text { position:relative; display:flex; max-height:560px; overflow-y:auto; padding-right:4px; }
.attnlab-viewer .av-col { display:flex; flex-direction:column; }
.attnlab-viewer .av-tok { height:18px; line-height:18px; padding:0 6px; white-space:pre; border-radius:3px;
  font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace; font-size:12px; }
.attnlab-viewer .av-q .av-tok { text-align:right; cursor:pointer; }
.attnlab-viewer .av-q .av-tok.av-on { background:#d55e00; color:#fff; }
.attnlab-viewer .av-k .av-tok { display:flex; gap:8px; justify-content:space-between; }
.attnlab-viewer .av-w { color:#5b6575; font-variant-numeric:tabular-nums; }
.attnlab-viewer svg { flex:none; }
.attnlab-viewer .av-scores table { border-collapse:collapse; font-size:12px; font-variant-numeric:tabular-nums; }
.attnlab-viewer .av-scores th, .attnlab-viewer .av-scores td { padding:1px 8px; border-bottom:1px solid #e3e7ed;
  text-align:right; white-space:nowrap; }
.attnlab-viewer .av-scores th { color:#5b6575; font-weight:600; }
.attnlab-viewer .av-scores th:first-child, .attnlab-viewer .av-scores td:first-child { text-align:left; }
.attnlab-viewer .av-scores td[title] { text-decoration:underline dotted #8a94a6; cursor:help; }
.attnlab-viewer .av-scores .av-head { font-weight:650; margin-bottom:2px; }
"""

_SCRIPT = r"""
(function () {
  var UID = __UID__;
  var root = document.getElementById(UID);
  if (!root || root.getAttribute("data-ready")) return;
  var D = JSON.parse(document.getElementById(UID + "-data").textContent);
  D.maps = D.maps.map(function (r) { return r.map(function (s) { return s.split(",").map(Number); }); });
  var n = D.tokens.length, L = D.layers.length, H = D.heads.length, S = D.scale, RH = 18, LW = 150;
  function el(name) { return document.getElementById(UID + "-" + name); }
  function mk(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  var maxes = D.maps.map(function (r) { return r.map(function (m) {
    var x = 0; for (var i = 0; i < m.length; i++) if (m[i] > x) x = m[i]; return x / S; }); });
  var st = {l: 0, h: 0, q: 0}, shown = 0, relative = false;
  function w(l, h, i, j) { return D.maps[l][h][i * n + j] / S; }
  function shade(v) {  // 0 -> white, 0.5 -> mid blue, 1 -> dark blue
    var t = Math.max(0, Math.min(1, v)), a = t < 0.5 ? [255, 255, 255] : [66, 146, 198];
    var b = t < 0.5 ? [66, 146, 198] : [8, 48, 107], u = t < 0.5 ? 2 * t : 2 * t - 1;
    return [0, 1, 2].map(function (k) { return Math.round(a[k] + (b[k] - a[k]) * u); });
  }
  function css(c) { return "rgb(" + c.join(",") + ")"; }
  function draw(canvas, l, h) {
    canvas.width = n; canvas.height = n;
    var ctx = canvas.getContext("2d"), img = ctx.createImageData(n, n), top = relative ? (maxes[l][h] || 1) : 1;
    for (var i = 0; i < n * n; i++) {
      var c = shade(D.maps[l][h][i] / S / top);
      img.data[4 * i] = c[0]; img.data[4 * i + 1] = c[1]; img.data[4 * i + 2] = c[2]; img.data[4 * i + 3] = 255;
    }
    ctx.putImageData(img, 0, 0);
  }
  // the layer x head grid of thumbnails
  var grid = el("grid"), thumbs = [];
  grid.style.gridTemplateColumns = "auto repeat(" + H + ", 36px)";
  grid.appendChild(mk("div", "av-lab", "L \\ H"));
  D.heads.forEach(function (x) { grid.appendChild(mk("div", "av-lab", x)); });
  D.layers.forEach(function (x, l) {
    grid.appendChild(mk("div", "av-lab", x));
    thumbs.push(D.heads.map(function (y, h) {
      var c = mk("canvas");
      c.title = "layer " + x + ", head " + y;
      c.addEventListener("click", function () { st.l = l; st.h = h; update(true); });
      grid.appendChild(c);
      return c;
    }));
  });
  // the select boxes
  var sl = el("layer"), sh = el("head"), ss = el("scale");
  D.layers.forEach(function (x, l) { var o = mk("option", "", x); o.value = l; sl.appendChild(o); });
  D.heads.forEach(function (x, h) { var o = mk("option", "", x); o.value = h; sh.appendChild(o); });
  sl.addEventListener("change", function () { st.l = +sl.value; update(true); });
  sh.addEventListener("change", function () { st.h = +sh.value; update(true); });
  ss.addEventListener("change", function () { relative = ss.value === "relative"; update(true); });
  // the map
  var map = el("map"), mark = el("mark"), readout = el("readout");
  var cell = Math.max(4, Math.min(14, Math.floor(448 / n)));
  map.style.width = map.style.height = (n * cell) + "px";
  mark.style.height = cell + "px";
  function at(ev) {
    var r = map.getBoundingClientRect();
    return [Math.min(n - 1, Math.floor((ev.clientY - r.top) / r.height * n)),
            Math.min(n - 1, Math.floor((ev.clientX - r.left) / r.width * n))];
  }
  function say(i, j) {
    readout.textContent = "query " + i + " \u201c" + D.tokens[i] + "\u201d \u2192 key " + j + " \u201c" +
      D.tokens[j] + "\u201d: " + w(st.l, st.h, i, j).toFixed(3);
  }
  map.addEventListener("mousemove", function (ev) { var p = at(ev); say(p[0], p[1]); });
  map.addEventListener("mouseleave", function () { readout.textContent = ""; });
  map.addEventListener("click", function (ev) { st.q = at(ev)[0]; update(false); });
  // the text view: queries left, keys right, lines between
  var qcol = el("queries"), kcol = el("keys"), svg = el("lines"), qs = [], ks = [];
  svg.setAttribute("width", LW); svg.setAttribute("height", n * RH);
  D.tokens.forEach(function (t, i) {
    var a = mk("div", "av-tok", t); a.setAttribute("data-index", i);
    a.addEventListener("mouseenter", function () { show(i); });
    a.addEventListener("click", function () { st.q = i; update(false); });
    qcol.appendChild(a); qs.push(a);
    var b = mk("div", "av-tok"); b.setAttribute("data-index", i);
    b.appendChild(mk("span", "", t)); b.appendChild(mk("span", "av-w", ""));
    kcol.appendChild(b); ks.push(b);
  });
  el("text").addEventListener("mouseleave", function () { show(st.q); });
  // the picked head's scores: name, value, rank among all heads
  var SC = D.scores || [], scoreHead = el("scores-head"), scoreCells = [];
  if (SC.length) {
    var tb = el("scores-body");
    SC.forEach(function (c) {
      var tr = mk("tr"), name = mk("td", "", c.name), v = mk("td"), r = mk("td");
      if (c.description) name.title = c.description;
      tr.appendChild(name); tr.appendChild(v); tr.appendChild(r); tb.appendChild(tr);
      scoreCells.push([v, r]);
    });
  }
  function scores() {  // the picked head's scores in the table and the state element
    if (!SC.length) return;
    var l = st.l, h = st.h, vals = [], ranks = [];
    scoreHead.textContent = "layer " + D.layers[l] + ", head " + D.heads[h];
    SC.forEach(function (c, k) {
      var v = c.values[l][h], r = c.ranks ? c.ranks[l][h] : null;
      scoreCells[k][0].textContent = v === null ? "\u2013" : String(v);
      scoreCells[k][1].textContent = r === null ? "\u2013" : r + " of " + c.ranked;
      vals.push(c.name + "=" + (v === null ? "nan" : String(v)));
      ranks.push(c.name + "=" + (r === null ? "-" : r + "/" + c.ranked));
    });
    var s = el("state");
    s.setAttribute("data-scores", vals.join(";"));
    s.setAttribute("data-score-ranks", ranks.join(";"));
  }
  function show(i) {  // draw query i's row in the text view and the state element
    shown = i;
    var l = st.l, h = st.h, row = [], top = 0;
    for (var j = 0; j < n; j++) { row.push(w(l, h, i, j)); if (row[j] > top) top = row[j]; }
    var norm = relative ? (top || 1) : 1;
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    qs.forEach(function (a, k) { a.className = "av-tok" + (k === i ? " av-on" : ""); });
    for (j = 0; j < n; j++) {
      var v = row[j] / norm, c = shade(v);
      ks[j].style.background = css(c);
      ks[j].style.color = v > 0.45 ? "#fff" : "";
      ks[j].lastChild.style.color = v > 0.45 ? "#fff" : "";
      ks[j].lastChild.textContent = row[j].toFixed(3);
      ks[j].setAttribute("data-weight", row[j].toFixed(3));
      if (row[j] >= 0.001) {
        var ln = document.createElementNS(svg.namespaceURI, "line");
        ln.setAttribute("x1", 2); ln.setAttribute("y1", i * RH + RH / 2);
        ln.setAttribute("x2", LW - 2); ln.setAttribute("y2", j * RH + RH / 2);
        ln.setAttribute("stroke", "#0b5cad");
        ln.setAttribute("stroke-opacity", Math.max(0.06, Math.min(1, v)).toFixed(3));
        ln.setAttribute("stroke-width", (0.5 + 3.5 * Math.min(1, v)).toFixed(2));
        svg.appendChild(ln);
      }
    }
    mark.style.top = (i * cell) + "px";
    var s = el("state");
    s.setAttribute("data-layer", D.layer_ids[l]);
    s.setAttribute("data-head", D.head_ids[h]);
    s.setAttribute("data-query", i);
    s.setAttribute("data-query-token", D.tokens[i]);
    s.setAttribute("data-weights", row.map(function (x) { return x.toFixed(3); }).join(","));
    s.textContent = "layer " + D.layers[l] + " \u00b7 head " + D.heads[h] + " \u00b7 query " + i + " \u201c" +
      D.tokens[i] + "\u201d \u00b7 row sum " + row.reduce(function (a, b) { return a + b; }, 0).toFixed(3);
  }
  function update(redraw) {
    sl.value = st.l; sh.value = st.h;
    scores();
    if (redraw) {
      draw(map, st.l, st.h);
      thumbs.forEach(function (r, l) { r.forEach(function (c, h) {
        c.className = (l === st.l && h === st.h) ? "av-on" : ""; }); });
    }
    show(st.q);
  }
  function redrawThumbs() { thumbs.forEach(function (r, l) { r.forEach(function (c, h) { draw(c, l, h); }); }); }
  ss.addEventListener("change", redrawThumbs);
  // keys: up/down the query, left/right the head
  root.addEventListener("keydown", function (ev) {
    var k = ev.key;
    if (k === "ArrowUp" || k === "ArrowDown") st.q = Math.max(0, Math.min(n - 1, shown + (k === "ArrowUp" ? -1 : 1)));
    else if (k === "ArrowLeft" || k === "ArrowRight") st.h = (st.h + (k === "ArrowLeft" ? H - 1 : 1)) % H;
    else return;
    ev.preventDefault(); update(true);
  });
  // the initial selection: the URL fragment
  function nearest(ids, v) {
    var best = 0;
    ids.forEach(function (x, k) { if (Math.abs(x - v) < Math.abs(ids[best] - v)) best = k; });
    return best;
  }
  function fromHash() {
    var p = {}, all = document.querySelectorAll("[data-attnlab-viewer]");
    var index = Array.prototype.indexOf.call(all, root);
    location.hash.replace(/^#/, "").split("&").forEach(function (kv) {
      var e = kv.indexOf("=");
      if (e > 0) { try { p[decodeURIComponent(kv.slice(0, e))] = decodeURIComponent(kv.slice(e + 1)); } catch (x) {} }
    });
    function get(k) {
      var v = p[UID + "." + k];
      if (v === undefined) v = p["v" + index + "." + k];
      if (v === undefined && index === 0) v = p[k];
      v = parseInt(v, 10);
      return isNaN(v) ? null : v;
    }
    var l = get("layer"), h = get("head"), q = get("query");
    if (l !== null) st.l = nearest(D.layer_ids, l);
    if (h !== null) st.h = nearest(D.head_ids, h);
    if (q !== null) st.q = Math.max(0, Math.min(n - 1, q));
  }
  fromHash();
  redrawThumbs();
  update(true);
  window.addEventListener("hashchange", function () { fromHash(); update(true); });
  root.setAttribute("data-ready", "1");
})();
"""


def _json_for_script(d: Mapping[str, Any]) -> str:
    """Compact JSON that cannot end the <script> element it sits in."""
    s = json.dumps(d, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return s.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def new_id() -> str:
    return "attnlab-viewer-" + secrets.token_hex(4)


def viewer_fragment(data: Mapping[str, Any], *, uid: str | None = None) -> str:
    """The HTML fragment of a :func:`viewer_data` block; ``uid`` (the element id, also the prefix of
    every other id of the fragment) must be unique on the page: a random one by default."""
    check_viewer_data(data)
    uid = uid or new_id()
    if not _ID.match(uid):
        raise ConfigError(f"viewer id {uid!r}: letters, digits, '-' and '_' only, starting with a letter")
    L, H, n, _ = data.get("shape") or [len(data["layers"]), len(data["heads"]), len(data["tokens"])] * 2
    scored = bool(data.get("scores"))
    parts = [f"<style>{STYLE}</style>",
             f'<div class="attnlab-viewer" id="{uid}" data-attnlab-viewer tabindex="0">']
    if data.get("title"):
        parts.append(f'<div class="av-title">{escape(data["title"])}</div>')
    parts.append(f'<div class="av-caption">{escape(data.get("caption") or "")} Attention weights of {L} '
                 f"layer(s) x {H} head(s) on {n} tokens; rows are queries, columns keys. Pick a map in the grid, "
                 "hover or click a query token (or a row of the map) to see the weights it puts on every key; "
                 "arrow keys move the query and the head."
                 + (" The table beside the map gives the picked head's scores and its rank among all "
                    f"{L * H} heads (1 = the largest value; hover a name for what it measures)." if scored else "")
                 + "</div>")
    if data.get("cut"):
        parts.append(f'<div class="av-cut">Left out: {escape(data["cut"])}</div>')
    parts.append(
        f'<div class="av-controls"><label>layer<select id="{uid}-layer"></select></label>'
        f'<label>head<select id="{uid}-head"></select></label>'
        f'<label>scale<select id="{uid}-scale"><option value="absolute">0 to 1</option>'
        f'<option value="relative">0 to the largest weight</option></select></label>'
        f'<span class="av-state" id="{uid}-state" data-layer="" data-head="" data-query="" '
        f'data-weights="">the viewer needs JavaScript</span></div>'
        f'<div class="av-grid" id="{uid}-grid"></div>'
        f'<div class="av-readout" id="{uid}-readout"></div>'
        f'<div class="av-body"><div class="av-map"><canvas id="{uid}-map"></canvas>'
        f'<div class="av-row" id="{uid}-mark"></div></div>'
        + (f'<div class="av-scores"><div class="av-head" id="{uid}-scores-head"></div><table>'
           f'<thead><tr><th>score</th><th>value</th><th>rank (1 = largest)</th></tr></thead>'
           f'<tbody id="{uid}-scores-body"></tbody></table></div>' if scored else "")
        + f'<div class="av-text" id="{uid}-text"><div class="av-col av-q" id="{uid}-queries"></div>'
        f'<svg id="{uid}-lines"></svg>'
        f'<div class="av-col av-k" id="{uid}-keys"></div></div></div></div>')
    parts.append(f'<script type="application/json" id="{uid}-data">{_json_for_script(data)}</script>')
    parts.append(f"<script>{_SCRIPT.replace('__UID__', json.dumps(uid))}</script>")
    return "".join(parts)


def attention_viewer_html(maps: Any, tokens: Sequence[Any], *, layer_labels: Sequence[Any] | None = None,
                          head_labels: Sequence[Any] | None = None, title: str = "", caption: str = "",
                          max_tokens: int = MAX_TOKENS, max_bytes: int = MAX_BYTES, uid: str | None = None,
                          scores: Mapping[str, Any] | None = None,
                          score_descriptions: Mapping[str, str] | None = None) -> str:
    """One self-contained HTML fragment showing the attention maps ``maps`` (L, H, n, n), rows = queries,
    with their ``tokens`` and, optionally, per-head ``scores`` (name -> (L, H)) beside the map (module
    docstring: what it shows, what is cut, the URL fragment and the DOM state)."""
    return viewer_fragment(viewer_data(maps, tokens, layer_labels=layer_labels, head_labels=head_labels,
                                       title=title, caption=caption, max_tokens=max_tokens, max_bytes=max_bytes,
                                       scores=scores, score_descriptions=score_descriptions),
                           uid=uid)


def standalone_page(fragments: Sequence[str], title: str = "attention") -> str:
    """A complete HTML page holding ``fragments`` (viewers), nothing loaded from outside."""
    return ('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{escape(title)}</title><style>body{{margin:16px;background:#f6f7f9}}</style></head><body>"
            + "\n".join(fragments) + "</body></html>\n")


class AttentionView:
    """Attention maps (L, H, n, n) with their tokens, shown by the interactive viewer.

    In Jupyter the object renders as the viewer (``_repr_html_``); :meth:`save` writes a
    standalone page; :attr:`data` is the JSON block a result stores. Build it from maps, or from a
    model's output with :meth:`from_output`. ``scores`` (name -> (L, H) array, one number per head)
    and ``score_descriptions`` (name -> text) add the picked head's scores beside the map."""

    def __init__(self, maps: Any, tokens: Sequence[Any], *, layer_labels: Sequence[Any] | None = None,
                 head_labels: Sequence[Any] | None = None, title: str = "", caption: str = "",
                 max_tokens: int = MAX_TOKENS, max_bytes: int = MAX_BYTES, scores: Mapping[str, Any] | None = None,
                 score_descriptions: Mapping[str, str] | None = None) -> None:
        self.data = viewer_data(maps, tokens, layer_labels=layer_labels, head_labels=head_labels, title=title,
                                caption=caption, max_tokens=max_tokens, max_bytes=max_bytes, scores=scores,
                                score_descriptions=score_descriptions)

    @classmethod
    def from_output(cls, out: Any, tokens: Sequence[Any], batch: int = 0, **kw: Any) -> "AttentionView":
        """From a model output whose ``.attentions`` is a list of (B, H, n, n), one per layer: the maps of
        input ``batch``. With fewer tokens than positions (a padded batch), the maps of the first
        ``len(tokens)`` positions are shown."""
        att = getattr(out, "attentions", None)
        if not att:
            raise ConfigError("the output has no attentions: run the model with output_attentions=True")
        import torch

        A = torch.stack([a.detach()[batch] for a in att])  # (L, H, n, n)
        k = len(tokens)
        if k > A.shape[-1]:
            raise ConfigError(f"{k} tokens for maps over {A.shape[-1]} positions")
        return cls(A[..., :k, :k], tokens, **kw)

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> "AttentionView":
        """Back from a stored :attr:`data` block."""
        check_viewer_data(data)
        view = cls.__new__(cls)
        view.data = dict(data)
        return view

    def html(self, uid: str | None = None) -> str:
        """The fragment (a new element id each call unless ``uid`` is given)."""
        return viewer_fragment(self.data, uid=uid)

    def _repr_html_(self) -> str:
        return self.html()

    def save(self, path: str | os.PathLike) -> Path:
        """Write a standalone HTML page with the viewer; return its path."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(standalone_page([self.html()], self.data.get("title") or "attention"), encoding="utf-8")
        return path

    def __repr__(self) -> str:
        L, H, n, _ = self.data["shape"]
        scored = self.data.get("scores")
        return (f"AttentionView({L} layers x {H} heads, {n} tokens"
                + (f", {len(scored)} score(s)" if scored else "")
                + (f"; {self.data['cut']}" if self.data["cut"] else "") + ")")
