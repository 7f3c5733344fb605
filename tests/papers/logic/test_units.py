"""The feed-forward units: how many each hand-built solution needs, what gates them, and what removing a kind costs."""

import numpy as np
import pytest

from attnlab.checks import Bound
from attnlab.papers.logic import units as U
from attnlab.papers.logic.encoding import random_sequences, targets
from attnlab.papers.logic.model import hand_built_params
from attnlab.papers.logic.solutions import build
from tolerances import FLOAT64_LONG

N, M = 4, 7


@pytest.fixture(scope="module")
def hand():
    rng = np.random.default_rng(0)
    q = rng.standard_normal((N, N))
    tok = random_sequences(N, M, 300, rng)
    Y = targets(tok, q)
    return {s: U.units_needed(hand_built_params(build(s, q, M)), tok, Y, N, norm="none") for s in "123"}


def test_each_hand_built_solution_is_told_apart_by_its_units(hand):
    """Solution 3 needs its N category units, each on for one current category only; solution 2 its M positional
    units (9 = M + 2 for R^2 0.9: the greedy count also keeps two units of the offset, an upper bound); solution 1
    its pair detectors, each on for one previous category (measured: 8, 12, 14 of N^2 = 16 for R^2 0.9, 0.99, 0.999).
    A linear feed-forward breaks all three, so only this tells them apart."""
    s1, s2, s3 = hand["1"], hand["2"], hand["3"]
    assert all(u.r2_all >= 1 - FLOAT64_LONG for u in hand.values())
    assert [s3.needed[t] for t in U.R2_TARGETS] == [N, N, N]
    assert [s2.needed[t] for t in U.R2_TARGETS] == [M + 2] * 3
    assert [s1.needed[t] for t in U.R2_TARGETS] == [8, 12, 14]
    assert s3.share["current category"] >= 1 - FLOAT64_LONG and s3.share["previous category"] < 0.5
    assert s1.share["previous category"] >= 1 - FLOAT64_LONG and s1.share["current category"] < U.GATED
    assert s2.share["position"] > 0.8 and s2.share["current category"] < 0.5
    # the kinds of unit, and what the model loses without each: only its own kind costs anything, all of Var(Y)
    assert (s1.types["1"], s2.types["2"], s3.types["3"]) == (N * N, M, N)
    for s, u in hand.items():
        assert u.cost[s] == pytest.approx(1.0, abs=FLOAT64_LONG)
        assert all(abs(u.cost[t]) <= FLOAT64_LONG for t in "123" if t != s)


def test_greedy_keeps_the_units_that_explain_y_and_refits_the_read_out():
    rng = np.random.default_rng(1)
    c = rng.standard_normal((500, 4))
    y = 3 * c[:, 2] - 0.5 * c[:, 0] + 7.0  # units 2 then 0; the scales and the offset are refitted
    order, r2 = U.greedy_r2(c, y)
    assert order[:2] == [2, 0] and r2[1] == pytest.approx(1.0, abs=FLOAT64_LONG) and r2[0] < 0.99
    assert len(order) == 2  # the selection stops where the kept units explain Y


def test_gating_shares_and_types():
    tokens = np.array([[0, 1, 2], [2, 1, 0], [1, 1, 1]])
    cur = (tokens.reshape(-1) == 1).astype(float)  # on when the current category is 1
    pos = np.tile([0.0, 0.0, 1.0], 3)  # on at the last position
    mixed = np.ones(9)  # always on
    g = U.gating(np.stack([cur, pos, mixed], axis=1), tokens, 3)
    assert g["current category"].tolist() == [1.0, pytest.approx(1 / 3), pytest.approx(5 / 9)]  # 5 of 9 tokens are category 1
    assert g["position"][1] == 1.0 and g["position"][2] == pytest.approx(1 / 3)
    assert U.unit_types(g).tolist() == ["3", "2", "-"]


def test_removing_units_whose_sum_is_constant_costs_nothing():
    rng = np.random.default_rng(2)
    onehot = np.eye(3)[rng.integers(0, 3, 200)]
    y = rng.standard_normal(200)
    c = np.concatenate([-2.0 * onehot, y[:, None]], axis=1)  # three offset units summing to -2, one carrying y
    kept = np.array([True, True, True, False])
    assert abs(U.removal_cost(c, y, kept)) <= FLOAT64_LONG
    assert U.removal_cost(c, y, ~kept) == pytest.approx(1.0)


def test_a_target_never_reached_is_a_bound():
    tokens = np.zeros((5, 4), dtype=int)
    tokens[:, 1] = 1
    import torch

    p = {"q": torch.zeros(6, 6), "k": torch.zeros(6, 6), "v": torch.zeros(6, 6), "gamma": torch.ones(6),
         "beta": torch.zeros(6), "B": torch.eye(6), "b": torch.zeros(6), "C": torch.ones(1, 6), "c0": torch.zeros(1)}
    y = np.random.default_rng(3).standard_normal((5, 4))  # not a function of the tokens: no unit can explain it
    u = U.units_needed(p, tokens, y, 2, norm="none")
    assert all(isinstance(u.needed[t], Bound) and u.needed[t].lower == 6 for t in U.R2_TARGETS)


def test_a_linear_feed_forward_breaks_every_hand_built_solution():
    """Why the ReLU ablation cannot say which solution a model uses: without the ReLU every hand-built solution
    loses far more than Var(Y) (measured at N = 4, M = 7: 1.6e3, 1.4e3 and 347 Var(Y) for solutions 1, 2, 3; at
    N = 10, M = 50, seeds 0-4: 3.2e3 to 1.7e5), while the units tell them apart (the test above)."""
    import torch

    from attnlab.papers.logic.mechanism import ablated_predict, relative_mse

    rng = np.random.default_rng(0)
    q = rng.standard_normal((N, N))
    tok = random_sequences(N, M, 300, rng)
    T, Y = torch.as_tensor(tok), torch.as_tensor(targets(tok, q))
    lost = [relative_mse(ablated_predict(hand_built_params(build(s, q, M)), T, N, "linear feed-forward", norm="none"),
                         Y) for s in "123"]
    assert min(lost) > 100
