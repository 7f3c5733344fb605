"""The translators trained and fitted, and the training's wall-time estimate from timed steps."""

from __future__ import annotations

import pytest

import attnlab.papers.transformer_math.translation_heads as th
from attnlab.papers.transformer_math.experiments.head_structure import HeadStructureConfig
from attnlab.papers.transformer_math.sigma_fits import MASKS, baselines
from tolerances import FLOAT64


def test_training_seconds_shares_the_head_counts_among_the_workers(monkeypatch):
    """Steps x the timed step per head count (here H seconds for H heads), longest first to the least loaded
    worker; synthetic: 600 pairs, 60 held out, 540 / 16 -> 34 steps per epoch."""
    monkeypatch.setattr(th, "timed_step_seconds", lambda cfg, H: float(H))
    cfg = HeadStructureConfig(corpus="synthetic", n_pairs=600, epochs=2, heads=(1, 2, 8), d_model=16, d_ff=32,
                              batch_size=16, vocab_size=200)
    steps = 2 * 34
    assert th.training_seconds(cfg, 1) == pytest.approx(steps * 11, abs=FLOAT64)
    # two workers: 8 on one, then 2 and 1 on the other; the slower of the two, times the slowdown
    assert th.training_seconds(cfg, 2) == pytest.approx(steps * 8 * th.PARALLEL_SLOWDOWN, abs=FLOAT64)


@pytest.mark.slow
def test_fit_translation_heads_at_a_tiny_config():
    cfg = HeadStructureConfig(corpus="synthetic", n_pairs=600, epochs=1, heads=(1, 2), d_model=16, d_ff=32,
                              batch_size=16, vocab_size=200, n_eval=1, search_draws=4, draws=2, minilm=False,
                              workers=1)
    base = {m: baselines(cfg.crop, cfg.w_max, 2, 0, causal=m == "causal") for m in MASKS}
    tr = th.fit_translation_heads(cfg, base)
    assert tr.sizes[:3] == (540, 60, 1) and [t.n_heads for t in tr.models] == [1, 2]
    assert len(tr.rows) == 3 * (1 + 2) and set(tr.figure_maps) == {(H, k) for H in (1, 2)
                                                                    for k in ("encoder self", "decoder self", "cross")}
    rows, queries, keys = tr.figure_maps[(1, "decoder self")]
    assert queries == keys and queries[0] == "<s>" and len(keys) == cfg.crop and rows[0].mask == "causal"
    assert all(0.0 < r.mass_kept <= 1.0 + 1e-6 for r in tr.rows)
