"""The scaled and unscaled copy models trained side by side, and one run's numbers from their histories."""

from __future__ import annotations

import math

import pytest

from attnlab.papers.transformer_math.experiments.scaling import ScalingConfig
from attnlab.papers.transformer_math.scaling_training import History, scalars_of, train_pair, variant_scalars
from tolerances import FLOAT64


def test_train_pair_measures_both_models_at_the_same_steps_and_logs_each():
    cfg = ScalingConfig(d_head=8, n=5, V=7, steps=4, eval_every=2, eval_batch=32, batch=16, seed=1)
    logged = []
    history = train_pair(cfg, logged.append)
    assert list(history) == ["scaled", "unscaled"]
    assert history["scaled"].step == history["unscaled"].step == (0, 2, 4)
    assert [(r["variant"], r["step"]) for r in logged] == [(k, s) for s in (0, 2, 4) for k in ("scaled", "unscaled")]
    assert list(logged[0])[:4] == ["d_head", "seed", "variant", "step"] and logged[0]["d_head"] == 8
    assert logged[0]["loss"] == history["scaled"].loss[0]
    assert train_pair(cfg).keys() == history.keys()  # no log: nothing to call


def test_variant_scalars_read_the_history():
    cfg = ScalingConfig(d_head=8, n=5, V=7, steps=30, eval_every=10, loss_threshold=0.1)
    h = History(step=(0, 10, 20, 30), loss=(2.0, 0.5, 0.08, 0.05), accuracy=(0.1, 0.6, 0.97, 0.99),
                entropy=(1.5, 1.0, 0.4, 0.3), grad_norm=(0.3, 0.2, 0.1, 0.05))
    v = variant_scalars(cfg, h)
    assert (v.steps_to_threshold, v.reached_threshold, v.final_loss, v.initial_entropy) == (20, True, 0.05, 1.5)
    never = variant_scalars(cfg, History(step=(0, 30), loss=(2.0, 1.0), accuracy=(0.1, 0.5), entropy=(1.5, 1.0),
                                         grad_norm=(0.3, 0.2)))
    assert (never.steps_to_threshold, never.reached_threshold) == (31, False)  # steps + 1: never
    sc = scalars_of(cfg, {"scaled": h, "unscaled": h})
    assert sc["max_entropy"] == pytest.approx(math.log(5), abs=FLOAT64)
    assert sc["unscaled_steps_to_threshold"] == 20 and len(sc) == 2 * 9 + 1
