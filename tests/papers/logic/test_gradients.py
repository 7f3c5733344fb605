"""§3.1's gradient formulas against autograd of the exact expectation, and the stationary sets."""

import numpy as np
import pytest

from attnlab.papers.logic.gradients import (
    autograd_gradient,
    closed_form_gradient,
    expected_sse,
    one_hot_categories,
    stationary_points,
)
from tolerances import FLOAT64


@pytest.mark.parametrize("N,M", [(3, 4), (2, 5), (4, 3), (1, 3)])
def test_closed_form_equals_autograd(N, M):
    rng = np.random.default_rng(N * 7 + M)
    q, v = rng.standard_normal((M, M)), rng.standard_normal((N, N))
    cq, cv = closed_form_gradient(q, v)
    aq, av, _ = autograd_gradient(q, v)
    assert np.abs(cq - aq).max() <= FLOAT64 * max(1, np.abs(aq).max())
    assert np.abs(cv - av).max() <= FLOAT64 * max(1, np.abs(av).max())
    assert np.all(aq[:, 0] == 0)  # column 1 of q has no target


def test_expected_sse_at_the_solution_and_at_zero():
    import torch

    XC = one_hot_categories(3, 4)
    assert XC.shape == (81, 3, 4)
    q = torch.tensor(np.eye(4, k=1))
    assert expected_sse(q, torch.eye(3, dtype=torch.float64), XC).item() == 0.0
    assert expected_sse(q * 0, torch.eye(3, dtype=torch.float64), XC).item() == pytest.approx(3.0, abs=1e-15)


@pytest.mark.parametrize("N,M", [(3, 4), (2, 5)])
def test_stationary_sets(N, M):
    rng = np.random.default_rng(1)
    for name, (q, v) in stationary_points(N, M, rng).items():
        cq, cv = closed_form_gradient(q, v)
        assert max(np.abs(cq).max(), np.abs(cv).max()) <= FLOAT64, name
        if name.startswith("q=0"):
            assert abs(np.trace(v)) <= FLOAT64 and abs(v.sum()) <= FLOAT64 and np.abs(v).max() > 0.1
        if name.startswith("v=0"):
            assert abs(np.diagonal(q, 1).sum()) <= FLOAT64 and abs(q[:, 1:].sum()) <= FLOAT64 and np.abs(q).max() > 0.1
    q, v = stationary_points(N, M, rng)["q=0, Tr v = 1^t v 1 = 0"]
    v2 = v + np.eye(N) * 0.3  # Tr v != 0: the q-gradient no longer vanishes
    assert np.abs(closed_form_gradient(q, v2)[0]).max() == pytest.approx(2 * 0.3, abs=FLOAT64)
