"""The attention viewer: a self-contained fragment whose embedded data are the maps to 1e-3,
cut to its token and size limits with a note saying so; AttentionView in notebooks, pages and
results; and, in headless Chromium, the selection read from the URL fragment (two viewers on one
page) with the picked row's weights in the DOM and no script error."""

from __future__ import annotations

import html as htmllib
import json
import re
import shutil
import subprocess
import tempfile
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from attnlab.errors import ConfigError
from attnlab.reports import AttentionView, attention_viewer_html
from attnlab.reports.viewer import standalone_page, viewer_data
from attnlab.results import ExperimentResult


def _maps(L=3, H=4, n=10, seed=0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.softmax(3 * torch.randn(L, H, n, n, generator=g, dtype=torch.float64), -1)


TOKENS = ["[CLS]", "the", "<b>cat</b>", "sat", "&amp;", "on", "\"a\"", "mat", "</script>", "[SEP]"]


def _embedded(fragment: str, uid: str) -> dict:
    m = re.search(rf'<script type="application/json" id="{uid}-data">(.*?)</script>', fragment, re.S)
    return json.loads(m.group(1))


def _decoded(d: dict) -> np.ndarray:
    return np.array([[np.array(s.split(","), dtype=float).reshape(len(d["tokens"]), -1) / d["scale"]
                      for s in r] for r in d["maps"]])


def test_fragment_is_self_contained():
    f = attention_viewer_html(_maps(), TOKENS, title="t", uid="v0")
    for bad in ("http://", "https://", "//cdn", "<link", "@import", "@font-face", "<iframe", "fetch(",
                "XMLHttpRequest", "import(", "<img"):
        assert bad not in f, bad
    assert not re.search(r"""\bsrc\s*=\s*["']?(?!data:)""", f)
    assert re.findall(r"<script\b[^>]*>", f) == ['<script type="application/json" id="v0-data">', "<script>"]
    assert f.count("</script>") == 2  # a token "</script>" cannot end the data early
    assert f.count("<style>") == 1 and 'id="v0"' in f and "data-attnlab-viewer" in f
    # every id of the fragment carries the viewer's id
    assert all(i == "v0" or i.startswith("v0-") for i in re.findall(r'\bid="([^"]*)"', f))


def test_embedded_json_equals_the_maps():
    A = _maps()
    f = attention_viewer_html(A, TOKENS, layer_labels=["a", "b", "c"], uid="v0")
    d = _embedded(f, "v0")
    assert d["tokens"] == TOKENS and d["layers"] == ["a", "b", "c"] and d["heads"] == ["0", "1", "2", "3"]
    assert d["shape"] == [3, 4, 10, 10] and d["cut"] == "" and d["layer_ids"] == [0, 1, 2]
    assert np.abs(_decoded(d) - A.numpy()).max() <= 5e-4 + 1e-12
    assert "Left out" not in f


def test_tokens_and_layers_are_cut_to_the_limits_and_the_fragment_says_so():
    A, toks = _maps(L=7, H=2, n=12), [f"t{i}" for i in range(12)]
    d = viewer_data(A, toks, max_tokens=5, max_bytes=2000)
    assert d["tokens"] == toks[:5] and d["shape"] == [7, 2, 12, 12]
    kept = d["layer_ids"]
    assert kept[0] == 0 and kept[-1] == 6 and 2 <= len(kept) < 7 and kept == sorted(set(kept))
    assert len(json.dumps(d)) < 2000
    assert np.abs(_decoded(d) - A[kept][:, :, :5, :5].numpy()).max() <= 5e-4 + 1e-12
    assert "the first 5 of 12 tokens" in d["cut"] and f"{len(kept)} of 7 layers" in d["cut"]
    f = attention_viewer_html(A, toks, max_tokens=5, max_bytes=2000, uid="v0")
    assert "Left out: the first 5 of 12 tokens" in f
    # a model-sized input stays under the default ~2 MB
    big = viewer_data(torch.softmax(torch.randn(30, 9, 100, 100), -1), [str(i) for i in range(100)])
    assert len(json.dumps(big, separators=(",", ":"))) < 2_000_000 and len(big["tokens"]) == 64


def test_bad_inputs_are_one_line_errors():
    with pytest.raises(ConfigError, match="9 tokens for maps of 10 x 10"):
        viewer_data(_maps(), TOKENS[:9])
    with pytest.raises(ConfigError, match="NaN"):
        viewer_data(torch.full((1, 1, 2, 2), float("nan")), ["a", "b"])
    with pytest.raises(ConfigError, match="square"):
        viewer_data(torch.zeros(1, 1, 2, 3), ["a", "b"])
    with pytest.raises(ConfigError, match="2 layer labels for 3 layers"):
        viewer_data(_maps(), TOKENS, layer_labels=["x", "y"])
    with pytest.raises(ConfigError, match="viewer id"):
        attention_viewer_html(_maps(), TOKENS, uid="1 bad")
    with pytest.raises(ConfigError):
        ExperimentResult(interactive=[{"kind": "attention-viewer", "tokens": ["a"]}])


def test_one_map_or_one_layer_and_fresh_ids():
    d = viewer_data([[0.5, 0.5], [0.0, 1.0]], ["a", "b"])
    assert d["shape"] == [1, 1, 2, 2] and d["maps"] == [["500,500,0,1000"]]
    a, b = attention_viewer_html(_maps(), TOKENS), attention_viewer_html(_maps(), TOKENS)
    ida, idb = (re.search(r'class="attnlab-viewer" id="([^"]+)"', x).group(1) for x in (a, b))
    assert ida != idb


def test_attention_view_from_output_notebook_page_and_results(tmp_path):
    A = _maps(L=2, H=3, n=6).float()
    B = torch.stack([torch.zeros_like(A), A])  # batch 1 holds the maps
    out = SimpleNamespace(attentions=[B[:, l] for l in range(2)])  # L x (B, H, n, n)
    view = AttentionView.from_output(out, ["a", "b", "c", "d"], batch=1, title="padded")  # 2 padding positions
    assert view.data["shape"] == [2, 3, 4, 4]
    assert np.abs(_decoded(view.data) - A[:, :, :4, :4].double().numpy()).max() <= 5e-4 + 1e-7
    assert "data-attnlab-viewer" in view._repr_html_() and "AttentionView(2 layers x 3 heads, 4 tokens)" == repr(view)
    page = view.save(tmp_path / "sub" / "view.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and "<title>padded</title>" in page and "http" not in page
    with pytest.raises(ConfigError, match="output_attentions"):
        AttentionView.from_output(SimpleNamespace(attentions=None), ["a"])
    with pytest.raises(ConfigError, match="7 tokens for maps over 6 positions"):
        AttentionView.from_output(out, list("abcdefg"))
    # a result carries the block through results.json and back
    r = ExperimentResult(interactive=[view.data])
    back = ExperimentResult.from_dict(json.loads(json.dumps(r.to_dict(), indent=2)))
    assert back.interactive == [view.data] and AttentionView.from_data(back.interactive[0]).data == view.data


# ---- in a browser ------------------------------------------------------------------------------
def _chromium() -> str:
    path = shutil.which("chromium")
    if path is None:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    return path


def _dump_dom(page, fragment: str) -> tuple[str, str]:
    """The DOM after the page's scripts ran, and Chromium's log (console messages included)."""
    with tempfile.TemporaryDirectory(prefix="attnlab-chromium-") as profile:
        proc = subprocess.run(
            [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--enable-logging=stderr", "--v=0", f"--user-data-dir={profile}", "--dump-dom",
             page.as_uri() + fragment],
            capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout, proc.stderr


def _state(dom: str, uid: str) -> dict[str, str]:
    tag = re.search(rf'<span [^>]*id="{uid}-state"[^>]*>', dom).group(0)
    return {k: htmllib.unescape(v) for k, v in re.findall(r'data-([a-z-]+)="([^"]*)"', tag)}


@pytest.mark.browser
def test_two_viewers_take_their_selection_from_the_url_fragment(tmp_path):
    A1, A2 = _maps(L=3, H=4, n=10, seed=1), _maps(L=2, H=3, n=10, seed=2)
    page = tmp_path / "two.html"
    page.write_text(standalone_page([attention_viewer_html(A1, TOKENS, uid="first"),
                                     attention_viewer_html(A2, TOKENS, uid="second")]))
    # plain keys pick the first viewer; "v1." (position on the page) or the element id the second
    dom, log = _dump_dom(page, "#layer=1&head=2&query=3&v1.head=1&v1.query=8")
    assert "Uncaught" not in log and "Error" not in "".join(l for l in log.splitlines() if "CONSOLE" in l)
    s = _state(dom, "first")
    assert (s["layer"], s["head"], s["query"], s["query-token"]) == ("1", "2", "3", "sat")
    weights = np.array(s["weights"].split(","), dtype=float)
    assert weights.shape == (10,) and np.abs(weights - A1[1, 2, 3].numpy()).max() <= 5e-4 + 1e-12
    keys = re.search(r'id="first-keys"(.*?)</div></div>', dom, re.S).group(1)
    assert np.allclose(np.array(re.findall(r'data-weight="([^"]*)"', keys), dtype=float), weights)
    s2 = _state(dom, "second")
    assert (s2["layer"], s2["head"], s2["query"], s2["query-token"]) == ("0", "1", "8", "</script>")
    assert np.abs(np.array(s2["weights"].split(","), dtype=float) - A2[0, 1, 8].numpy()).max() <= 5e-4 + 1e-12
    # the element id addresses a viewer too; values out of range are clamped
    dom, _ = _dump_dom(page, "#second.layer=1&second.head=2&second.query=99")
    assert (lambda s: (s["layer"], s["head"], s["query"]))(_state(dom, "second")) == ("1", "2", "9")
    assert (lambda s: (s["layer"], s["head"], s["query"]))(_state(dom, "first")) == ("0", "0", "0")


@pytest.mark.browser
def test_the_console_check_sees_a_script_error(tmp_path):
    """The log the viewer test reads does report an uncaught error (so its absence means something)."""
    page = tmp_path / "bad.html"
    page.write_text("<!DOCTYPE html><html><body><script>null.x = 1;</script></body></html>")
    _, log = _dump_dom(page, "")
    assert "Uncaught" in log
