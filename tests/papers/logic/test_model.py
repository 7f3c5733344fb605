"""The trainable §4 model: the one-hot forward is eq. 2.28, masks are access patterns, the hand-built
solutions load exactly."""

import numpy as np
import pytest
import torch

from attnlab.errors import ConfigError
from attnlab.papers.logic.encoding import all_sequences, encode, random_sequences, targets
from attnlab.papers.logic.model import (LN_EPS, attention_t, chunked_mse, effective, hand_built_params, hidden_rows,
                                        init_params, masks, mse, predict, readout)
from attnlab.papers.logic.solutions import build, solution1_linear
from tolerances import FLOAT64, FLOAT64_LONG


def test_one_hot_forward_is_eq_2_28():
    N, M = 3, 5
    rng = np.random.default_rng(0)
    tok = random_sequences(N, M, 30, rng)
    p = init_params(N, M, torch.Generator().manual_seed(1))
    X = torch.as_tensor(encode(tok, N))
    dense = (X + attention_t(X, p["q"], p["k"], p["v"])).transpose(1, 2)
    assert float((hidden_rows(p, torch.as_tensor(tok), N) - dense).abs().max()) <= FLOAT64


@pytest.mark.parametrize("solution", ["1", "2", "3"])
def test_hand_built_weights_give_zero_mse_in_float64(solution):
    N, M = 3, 4
    rng = np.random.default_rng(2)
    q_true = rng.standard_normal((N, N))
    tok = all_sequences(N, M)  # all 81 sequences
    p = hand_built_params(build(solution, q_true, M))
    Y = torch.as_tensor(targets(tok, q_true))
    loss = mse(p, masks("combined", N, M), torch.as_tensor(tok), Y, N, norm="none")
    assert float(loss) < 1e-20
    # the paper's size: solution 2 at N = 10, M = 50
    q10 = rng.standard_normal((10, 10))
    tok10 = random_sequences(10, 50, 100, rng)
    p10 = hand_built_params(build("2", q10, 50))
    loss10 = mse(p10, masks("2", 10, 50), torch.as_tensor(tok10), torch.as_tensor(targets(tok10, q10)), 10, norm="none")
    assert float(loss10) < 1e-20


def test_masks_are_the_access_patterns_and_block_the_gradient():
    N, M = 3, 5
    d = N + M
    p = {k: v.requires_grad_(True) for k, v in init_params(N, M, torch.Generator().manual_seed(0)).items()}
    e2 = effective(p, masks("2", N, M))
    d2 = {k: t.detach() for k, t in e2.items()}
    A2 = d2["k"].T @ d2["q"]
    assert float(A2[N:].abs().max()) == 0 and float(A2[:, N:].abs().max()) == 0  # categories only
    assert float(d2["v"][:N].abs().max()) == 0 and float(d2["v"][:, :N].abs().max()) == 0  # positions only
    # system 2 keeps B full: the text restricts k, q, v only and puts in "a matrix B so as to have a compatible
    # architecture" (§4); B masked to its diagonal is the variant B="diagonal" (it was the default before issue 34)
    assert torch.equal(d2["B"], p["B"].detach())
    diag2 = effective(p, masks("2", N, M, B="diagonal"))["B"].detach()
    assert float((diag2[:d] - torch.diag(torch.diagonal(diag2[:d]))).abs().max()) == 0 and float(diag2[d:].abs().max()) == 0
    assert float(torch.diagonal(diag2[:d]).abs().min()) > 0
    e3 = {k: t.detach() for k, t in effective(p, masks("3", N, M)).items()}
    A3 = e3["k"].T @ e3["q"]
    assert float(A3[:N].abs().max()) == 0 and float(A3[:, :N].abs().max()) == 0
    # system 3's B is diagonal ("or no B (third solution)"): with B full it would be system 1, the same masks
    assert float((e3["B"][:d] - torch.diag(torch.diagonal(e3["B"][:d]))).abs().max()) == 0
    assert all(torch.equal(masks("3", N, M, B="full")[k], masks("1", N, M)[k]) for k in ("q", "k", "v", "B"))
    tok = torch.as_tensor(random_sequences(N, M, 10, np.random.default_rng(0)))
    predict(e2, tok, N).pow(2).sum().backward()
    assert float(p["v"].grad[:N].abs().max()) == 0 and float(p["v"].grad[N:, N:].abs().max()) > 0


def test_gauge_directions_do_not_change_the_output():
    N, M = 3, 5
    g = torch.cat([torch.ones(N), -torch.ones(M)]).double()
    p = init_params(N, M, torch.Generator().manual_seed(3))
    tok = torch.as_tensor(random_sequences(N, M, 20, np.random.default_rng(1)))
    y = predict(p, tok, N)
    w, u = torch.randn(N + M, dtype=torch.float64), torch.randn(N + M, dtype=torch.float64)
    # A -> A + g w^t through q -> q + c w^t with k^t c = g (k invertible); v -> v + u g^t + 1 u^t (LayerNorm)
    c = torch.linalg.solve(p["k"].T, g)
    p2 = dict(p, q=p["q"] + torch.outer(c, w), v=p["v"] + torch.outer(u, g) + torch.outer(torch.ones(N + M).double(), u))
    assert float((predict(p2, tok, N) - y).abs().max()) <= FLOAT64_LONG


def test_bad_inputs():
    with pytest.raises(ConfigError, match="system must be one of"):
        masks("4", 3, 5)
    with pytest.raises(ConfigError, match="B must be one of full, diagonal"):
        masks("2", 3, 5, B="none")
    with pytest.raises(ConfigError, match="no ReLU read-out"):
        hand_built_params(solution1_linear(np.arange(3), 5, 10.0))


def test_the_fused_layernorm_is_the_written_formula():
    """readout's LayerNorm: gamma (H - mean) / sqrt(var + eps) + beta, biased variance, per token row."""
    N, M = 4, 6
    p = init_params(N, M, torch.Generator().manual_seed(5))
    p["gamma"], p["beta"] = torch.linspace(0.5, 2, N + M, dtype=torch.float64), torch.linspace(-1, 1, N + M, dtype=torch.float64)
    H = torch.randn(7, M, N + M, dtype=torch.float64, generator=torch.Generator().manual_seed(6))
    mu, var = H.mean(-1, keepdim=True), H.var(-1, unbiased=False, keepdim=True)
    Z = p["gamma"] * (H - mu) / torch.sqrt(var + LN_EPS) + p["beta"]
    expected = torch.relu(Z @ p["B"].T + p["b"]) @ p["C"][0] + p["c0"]
    assert float((readout(H, p) - expected).abs().max()) <= FLOAT64


@pytest.mark.parametrize("rows", [1, 17, 60, 10_000])
def test_chunked_mse_is_mse_with_its_gradient(rows):
    N, M = 4, 6
    rng = np.random.default_rng(4)
    q_true = rng.standard_normal((N, N))
    tok = random_sequences(N, M, 23, rng)
    Y = torch.as_tensor(targets(tok, q_true))
    p = {k: v.requires_grad_(True) for k, v in init_params(N, M, torch.Generator().manual_seed(2)).items()}
    mk = masks("combined", N, M)
    whole = mse(p, mk, torch.as_tensor(tok), Y, N)
    g_whole = torch.autograd.grad(whole, list(p.values()))
    chunked = chunked_mse(effective(p, mk), torch.as_tensor(tok), Y, N, rows=rows)
    g = torch.autograd.grad(chunked, list(p.values()))
    assert abs(float((chunked - whole).detach())) <= FLOAT64
    for a, b in zip(g, g_whole):
        assert float((a - b).abs().max()) <= FLOAT64
