"""The folded authors' model (keys="context") against autograd through authors_model, float64."""

import pytest
import torch
import torch.nn.functional as F

from attnlab.papers.memorization.authors_folded import (
    values_first,
    authors_loss_and_grads,
    folded_authors_logits,
)
from attnlab.papers.memorization.authors_model import authors_model, init_authors_model
from attnlab.papers.memorization.capacity_search import autograd_loss_and_grads
from attnlab.papers.memorization.data import draw_nested_dataset

REL = 1e-10  # float64, products reordered only


def _rel(a, b):
    return float((a - b).abs().max() / b.abs().max().clamp_min(1e-300))


def _problem(d_v, H=3, n=5, d=8, C=7, T=13, M=2, seed=2):
    X, x, y = draw_nested_dataset(T, n, d, C, seed=seed, dtype=torch.float64)
    gen = torch.Generator().manual_seed(seed + 1)
    params = init_authors_model(M, d, d, n, H, d, C, gen, d_v=d_v, dtype=torch.float64)
    return {k: 2.0 * v for k, v in params.items()}, X, x, y  # larger weights: sharper softmax rows


# the read-out orders: one value per head (d_v = 1), values first (d_v = 2), N first (d_v = 8)
@pytest.mark.parametrize("d_v", [1, 2, 8])
def test_folded_loss_and_gradients_equal_autograd_through_authors_model(d_v):
    params, X, x, y = _problem(d_v)
    H, n, C = params["W_Q"].shape[1], X.shape[0], params["W_D"].shape[-1]
    assert values_first(H, n, d_v, C) == (d_v < 8)
    T_m = torch.tensor([13, 6])
    loss, grads, correct = authors_loss_and_grads(params, X, x, y, T_m)
    ref_loss, ref_grads, ref_correct = autograd_loss_and_grads(params, X, x, y, T_m, "context")
    assert _rel(loss, ref_loss) < REL
    assert torch.equal(correct, ref_correct)
    assert set(grads) == set(params)
    for k in params:
        assert grads[k].shape == params[k].shape, k
        assert _rel(grads[k], ref_grads[k]) < REL, k
    for m, T in enumerate(T_m.tolist()):  # one model at a time, unstacked
        one = {k: v[m].clone().requires_grad_() for k, v in params.items()}
        out = authors_model(one, X, x[:T], keys="context")
        assert _rel(folded_authors_logits(params, X, x)[m, :T], out.detach()) < REL
        ref = F.cross_entropy(out, y[:T])
        assert abs(float(loss[m]) - ref.item()) < REL * ref.item()


def test_an_explicit_logit_scale_is_used():
    params, X, x, y = _problem(1)
    T_m = torch.tensor([13, 13])
    loss, _, _ = authors_loss_and_grads(params, X, x, y, T_m, scale=1.0)
    ref = F.cross_entropy(authors_model({k: v[0] for k, v in params.items()}, X, x, keys="context", scale=1.0), y)
    assert abs(float(loss[0]) - ref.item()) < REL * ref.item()
    default, _, _ = authors_loss_and_grads(params, X, x, y, T_m)
    assert abs(float(default[0]) - float(loss[0])) > 1e-3  # 1/sqrt(d) differs from 1
