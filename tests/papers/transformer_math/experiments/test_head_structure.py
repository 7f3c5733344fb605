"""transformer-math.head-structure: fits, labels, baselines, and a tiny training run (synthetic corpus)."""

from __future__ import annotations

import pytest
import torch

from attnlab.errors import ConfigError
from attnlab.papers.transformer_math.experiments.head_structure import (
    EXPERIMENT_ID,
    LABELS,
    HeadStructureConfig,
    baselines,
    best_sigma,
    fit_all,
    fit_heads,
    label_head,
    random_search,
    run,
)
from attnlab.analysis.heads.maps import uniform_attention
from attnlab.papers.transformer_math.head_structure import sigma3, special_share
from attnlab.registry import get_experiment


def test_registered_with_presets():
    e = get_experiment(EXPERIMENT_ID)
    assert e.in_reproduce and e.config_cls is HeadStructureConfig
    quick, paper = HeadStructureConfig(), HeadStructureConfig(scale="paper")
    assert quick.heads == (1, 8) and quick.crop == 16 and quick.w_max == 3
    assert paper.epochs == 20 and paper.n_pairs > quick.n_pairs


def test_uniform_baseline_is_analytic():
    b = baselines(16, 3, draws=2, seed=0)
    # |U - I| = 2 (n - 1) over n rows: normalised (n - 1) / n; every one-hot family gives the same
    assert b.uniform["sigma1"] == pytest.approx(15 / 16, abs=1e-12)
    assert b.uniform["permutation"] == pytest.approx(15 / 16, abs=1e-12)
    # the best Sigma_2 member of U is the full band of width 7 in every interior row: strictly better
    assert b.uniform["sigma"] < b.uniform["sigma1"] - 0.2
    assert 0.5 < b.random["sigma"] < 0.8


def test_causal_heads_get_causal_baselines():
    """A causal map cannot weigh keys above the diagonal: causal uniform attention is already at 0.426 of the
    largest distance from Sigma, against 0.609 for bidirectional uniform attention."""
    causal, bidirectional = baselines(16, 3, draws=2, seed=0, causal=True), baselines(16, 3, draws=2, seed=0)
    assert causal.mask == "causal" and bidirectional.mask == "bidirectional"
    assert causal.uniform["sigma"] == pytest.approx(0.426, abs=5e-4)
    assert bidirectional.uniform["sigma"] == pytest.approx(0.609, abs=5e-4)
    assert causal.random["sigma"] < bidirectional.random["sigma"] - 0.1
    n = 16
    U = uniform_attention(n, causal=True)
    noisy = U  # a decoder head at chance: as far from Sigma as causal uniform attention is
    fits = fit_all(noisy, 3)
    d = {k: f.distance for k, f in fits.items()}
    d["sigma"] = best_sigma(fits).distance
    # at chance for a causal head; against the bidirectional baseline it would pass for structure
    assert label_head(d, n, causal.uniform["sigma"], 0.05) == "unstructured"
    assert label_head(d, n, bidirectional.uniform["sigma"], 0.05) != "unstructured"
    with pytest.raises(ConfigError, match="a causal head needs causal baselines"):
        fit_heads([noisy[None]], [torch.ones(n, dtype=torch.float64)], causal=True, cfg=HeadStructureConfig(),
                  seed=0, model="m", kind="decoder self", base=bidirectional)


def test_heads_on_special_tokens_are_not_rare_token_heads():
    """Every row on [CLS] (column 0): a Sigma_3 block on a special token is its own label."""
    n, b = 16, baselines(16, 3, draws=2, seed=0)
    H = 0.95 * torch.nn.functional.one_hot(torch.zeros(n, dtype=torch.long), n).double() + 0.05 / n
    fits = fit_all(H, 3)
    d = {k: f.distance for k, f in fits.items()}
    d["sigma"] = best_sigma(fits).distance
    share = special_share(fits["sigma3"], [0, n - 1])
    assert share == 1.0 and special_share(fits["sigma3"], []) == 0.0
    assert label_head(d, n, b.uniform["sigma"], 0.05, share) == "special-token"
    assert label_head(d, n, b.uniform["sigma"], 0.05) == "rare-token"  # what it was called without the positions


def test_exact_fit_never_above_random_search():
    g = torch.Generator().manual_seed(1)
    for _ in range(3):
        H = torch.softmax(3 * torch.randn(16, 16, generator=g, dtype=torch.float64), -1)
        d = best_sigma(fit_all(H, 3)).distance
        assert d <= random_search(H, 64, 3, seed=5) + 1e-9


def test_labels_of_constructed_heads():
    n, b = 16, baselines(16, 3, draws=2, seed=0)
    noise = torch.full((n, n), 0.01, dtype=torch.float64)

    def label(P):
        H = (P + noise) / (P + noise).sum(-1, keepdim=True)
        fits = fit_all(H, 3)
        d = {k: f.distance for k, f in fits.items()}
        d["sigma"] = best_sigma(fits).distance
        return label_head(d, n, b.uniform["sigma"], 0.05)

    assert label(torch.eye(n, dtype=torch.float64)) == "positional"
    assert label(torch.eye(n, dtype=torch.float64).roll(1, -1)) == "positional"  # a shift
    assert label(sigma3(n, [3, 11], [6, 6])) == "rare-token"
    band = sum(torch.eye(n, dtype=torch.float64).roll(k, -1) for k in (-1, 0, 1)) / 3
    assert label(band) == "syntactic"
    assert label(torch.ones(n, n, dtype=torch.float64)) == "unstructured"


def _tiny(seed=0):
    return HeadStructureConfig(corpus="synthetic", n_pairs=600, epochs=4, heads=(1, 2), d_model=16, d_ff=32,
                               lr=1e-2, batch_size=16, vocab_size=200, n_eval=2, search_draws=8, draws=2, minilm=False, seed=seed)


@pytest.mark.slow
def test_tiny_run_trains_fits_and_is_deterministic(storable):
    res = run(_tiny())
    storable(res)
    for t in res.data["training"]:
        assert t["heldout_loss"] < t["unigram_loss"] - 0.5  # nats per token
        assert t["epoch_losses"][1] < t["epoch_losses"][0]
    heads = res.data["heads"]
    assert len(heads) == 3 * (1 + 2)  # three kinds of maps per head
    for r in heads:
        assert r["d_sigma"] <= min(r["d_sigma1"], r["d_sigma2"], r["d_sigma3"]) + 1e-9
        assert r["d_sigma"] <= r["random_search"] + 1e-9
        assert 0.0 <= r["normalized"] <= 1.0 and r["normalized"] == pytest.approx(r["d_sigma"] / 32, abs=1e-12)
        assert 0.5 < r["mass_kept"] <= 1.0 + 1e-6  # float32 models
    for fr in res.data["fractions"].values():
        assert sum(fr[k] for k in LABELS) == pytest.approx(1.0, abs=1e-12)
    assert res.check("max over maps of (exact d_Sigma").verdict == "sanity"
    verdicts = {c.quantity: c.verdict for c in res.summary}
    # statements of the text about its trained model, on a 4-epoch model: not like for like
    assert all(v == "inconclusive" for q, v in verdicts.items() if "share of positional" in q or "closer to Sigma" in q)
    assert {r["mask"] for r in heads if r["kind"] == "decoder self"} == {"causal"}
    assert {r["mask"] for r in heads if r["kind"] != "decoder self"} == {"bidirectional"}
    assert [f.file for f in res.figures][:2] == ["fig11-one-head.png", "fig12-heads-encoder.png"]
    again = run(_tiny())
    assert again.data["heads"] == heads and again.data["training"][0]["epoch_losses"] == \
        res.data["training"][0]["epoch_losses"]


@pytest.mark.slow
def test_minilm_heads_are_fitted():
    from attnlab.papers.transformer_math.experiments.head_structure import _minilm

    cfg = HeadStructureConfig(corpus="synthetic", n_eval=1, search_draws=4, draws=2)
    rows, tokens, n = _minilm(cfg, {"bidirectional": baselines(16, 3, draws=2, seed=0)})
    assert n == 1 and len(tokens) == 16 and tokens[0] == "[CLS]" and tokens[-1] == "[SEP]"
    assert len(rows) == 72 and {r["kind"] for r in rows} == {f"layer {k}" for k in range(6)}
    assert all(r["mass_kept"] == 1.0 and r["d_sigma"] <= r["random_search"] + 1e-9 for r in rows)
    labels = [r["label"] for r in rows]
    # heads parked on [CLS]/[SEP] are special-token heads, not rare-token heads (Voita's rule finds none)
    assert labels.count("special-token") >= 30 and labels.count("rare-token") <= 5
    assert all(r["special_share"] >= 0.5 for r in rows if r["label"] == "special-token")


@pytest.mark.parametrize("kwargs, message", [
    ({"corpus": "opus"}, "corpus must be one of"),
    ({"heads": (3,), "d_model": 64}, "divisible by every head count"),
    ({"crop": 40}, "crop=40 exceeds the longest sentence"),
    ({"heldout_fraction": 0.0}, "heldout_fraction"),
    ({"w_max": 16}, "w_max"),
    ({"n_pairs": 5}, "n_pairs"),
])
def test_bad_config(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        HeadStructureConfig(**kwargs)
