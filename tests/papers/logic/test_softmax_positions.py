"""§3.2: the softmax model's exact E[SSE], its stationary conditions and gradient descent to (D_-1, I)."""

import numpy as np
import pytest
import torch

from attnlab.errors import ConfigError
from attnlab.papers.logic import gradients
from attnlab.papers.logic.softmax_positions import (
    descend,
    expected_sse,
    expected_sse_moments,
    intended,
    second_moments,
    softmax_columns,
    stationary_conditions,
)
from tolerances import FLOAT64, FLOAT64_LONG


@pytest.mark.parametrize("N,M", [(3, 4), (2, 5)])
def test_three_forms_of_the_expectation_agree(N, M):
    g = torch.Generator().manual_seed(N + M)
    L = torch.randn(4, M, M, generator=g, dtype=torch.float64)
    v = torch.randn(4, N, N, generator=g, dtype=torch.float64)
    q = softmax_columns(L)
    assert torch.all(q >= 0) and torch.allclose(q.sum(dim=1), torch.ones(4, M, dtype=torch.float64), atol=1e-15, rtol=0)
    XC = gradients.one_hot_categories(N, M)
    enum, mom = expected_sse(q, v, XC), expected_sse_moments(q, v, second_moments(XC))
    ref = torch.stack([gradients.expected_sse(q[b], v[b], XC) for b in range(4)])
    assert (enum - ref).abs().max().item() <= FLOAT64 * ref.abs().max().item()
    assert (mom - ref).abs().max().item() <= FLOAT64 * ref.abs().max().item()


def test_the_intended_point_is_exact_and_meets_every_condition():
    N, M = 3, 4
    q, v = intended(N, M)
    q[0, 0] = 1.0
    XC = gradients.one_hot_categories(N, M)
    assert expected_sse(torch.tensor(q)[None], torch.tensor(v)[None], XC).item() == 0.0
    c = stationary_conditions(q, v)
    assert c.lagrange <= FLOAT64 and c.grad_v <= FLOAT64 and c.row_sum_spread <= FLOAT64
    assert c.delta_q == pytest.approx(1.0, abs=FLOAT64) and c.delta_v == pytest.approx(1.0, abs=FLOAT64)
    # a uniform q is no stationary point: its column gradients differ (Tr v / N != 1^t v 1 / N^2 at v = I)
    c = stationary_conditions(np.full((M, M), 1 / M), v)
    assert c.lagrange == pytest.approx(2 * (1 - 1 / N), abs=FLOAT64)


def test_short_descent_moves_towards_the_solution():
    r = descend(3, 4, 8, 5, steps=400)
    assert r.q.shape == (8, 4, 4) and r.v.shape == (8, 3, 3)
    assert np.allclose(r.q.sum(axis=1), 1.0, atol=1e-14)
    assert np.all(r.loss < r.loss_half) and np.all(r.distance < r.distance_half)
    assert r.distance.max() <= 0.08 and r.loss.max() <= 5e-3  # measured 0.062, 2.9e-3


def test_bad_input():
    with pytest.raises(ConfigError):
        descend(1, 4, 8, 0)
    with pytest.raises(ConfigError):
        descend(3, 4, 8, 0, lr=0.0)


def test_descent_reaches_the_solution_at_rate_t_to_the_minus_half():
    r = descend(3, 4, 32, 0)
    assert r.distance.max() <= 0.05 and r.loss.max() <= 1e-3
    assert np.median(r.distance_half / r.distance) == pytest.approx(np.sqrt(2), abs=0.1)
    assert np.median(r.loss_half / r.loss) == pytest.approx(2.0, abs=0.1)
    worst = max(abs(stationary_conditions(r.q[b], r.v[b]).delta_q_times_delta_v - 1) for b in range(32))
    assert worst <= 0.05


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_matches_cpu():
    a, b = descend(3, 4, 4, 2, steps=50), descend(3, 4, 4, 2, steps=50, device="cuda")
    assert np.abs(a.q - b.q).max() <= FLOAT64_LONG and np.abs(a.v - b.v).max() <= FLOAT64_LONG
