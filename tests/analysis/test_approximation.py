"""attnlab.analysis.approximation: errors, lost mass and ranks on hand-derived cases."""

from __future__ import annotations

import math

import pytest
import torch

from attnlab.analysis.approximation import (
    attention_errors,
    compare_to_exact,
    effective_rank,
    lost_mass,
    projection_action_errors,
    sparse_output_bound,
    stable_rank,
)
from attnlab.errors import ConfigError

F64 = dict(dtype=torch.float64)


def test_errors_by_hand():
    """P = I_2, P^ = uniform: D = [[1/2, -1/2], [-1/2, 1/2]] has ||D||_F = 1 and one singular
    value 1; each row's TV is 1/2; with V = I, ||D V||_F / ||P V||_F = 1 / sqrt(2)."""
    P, P_hat, V = torch.eye(2, **F64), torch.full((2, 2), 0.5, **F64), torch.eye(2, **F64)
    e = attention_errors(P, P_hat, V)
    assert e["frobenius"].item() == pytest.approx(1.0, abs=1e-15)
    assert e["spectral"].item() == pytest.approx(1.0, abs=1e-15)
    assert e["max_row_tv"].item() == pytest.approx(0.5, abs=1e-15)
    assert e["rel_output_error"].item() == pytest.approx(1 / math.sqrt(2), abs=1e-15)


def test_errors_are_batched_and_zero_for_equal_matrices():
    g = torch.Generator().manual_seed(0)
    P = torch.softmax(torch.randn(3, 5, 7, 7, generator=g, **F64), -1)
    V = torch.randn(7, 2, generator=g, **F64)
    e = attention_errors(P, P, V)
    assert all(x.shape == (3, 5) and (x == 0).all() for x in e.values())
    e1 = attention_errors(P, P.flip(-1), V)
    single = attention_errors(P[2, 4], P[2, 4].flip(-1), V)
    assert all(e1[k][2, 4].item() == pytest.approx(single[k].item(), rel=1e-14) for k in e1)


def test_sparse_softmax_row_tv_equals_lost_mass_and_bound_holds():
    """P^_i = P_i 1[N(i)] / (1 - L_i): ||P_i - P^_i||_1 = 2 L_i, ||(P - P^)_i V|| <= 2 L_i max||v_j||."""
    g = torch.Generator().manual_seed(1)
    logits = torch.randn(4, 11, 11, generator=g, **F64) * 2
    allowed = torch.rand(4, 11, 11, generator=g) < 0.4
    allowed |= torch.eye(11, dtype=torch.bool)  # every row keeps at least one key
    P = torch.softmax(logits, -1)
    P_hat = torch.softmax(logits.masked_fill(~allowed, -torch.inf), -1)
    V = torch.randn(11, 3, generator=g, **F64)
    L = lost_mass(P, allowed)
    assert L.shape == (4, 11) and (L > 0).any()
    tv_rows = 0.5 * (P - P_hat).abs().sum(-1)
    assert (tv_rows - L).abs().max().item() <= 1e-14
    row_err = ((P - P_hat) @ V).norm(dim=-1)
    assert (row_err <= sparse_output_bound(P, allowed, V) + 1e-14).all()
    row = compare_to_exact(P[0], P_hat[0], V, allowed=allowed[0])
    assert row["max_row_tv"] == pytest.approx(row["max_lost_mass"], abs=1e-14)
    assert row["max_error_over_bound"] <= 1 and row["max_excess_over_bound"] <= 1e-14
    assert row["density"] == pytest.approx(allowed[0].double().mean().item())


def test_ranks_by_hand():
    I5 = torch.eye(5, **F64)
    assert stable_rank(I5).item() == pytest.approx(5.0, abs=1e-13)
    assert effective_rank(I5).item() == pytest.approx(5.0, abs=1e-13)
    u = torch.arange(1.0, 6.0, **F64)
    R1 = torch.outer(u, u.flip(0))
    assert stable_rank(R1).item() == pytest.approx(1.0, abs=1e-13)
    assert effective_rank(R1).item() == pytest.approx(1.0, abs=1e-9)  # other s_i ~ 1e-16
    D = torch.diag(torch.tensor([3.0, 1.0], **F64))  # s = (3, 1): stable 10/9, p = (3/4, 1/4)
    assert stable_rank(D).item() == pytest.approx(10 / 9, abs=1e-14)
    H = -(0.75 * math.log(0.75) + 0.25 * math.log(0.25))
    assert effective_rank(D).item() == pytest.approx(math.exp(H), abs=1e-14)
    assert stable_rank(torch.zeros(3, 3, **F64)).item() == 0 and effective_rank(torch.zeros(3, 3, **F64)).item() == 0
    assert stable_rank(torch.stack([I5, R1])).shape == (2,)


def test_projection_action_errors_shape_and_rate():
    """Nested draws: the RMS error over 400 draws falls by sqrt(4) = 2 from k' = 8 to 32, within 10%."""
    g = torch.Generator().manual_seed(2)
    P = torch.softmax(torch.randn(37, 37, generator=g, **F64), -1)
    w = torch.randn(37, generator=g, **F64) + 1
    err = projection_action_errors(P, w, [8, 32], draws=400, generator=g)
    assert err.shape == (2, 400) and (err > 0).all()
    rms = err.pow(2).mean(-1).sqrt()
    assert (rms[0] / rms[1]).item() == pytest.approx(2.0, rel=0.1)


@pytest.mark.parametrize("call,fragment", [
    (lambda: attention_errors(torch.eye(3, **F64), torch.eye(4, **F64), torch.eye(3, **F64)), "same shape"),
    (lambda: attention_errors(torch.eye(3, **F64), torch.eye(3, **F64), torch.eye(4, **F64)), "n_k=3"),
    (lambda: attention_errors(torch.ones(3, **F64), torch.ones(3, **F64), torch.eye(3, **F64)), "two axes"),
    (lambda: lost_mass(torch.eye(3, **F64), torch.ones(3, 3)), "boolean"),
    (lambda: lost_mass(torch.eye(3, **F64), torch.ones(2, 2, dtype=torch.bool)), "does not broadcast"),
    (lambda: projection_action_errors(torch.eye(3, **F64), torch.ones(3, **F64), [4], draws=2,
                                      generator=torch.Generator()), "1..n=3"),
    (lambda: projection_action_errors(torch.eye(3, **F64), torch.ones(3, **F64), [2], draws=0,
                                      generator=torch.Generator()), "draws"),
    (lambda: compare_to_exact(torch.eye(3, **F64)[None], torch.eye(3, **F64)[None], torch.eye(3, **F64)), "one"),
])
def test_config_errors(call, fragment):
    with pytest.raises(ConfigError) as e:
        call()
    assert fragment in str(e.value) and "\n" not in str(e.value)
