"""§3.3: the category-only attention read on the diagonal: its loss, the intended family, Delta Q,
the degenerate table and the extra stationary points."""

import numpy as np
import pytest
import torch

from attnlab.errors import ConfigError
from attnlab.papers.logic import category_attention as ca
from tolerances import FLOAT64, FLOAT64_LONG


def _autograd(q, v, pop):
    q = torch.tensor(q, requires_grad=True)
    v = torch.tensor(v, requires_grad=True)
    E = ca.expected_sse(q, v, pop)
    return (E, *torch.autograd.grad(E.sum(), (q, v)))


@pytest.mark.parametrize("N,M,p", [(3, 3, None), (3, 4, (0.5, 0.3, 0.2)), (2, 5, (0.9, 0.1))])
def test_closed_form_gradient_equals_autograd(N, M, p):
    rng = np.random.default_rng(N + M)
    pop = ca.population(rng.standard_normal((N, N)), M, None if p is None else np.array(p))
    assert pop.weights.sum() == pytest.approx(1.0, abs=1e-14)
    q, v = rng.standard_normal((5, N, N)), rng.standard_normal((5, M, M))
    E, aq, av = _autograd(q, v, pop)
    E2, gq, gv = ca.batched_loss_gradient(torch.tensor(q), torch.tensor(v), *ca._moments(pop, "cpu"))
    scale = max(1.0, aq.abs().max().item(), av.abs().max().item())
    assert (E - E2).abs().max().item() <= FLOAT64 * E.abs().max().item()
    assert max((aq - gq).abs().max().item(), (av - gv).abs().max().item()) <= FLOAT64 * scale
    assert av[:, 0].abs().max().item() == 0.0  # row 1 of v has no target


def test_prediction_is_the_diagonal_of_attention():
    rng = np.random.default_rng(0)
    N, M = 3, 4
    pop = ca.population(rng.standard_normal((N, N)), M)
    q, v = rng.standard_normal((N, N)), rng.standard_normal((M, M))
    s = 17
    X = np.eye(N)[pop.tokens[s]].T  # X_C, N x M
    att = (X.T @ q.T @ X) @ v.T  # Q K^t V with Q = X_C^t q^t, K = X_C^t, V = X_P^t v^t (X_P = I)
    Yh = ca.predict(torch.tensor(q)[None], torch.tensor(v)[None], torch.as_tensor(pop.pair))[0, s].numpy()
    assert np.abs(np.diag(att) - Yh).max() <= FLOAT64


@pytest.mark.parametrize("lam,mu", [(1.0, 0.0), (0.7, 0.4), (-1.5, 0.6), (2.0, -0.5)])
def test_intended_family_and_the_texts_second_family_are_exact(lam, mu):
    rng = np.random.default_rng(1)
    q_true = rng.standard_normal((3, 3))
    pop = ca.population(q_true, 3)
    q, v = ca.intended(q_true, 3, lam, mu)
    assert ca.loss_and_gradient(q, v, pop)[0] <= 1e-28
    d = ca.family_distance(q, v, q_true)
    assert d.distance <= FLOAT64 and d.lam == pytest.approx(lam, abs=FLOAT64)
    assert d.mu == pytest.approx(mu / lam, abs=FLOAT64)
    assert ca.delta_Q(q) * lam ** 2 == pytest.approx(ca.delta_Q(q_true), rel=FLOAT64)
    # the text's family after eq. 3.71: q = q_true + a(t), a(t) = -v_ii q_true(t, t) / (1 + v_ii), v_i(i-1) = 1
    for m in (0.0, 0.5, -0.4, mu):
        qt, vt = ca.text_second_family(q_true, 3, m)
        assert ca.loss_and_gradient(qt, vt, pop)[0] <= 1e-28
        a = -m * np.diag(q_true) / (1 + m)
        assert np.abs(qt - (q_true + a[None, :])).max() == 0 and np.abs(vt - (np.eye(3, k=-1) + m * np.eye(3))).max() == 0
        q1, v1 = ca.intended(q_true, 3, 1.0, m)  # the same family at lambda = 1
        assert np.abs(qt - q1).max() <= FLOAT64 and np.abs(vt - v1).max() == 0
    # reading the line before eq. 3.71 literally (q and q_true swapped) is not exact
    assert ca.loss_and_gradient(*ca.swapped_reading(q_true, 3, 0.5), pop)[0] > 0.05


def test_delta_Q_is_the_expectation_and_vanishes_on_constant_columns():
    rng = np.random.default_rng(2)
    p = np.array([0.2, 0.5, 0.3])
    q = rng.standard_normal((3, 3))
    pop = ca.population(q, 3, p)  # Y_i = q(X_{i-1}, X_i): E[Y_2^2] and E[q(X_1, X_3) q(X_2, X_3)] by enumeration
    t = pop.tokens
    w = pop.weights
    direct = (w * q[t[:, 0], t[:, 1]] ** 2).sum() - (w * q[t[:, 0], t[:, 2]] * q[t[:, 1], t[:, 2]]).sum()
    assert ca.delta_Q(q, p) == pytest.approx(direct, abs=FLOAT64)
    g = ca.degenerate_q_true(rng.standard_normal(3))
    assert abs(ca.delta_Q(g, p)) <= 1e-15


def test_degenerate_minimum_and_v_zero_stationary_points():
    rng = np.random.default_rng(3)
    g = ca.degenerate_q_true(rng.standard_normal(3))
    E, gq, gv = ca.loss_and_gradient(*ca.degenerate_minimum(g, 4), ca.population(g, 4))
    assert E <= FLOAT64 and max(np.abs(gq).max(), np.abs(gv).max()) <= FLOAT64
    q_true = rng.standard_normal((3, 3))
    pop = ca.population(q_true, 4)
    assert ca.loss_and_gradient(*ca.degenerate_minimum(q_true, 4), pop)[0] > 0.1
    q = ca.v_zero_stationary(pop, q_true, rng)
    E, gq, gv = ca.loss_and_gradient(q, np.zeros((4, 4)), pop)
    assert max(np.abs(gq).max(), np.abs(gv).max()) <= FLOAT64 and np.abs(q).max() > 0.1
    assert E == pytest.approx((pop.weights[:, None] * pop.Y[:, 1:] ** 2).sum(), abs=FLOAT64)


def test_bad_input():
    with pytest.raises(ConfigError):
        ca.population(np.zeros((3, 2)), 3)
    with pytest.raises(ConfigError):
        ca.population(np.zeros((3, 3)), 2)
    with pytest.raises(ConfigError):
        ca.population(np.zeros((3, 3)), 3, np.array([0.5, 0.5, 0.5]))
    with pytest.raises(ConfigError):
        ca.intended(np.zeros((3, 3)), 3, 1.0, -1.0)
    with pytest.raises(ConfigError):
        ca.descend(np.zeros((3, 3)), 3, 0, 0)


def test_descent_generic_reaches_the_family_degenerate_does_not():
    rng = np.random.default_rng(0)
    q_true, g = rng.standard_normal((3, 3)), ca.degenerate_q_true(rng.standard_normal(3))
    r = ca.descend(q_true, 3, 32, 0)
    reached = (r.loss <= 1e-6) & (r.distance <= 1e-2)
    assert reached.mean() >= 0.75 and r.delta_Q[reached].min() > 0.1
    r = ca.descend(g, 3, 32, 0)
    assert (r.loss <= 1e-6).mean() >= 0.75 and (r.distance <= 1e-2).mean() <= 0.25


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_matches_cpu():
    q_true = np.random.default_rng(4).standard_normal((3, 3))
    a, b = ca.descend(q_true, 3, 4, 2, steps=50), ca.descend(q_true, 3, 4, 2, steps=50, device="cuda")
    assert np.abs(a.q - b.q).max() <= FLOAT64_LONG and np.abs(a.v - b.v).max() <= FLOAT64_LONG
