"""The relative residual per layer (rank-collapse.ablations' measurements), on hand-made states."""

import math

import pytest
import torch

from attnlab.papers.rank_collapse.ablation_curves import (COMPOSITE_KINDS, KINDS, OVERFLOW, BertBaseRuns, Curve,
                                                          composite_curves, layer_curves, measure_bert_base,
                                                          per_layer)
from tolerances import FLOAT64


def _states() -> list[torch.Tensor]:
    """Three states of B = 2 inputs, 3 x 2 each: X_0 with a residual, X_1 of equal rows (collapsed), X_2 = 2 X_0."""
    X0 = torch.tensor([[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], [[2.0, 0.0], [0.0, 0.0], [1.0, 3.0]]],
                      dtype=torch.float64)
    X1 = torch.ones(2, 3, 2, dtype=torch.float64)
    return [X0, X1, 2 * X0]


def _by_hand(X: torch.Tensor) -> float:
    """||X - 1 mean^T||_{1,inf} / ||X||_{1,inf}: sqrt(max column abs sum * max row abs sum) of each."""
    def composite(A: torch.Tensor) -> float:
        return math.sqrt(float(A.abs().sum(0).max() * A.abs().sum(1).max()))

    return composite(X - X.mean(0)) / composite(X)


def test_per_layer_is_the_mean_and_spread_over_the_inputs():
    mean, std = per_layer(_states(), "mean")
    first = [_by_hand(X) for X in _states()[0]]
    assert mean[0] == pytest.approx(sum(first) / 2, rel=FLOAT64)
    assert std[0] == pytest.approx(abs(first[0] - first[1]) / math.sqrt(2), rel=FLOAT64)  # Bessel: n - 1 = 1
    assert mean[1] == 0.0 and std[1] == 0.0  # equal rows: rank one
    assert mean[2] == pytest.approx(mean[0], rel=FLOAT64)  # scale-free
    one = per_layer([X[:1] for X in _states()], "mean")
    assert one[1] == [0.0, 0.0, 0.0]  # one input: no spread
    two = per_layer(_states(), "two")[0]
    assert all(0 <= y <= 1 + FLOAT64 for y in two) and two[1] == 0.0


def test_layer_curves_stop_before_an_overflowing_state():
    states = _states()
    c = layer_curves(states)
    assert c.overflow is None and len(c.by_layer) == 3 and c.last == c.by_layer[-1]
    assert [c.curve(k) for k in KINDS] == [c.token_mean, c.svd, c.two]
    assert set(c.to_dict()) == {*KINDS, "overflow"}
    big = layer_curves([states[0], states[1], states[2] * OVERFLOW * 10, states[0]])
    assert big.overflow == 2 and len(big.token_mean.mean) == 2
    nan = layer_curves([states[0], torch.full_like(states[0], float("nan"))])
    assert nan.overflow == 1 and nan.by_layer == c.by_layer[:1]


def test_composite_curves_never_above_the_token_mean():
    states = [X[:1] for X in _states()]  # one input: one linear program per state
    curves, gap = composite_curves(states)
    assert [k for k, _ in curves.items()] == list(COMPOSITE_KINDS)
    assert curves.token_mean == per_layer(states, "mean")[0]
    assert all(c <= m + 1e-8 for c, m in zip(curves.composite, curves.token_mean))
    assert 0.0 <= gap <= 1e-8 and curves.to_dict()["svd"] == curves.svd


def test_bert_base_runs_reads_one_value_per_draw():
    runs = BertBaseRuns([3, 4], {"text": {"SAN": [Curve([0.5, 0.1], [0.01, 0.02]), Curve([0.6, 0.2], [0.0, 0.03])]}},
                        texts=2, tokens=8)
    assert runs.at("text", "SAN", -1) == [0.1, 0.2] and runs.spread("text", "SAN", 1) == [0.02, 0.03]
    d = runs.to_dict()
    assert d["dtype"] == "float32" and d["seeds"] == [3, 4] and d["curves"]["text"]["SAN"][1]["mean"] == [0.6, 0.2]


@pytest.mark.slow  # draws BERT-base (110M parameters): ~10 s
def test_measure_bert_base_runs_each_variant_on_each_input():
    runs = measure_bert_base(seed=0, draws=1, texts=1, tokens=6)
    assert runs.seeds == [0] and (runs.texts, runs.tokens) == (1, 6)
    assert len(runs.curves["text"]["transformer"][0].mean) == 13  # X_0..X_12
    assert len(runs.curves["random ids"]["SAN"][0].mean) == 3  # the rows read layers 1 and 2 only
    assert runs.curves["text"]["SAN"][0].mean[0] == runs.curves["text"]["transformer"][0].mean[0]  # one X_0
