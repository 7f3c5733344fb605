"""Proposition 3's network, counts, bounds and the proof's reduction (App. F), in float64."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnlab.papers.memorization.fcn import (
    attention_parameter_count,
    check_reduction,
    draw_eq29_dataset,
    extended_dataset,
    fcn_forward,
    fcn_parameter_count,
    homogeneity_bound,
    init_fcn,
    kink_through_data,
    matched_hidden_width,
    max_examples,
    output_jacobian_rank,
    proposition3_bound,
    train_fcn,
)
from attnlab.errors import ConfigError
from tolerances import FLOAT64


def test_forward_by_hand():
    # d_1 = 2, m = 2, d_out = 1: hidden = ReLU([1, -2] + [0, 1]) = [1, 0]; y = 3 * 1 + 0 * 5 + 0.5
    p = {"W_1": torch.tensor([[1.0, 0.0], [0.0, -1.0]], dtype=torch.float64),
         "b_1": torch.tensor([0.0, 1.0], dtype=torch.float64),
         "W_2": torch.tensor([[3.0], [5.0]], dtype=torch.float64), "b_2": torch.tensor([0.5], dtype=torch.float64)}
    y = fcn_forward(p, torch.tensor([[1.0, 2.0]], dtype=torch.float64))
    assert y.shape == (1, 1) and abs(y.item() - 3.5) < FLOAT64


def test_counts_and_bounds_by_hand():
    assert fcn_parameter_count(24, 7, 1) == 25 * 7 + 8 == 183
    assert attention_parameter_count(4, 6, 3, 1, 1) == 2 * 4 * 6 * 3 + 4 * 6 + 4 * 6 + 6 == 198
    m = matched_hidden_width(4, 6, 3, 3, 1, 1)  # (n+1)d = 24 inputs
    assert m == 7 and fcn_parameter_count(24, m, 1) <= 198 < fcn_parameter_count(24, m + 1, 1)
    assert proposition3_bound(3, 7, 1) == 4 * 7 + 7 + 1 == 36
    assert homogeneity_bound(3, 7, 1) == 3 * 7 + 7 + 1 == 29
    assert proposition3_bound(3, 7, 2) == 4 * 7 / 2 + 8 == 22 and max_examples(proposition3_bound(2, 3, 2)) == 8


def test_extended_dataset_is_eq_29():
    x = np.arange(6.0).reshape(2, 3) + 1  # T = 2, n = 3
    E, e, x_FCN, c_FCN = extended_dataset(x, 5)
    assert np.array_equal(E, np.eye(3, 5))
    assert np.array_equal(e, [[0, 0, 1, 2, 3], [0, 0, 4, 5, 6]])
    assert np.array_equal(c_FCN, np.concatenate([np.eye(3, 5).ravel(), [0, 0]])) and c_FCN.shape == (4 * 5 - 3,)
    assert np.array_equal(x_FCN, np.concatenate([np.tile(c_FCN, (2, 1)), x], axis=1)) and x_FCN.shape == (2, 20)


def test_eq29_draw_is_seeded_by_seed_and_T():
    E, e, x_FCN, y = draw_eq29_dataset(6, 2, 5, 3, seed=4)
    rng = np.random.default_rng([4, 6])  # x first, then y, from one generator
    x = rng.standard_normal((6, 2))
    assert np.array_equal(y, rng.standard_normal((6, 3)))
    assert np.array_equal(e, extended_dataset(x, 5)[1]) and np.array_equal(E, np.eye(2, 5))
    assert x_FCN.shape == (6, 15) and np.array_equal(x_FCN[:, -2:], x)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("T, n, d, m, d_out", [(11, 3, 7, 5, 2), (13, 2, 5, 3, 1)])
def test_reduction_identity_and_assumptions(T, n, d, m, d_out, seed):
    r = check_reduction(T, n, d, m, d_out, seed)
    assert r["max_abs_error"] <= FLOAT64 * max(1.0, r["output_scale"])
    assert r["max_abs_error_paper_sign"] > 1e-3  # the printed minus sign breaks the identity
    assert r["assumption1"] and r["kruskal_rank_queries"] == n  # Gaussian x in R^n: general position
    assert r["assumption2"] and r["rank_E"] == n


def test_jacobian_rank_is_the_homogeneous_count():
    # outputs on T = 40 points move in n m + m d_out + d_out = 17 directions, not (n+1) m + (m+1) d_out = 21
    n, d, m = 3, 5, 4
    x = np.random.default_rng(3).standard_normal((40, n))
    _, _, x_FCN, _ = extended_dataset(x, d)
    gen = torch.Generator().manual_seed(3)
    for inputs in (torch.from_numpy(x), torch.from_numpy(x_FCN)):  # f_n and f_(n+1)d alike
        p = init_fcn(inputs.shape[1], m, 1, gen)
        p["b_1"] = kink_through_data(p["W_1"], inputs, gen)
        assert output_jacobian_rank(p, inputs) == n * m + m + 1 == 17


def test_training_memorizes_below_and_not_above_the_bound():
    n, d, m = 2, 4, 3  # Proposition 3 bound 3 * 3 + 3 + 1 = 13
    rng = np.random.default_rng(0)
    res = {}
    for T in (4, 26):
        x, y = rng.standard_normal((T, n)), rng.standard_normal((T, 1))
        x_FCN = torch.from_numpy(extended_dataset(x, d)[2])
        res[T] = train_fcn(x_FCN, torch.from_numpy(y), m, restarts=2, steps=2, seed=0)
        fit = res[T]["params"]  # the reported residual is the best restart's, recomputed here
        r = (fcn_forward(fit, x_FCN) - torch.from_numpy(y)).norm() / np.linalg.norm(y)
        assert abs(r.item() - res[T]["residual"]) <= FLOAT64
    assert res[4]["residual"] <= 1e-8
    assert res[26]["residual"] >= 1e-2


@pytest.mark.parametrize("call, message", [
    (lambda: matched_hidden_width(1, 8, 4, 1, 1, 1), "fewer than an FCN with one hidden unit"),
    (lambda: extended_dataset(np.ones((3, 4)), 4), "the paper needs n < d"),
    (lambda: extended_dataset(np.ones(3), 4), "x must be a"),
    (lambda: fcn_parameter_count(0, 3, 1), "d_1 must be an integer >= 1"),
    (lambda: proposition3_bound(3, 2.5, 1), "m must be an integer >= 1"),
])
def test_bad_input(call, message):
    with pytest.raises(ConfigError, match=message):
        call()
