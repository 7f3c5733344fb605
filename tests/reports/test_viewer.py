"""The attention viewer: a self-contained fragment whose embedded data are the maps to 1e-3,
cut to its token and size limits with a note saying so; AttentionView in notebooks, pages and
results; and, in headless Chromium, the selection read from the URL fragment (two viewers on one
page) with the picked row's weights in the DOM and no script error."""

from __future__ import annotations

import html as htmllib
import json
import re
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from attnlab.errors import ConfigError
from attnlab.reports import AttentionView, attention_viewer_html
from attnlab.reports.viewer import standalone_page, viewer_data
from attnlab.results import ExperimentResult
from helpers import dump_dom, state_pairs, viewer_state
from tolerances import FLOAT64, VIEWER_ROUNDING


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
    assert np.abs(_decoded(d) - A.numpy()).max() <= VIEWER_ROUNDING + FLOAT64
    assert "Left out" not in f


def test_tokens_and_layers_are_cut_to_the_limits_and_the_fragment_says_so():
    A, toks = _maps(L=7, H=2, n=12), [f"t{i}" for i in range(12)]
    d = viewer_data(A, toks, max_tokens=5, max_bytes=2000)
    assert d["tokens"] == toks[:5] and d["shape"] == [7, 2, 12, 12]
    kept = d["layer_ids"]
    assert kept[0] == 0 and kept[-1] == 6 and 2 <= len(kept) < 7 and kept == sorted(set(kept))
    assert len(json.dumps(d)) < 2000
    assert np.abs(_decoded(d) - A[kept][:, :, :5, :5].numpy()).max() <= VIEWER_ROUNDING + FLOAT64
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
    assert np.abs(_decoded(view.data) - A[:, :, :4, :4].double().numpy()).max() <= VIEWER_ROUNDING + 1e-7
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


# ---- per-head scores ---------------------------------------------------------------------------
def _brute_ranks(S: np.ndarray) -> np.ndarray:
    """rank = 1 + how many heads have a larger value, counted head by head (0 for NaN)."""
    flat = [v for v in S.reshape(-1) if not np.isnan(v)]
    return np.array([[0 if np.isnan(v) else 1 + sum(w > v for w in flat) for v in row] for row in S])


def test_scores_are_stored_for_the_kept_heads_to_four_digits_with_their_rank_among_all_heads():
    A, toks = _maps(L=7, H=2, n=12), [f"t{i}" for i in range(12)]
    g = np.random.default_rng(0)
    S = g.normal(size=(7, 2)) * np.array([[1e-3], [1.0], [30.0], [1.0], [0.2], [5.0], [1.0]])
    S[3, 1] = np.nan
    S[6, 0] = S[1, 1]  # a tie shares its rank
    d = viewer_data(A, toks, max_tokens=5, max_bytes=2600, scores={"s": S, "one": np.ones((7, 2))},
                    score_descriptions={"s": "a test score"})
    kept = d["layer_ids"]
    assert 2 <= len(kept) < 7 and kept[0] == 0 and kept[-1] == 6 and len(json.dumps(d)) < 2600
    s, one = d["scores"]
    assert (s["name"], s["description"], s["ranked"]) == ("s", "a test score", 13)
    assert (one["name"], one["description"], one["ranked"]) == ("one", "", 14)
    got = np.array([[np.nan if v is None else v for v in r] for r in s["values"]])
    want = S[kept]
    assert np.array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    assert np.all(np.abs(got[ok] - want[ok]) <= VIEWER_ROUNDING * np.abs(want[ok]))  # four significant digits
    ranks = _brute_ranks(S)[kept]
    assert [[r or None for r in row] for row in ranks.tolist()] == s["ranks"]
    assert _brute_ranks(S)[6, 0] == _brute_ranks(S)[1, 1] and one["ranks"] == [[1, 1]] * len(kept)
    # a result stores the block with its scores and reads it back
    r = ExperimentResult.from_dict(json.loads(json.dumps(ExperimentResult(interactive=[d]).to_dict())))
    assert r.interactive[0]["scores"] == d["scores"]


def test_bad_scores_are_one_line_errors_and_blocks_without_scores_still_render():
    A = _maps(L=3, H=4, n=10)
    for scores, message in (({"s": np.zeros((4, 3))}, r"score 's' has shape \(4, 3\); it needs one value per head, "
                                                       r"shape \(L, H\) = \(3, 4\)"),
                            ({"s": np.full((3, 4), np.inf)}, "score 's' holds an infinite value"),
                            ({"a;b": np.zeros((3, 4))}, "score name 'a;b'"),
                            ({"s": [["x"] * 4] * 3}, "score 's' is not an array of numbers"),
                            ([np.zeros((3, 4))], "scores must map a name to an")):
        with pytest.raises(ConfigError, match=message):
            viewer_data(A, TOKENS, scores=scores)
    with pytest.raises(ConfigError, match="a description for 'x', which is not a score"):
        viewer_data(A, TOKENS, scores={"s": np.zeros((3, 4))}, score_descriptions={"x": "?"})
    d = viewer_data(A, TOKENS, scores={"s": np.zeros((3, 4))})
    for bad in ({**d["scores"][0], "values": [[0.0] * 4] * 2}, {**d["scores"][0], "ranks": [[0] * 4] * 3},
                {**d["scores"][0], "name": "a=b"}):
        with pytest.raises(ConfigError, match="score") as e:
            ExperimentResult(interactive=[{**d, "scores": [bad]}])
        assert "\n" not in str(e.value)
    old = viewer_data(A, TOKENS)
    assert "scores" not in old and "-scores-body" not in AttentionView.from_data(old).html(uid="v0")
    assert 'id="v0-scores-body"' in AttentionView.from_data(d).html(uid="v0")
    assert repr(AttentionView(A, TOKENS, scores={"s": np.zeros((3, 4))})) == \
        "AttentionView(3 layers x 4 heads, 10 tokens, 1 score(s))"


# ---- in a browser ------------------------------------------------------------------------------
@pytest.mark.browser
def test_two_viewers_take_their_selection_from_the_url_fragment(tmp_path):
    A1, A2 = _maps(L=3, H=4, n=10, seed=1), _maps(L=2, H=3, n=10, seed=2)
    page = tmp_path / "two.html"
    page.write_text(standalone_page([attention_viewer_html(A1, TOKENS, uid="first"),
                                     attention_viewer_html(A2, TOKENS, uid="second")]))
    # plain keys pick the first viewer; "v1." (position on the page) or the element id the second
    dom, log = dump_dom(page, "#layer=1&head=2&query=3&v1.head=1&v1.query=8")
    assert "Uncaught" not in log and "Error" not in "".join(l for l in log.splitlines() if "CONSOLE" in l)
    s = viewer_state(dom, "first")
    assert (s["layer"], s["head"], s["query"], s["query-token"]) == ("1", "2", "3", "sat")
    weights = np.array(s["weights"].split(","), dtype=float)
    assert weights.shape == (10,) and np.abs(weights - A1[1, 2, 3].numpy()).max() <= VIEWER_ROUNDING + FLOAT64
    keys = re.search(r'id="first-keys"(.*?)</div></div>', dom, re.S).group(1)
    assert np.allclose(np.array(re.findall(r'data-weight="([^"]*)"', keys), dtype=float), weights)
    s2 = viewer_state(dom, "second")
    assert (s2["layer"], s2["head"], s2["query"], s2["query-token"]) == ("0", "1", "8", "</script>")
    shown = np.array(s2["weights"].split(","), dtype=float)
    assert np.abs(shown - A2[0, 1, 8].numpy()).max() <= VIEWER_ROUNDING + FLOAT64
    # the element id addresses a viewer too; values out of range are clamped
    dom, _ = dump_dom(page, "#second.layer=1&second.head=2&second.query=99")
    assert (lambda s: (s["layer"], s["head"], s["query"]))(viewer_state(dom, "second")) == ("1", "2", "9")
    assert (lambda s: (s["layer"], s["head"], s["query"]))(viewer_state(dom, "first")) == ("0", "0", "0")


@pytest.mark.browser
def test_the_console_check_sees_a_script_error(tmp_path):
    """The log the viewer test reads does report an uncaught error (so its absence means something)."""
    page = tmp_path / "bad.html"
    page.write_text("<!DOCTYPE html><html><body><script>null.x = 1;</script></body></html>")
    _, log = dump_dom(page, "")
    assert "Uncaught" in log


@pytest.mark.browser
def test_the_picked_heads_scores_and_ranks_are_shown_beside_its_map(tmp_path):
    A = _maps(L=3, H=4, n=10, seed=3)
    S = np.arange(12, dtype=float).reshape(3, 4) / 7 - 0.5  # distinct values: rank = 12 - index
    S[0, 0] = np.nan
    E = -(A * A.clamp_min(1e-300).log()).sum(-1).mean(-1).numpy()  # mean row entropy (nats), (3, 4)
    page = tmp_path / "scores.html"
    page.write_text(standalone_page([attention_viewer_html(A, TOKENS, uid="sc", scores={"ramp": S, "entropy": E},
                                                           score_descriptions={"entropy": "mean row entropy"})]))
    dom, log = dump_dom(page, "#layer=2&head=1&query=4")
    assert "Uncaught" not in log
    s = viewer_state(dom, "sc")
    assert (s["layer"], s["head"], s["query"]) == ("2", "1", "4")
    shown = {k: float(v) for k, v in state_pairs(s["scores"]).items()}
    assert list(shown) == ["ramp", "entropy"]
    for name, want in (("ramp", S[2, 1]), ("entropy", E[2, 1])):
        assert abs(shown[name] - want) <= VIEWER_ROUNDING * abs(want), name
    assert state_pairs(s["score-ranks"]) == {"ramp": f"{12 - 9}/11", "entropy": f"{int(_brute_ranks(E)[2, 1])}/12"}
    table = re.search(r'id="sc-scores-body">(.*?)</tbody>', dom, re.S).group(1)
    cells = [htmllib.unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", table)]
    assert cells[:3] == ["ramp", str(shown["ramp"]), "3 of 11"] and cells[3] == "entropy"
    assert 'title="mean row entropy"' in table
    # the head without a value: no rank; the state says nan
    dom, _ = dump_dom(page, "#layer=0&head=0")
    s = viewer_state(dom, "sc")
    assert state_pairs(s["scores"])["ramp"] == "nan" and state_pairs(s["score-ranks"])["ramp"] == "-"
