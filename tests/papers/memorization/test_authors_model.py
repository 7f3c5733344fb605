"""The authors' trained model (papers/memorization/authors_model.py): embedding + PE + one attention layer."""

from __future__ import annotations

import math
from functools import partial

import pytest
import torch
from tolerances import assert_close
from torch.func import jacrev, vmap

from attnlab.errors import ConfigError
from attnlab.nn.positional import sinusoidal_encoding
from attnlab.training import train_batched
from attnlab.papers.memorization.authors_model import (
    authors_loss,
    authors_metrics,
    authors_model,
    authors_regression_loss,
    authors_regression_metrics,
    init_authors_model,
)
from attnlab.papers.memorization.model import attention_classifier, init_attention_classifier


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


F64 = torch.float64
# distinct sizes so an axis mix-up fails: M, d_in, d (even), n, H, d_h, d_v, classes, batch
M, D_IN, d, n, H, d_h, d_v, C, B = 2, 7, 6, 5, 3, 2, 11, 13, 4


def _params(seed: int = 0, **kw) -> dict:
    return init_authors_model(M, D_IN, d, n, H, d_h, C, torch.Generator().manual_seed(seed), d_v=d_v,
                              dtype=F64, **kw)


def _one(stacked: dict, m: int = 0) -> dict:
    return {k: p[m] for k, p in stacked.items()}


def _literal(p, E_raw, x, keys, scale):
    """The module docstring's equations for one example, token by token and head by head."""
    P = sinusoidal_encoding(n + 1, d, dtype=F64)
    e = p["W_E"].T @ x + p["b_E"] + P[0]
    tokens = [p["W_E"].T @ E_raw[i] + p["b_E"] + P[i + 1] for i in range(n)]
    K = torch.stack(([e] if keys == "all" else []) + tokens)  # (n+1 | n, d)
    ps = []
    for h in range(H):
        alpha = scale * (K @ p["W_K"][h] @ p["W_Q"][h].T @ e)  # (1)
        theta = torch.softmax(alpha, dim=0)  # (2)
        ps.append(p["W_V"][h].T @ (K.T @ theta))  # (3)-(4)
    o = p["W_O"].T @ torch.cat(ps)  # (5)
    return p["W_D"].T @ o + p["b_D"]  # (6)


@pytest.mark.parametrize("keys", ["all", "context"])
@pytest.mark.parametrize("shared", [True, False])
def test_matches_the_equations_float64(keys, shared):
    stacked = _params(1)
    gen = torch.Generator().manual_seed(2)
    E = torch.rand((M, n, D_IN) if shared else (M, B, n, D_IN), generator=gen, dtype=F64)
    x = torch.rand(M, B, D_IN, generator=gen, dtype=F64)
    for scale in (None, 0.7):
        out = vmap(partial(authors_model, keys=keys, scale=scale))(stacked, E, x)
        assert out.shape == (M, B, C)
        s = 1 / math.sqrt(d) if scale is None else scale
        expected = torch.stack([torch.stack([
            _literal(_one(stacked, m), E[m] if shared else E[m, b], x[m, b], keys, s) for b in range(B)])
            for m in range(M)])
        assert_close(out, expected)  # float64: 1e-12
    # extra leading query axes are kept (shared context)
    assert authors_model(_one(stacked), E[0] if shared else E[0, 0], x[0].view(2, 2, D_IN)).shape[:2] == (2, 2)


def test_first_token_readout_depends_on_every_token():
    p = _one(_params(3))
    gen = torch.Generator().manual_seed(4)
    E, x = torch.rand(n, D_IN, generator=gen, dtype=F64), torch.rand(D_IN, generator=gen, dtype=F64)
    for keys in ("all", "context"):
        J_E = jacrev(lambda E_, k=keys: authors_model(p, E_, x, keys=k))(E)  # (C, n, D_IN)
        J_x = jacrev(lambda x_, k=keys: authors_model(p, E, x_, keys=k))(x)  # (C, D_IN)
        per_token = J_E.permute(1, 0, 2).reshape(n, -1).norm(dim=1)  # |dy_hat/dx_i| per token: (n,)
        # a random init gives O(0.01-1) sensitivities; 1e-4 is far above float64 round-off
        assert per_token.min().item() > 1e-4, per_token
        assert J_x.norm().item() > 1e-4


def test_positional_encoding_breaks_permutation_invariance():
    gen = torch.Generator().manual_seed(5)
    E, x = torch.rand(n, d, generator=gen, dtype=F64), torch.rand(B, d, generator=gen, dtype=F64)
    perm = torch.tensor([3, 0, 4, 1, 2])
    p = _one(init_authors_model(1, d, d, n, H, d_h, C, gen, d_v=d_v, dtype=F64))
    y, y_perm = authors_model(p, E, x), authors_model(p, E[perm], x)
    # with pos_i attached to position i, a permuted context is a different input
    assert (y - y_perm).abs().max().item() > 1e-3 * y.abs().max().item()
    # the plain eqs. (1)-(6) model (no PE) cannot tell: the same output to round-off
    q = _one(init_attention_classifier(1, d, n, H, d_h, C, gen, d_v=d_v, dtype=F64))
    assert_close(attention_classifier(q, E[perm], x), attention_classifier(q, E, x))


def test_gradients_reach_every_parameter():
    p = {k: v.requires_grad_(True) for k, v in _one(_params(6)).items()}
    gen = torch.Generator().manual_seed(7)
    E, x = torch.rand(n, D_IN, generator=gen, dtype=F64), torch.rand(B, D_IN, generator=gen, dtype=F64)
    y = torch.randint(0, C, (B,), generator=gen)
    grads = torch.autograd.grad(authors_loss(p, E, x, y), list(p.values()))
    assert len(grads) == 8
    for name, g in zip(p, grads):
        assert torch.isfinite(g).all() and (g != 0).all(), name  # every entry moves


def test_init_is_reproducible_and_xavier_uniform():
    a = init_authors_model(3, 64, 64, 32, 4, 64, 100, torch.Generator().manual_seed(1))
    b = init_authors_model(3, 64, 64, 32, 4, 64, 100, torch.Generator().manual_seed(1))
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert a["W_E"].shape == (3, 64, 64) and a["b_D"].shape == (3, 100) and a["W_O"].shape == (3, 256, 64)
    # W_Q: Xavier U(-a, a), a = sqrt(6 / (64 + 64)) = sqrt(3) / 8, so std a / sqrt(3) = 1/8;
    # 49152 draws: 2% tolerance on the std, the extreme draws within 1% of a
    assert a["W_Q"].abs().max().item() == pytest.approx(math.sqrt(3) / 8, rel=0.01)
    assert a["W_Q"].abs().max().item() <= math.sqrt(3) / 8
    assert a["W_Q"].std().item() == pytest.approx(1 / 8, rel=0.02)
    # W_D: nn.Linear's U(-1/sqrt(d), 1/sqrt(d)) = U(-1/8, 1/8)
    assert a["W_D"].abs().max().item() <= 1 / 8


def test_regression_loss_and_metrics_by_hand():
    p = _one(init_authors_model(1, D_IN, d, n, H, d_h, 1, torch.Generator().manual_seed(8), dtype=F64))
    gen = torch.Generator().manual_seed(9)
    E, x = torch.rand(n, D_IN, generator=gen, dtype=F64), torch.rand(B, D_IN, generator=gen, dtype=F64)
    y = torch.rand(B, generator=gen, dtype=F64)
    diff = authors_model(p, E, x)[:, 0] - y
    assert_close(authors_regression_loss(p, E, x, y), (diff ** 2).mean())
    assert_close(authors_regression_metrics(p, E, x, y)["max_abs_error"], diff.abs().max())


def test_trains_with_train_batched():
    # 2 models, 12 examples, 3 classes: full-batch Adam memorizes within 300 updates
    gen = torch.Generator().manual_seed(10)
    params = init_authors_model(2, D_IN, d, n, H, d_h, 3, gen)
    E, x = torch.rand(2, n, D_IN, generator=gen), torch.rand(2, 12, D_IN, generator=gen)
    y = torch.randint(0, 3, (2, 12), generator=gen)
    res = train_batched(authors_loss, params, (x, y), model_data=(E,), steps=300, lr=3e-2, eval_every=10,
                        metrics_fn=authors_metrics, stop_when=lambda m: m["accuracy"] >= 1.0)
    assert res.stopped.tolist() == [True, True]
    assert res.history["accuracy"][-1].tolist() == [1.0, 1.0]
    assert res.history["loss"][-1].max().item() < res.history["loss"][0].min().item()


@pytest.mark.parametrize("call, message", [
    (lambda: init_authors_model(1, 4, 5, 3, 2, 2, 3, torch.Generator()), "d must be even"),
    (lambda: init_authors_model(1, 4, 6, 3, 2, 0, 3, torch.Generator()), "d_h must be an integer >= 1"),
    (lambda: init_authors_model(1, 4, 6, 3, True, 2, 3, torch.Generator()), "H must be an integer >= 1"),
    (lambda: authors_model(_one(_params()), torch.rand(n, D_IN), torch.rand(B, D_IN), keys="query"),
     "keys must be one of all, context"),
    (lambda: authors_model(_one(_params()), torch.rand(n, D_IN), torch.rand(B, D_IN), scale=-1.0),
     r"scale must be a finite number in \(0, inf\)"),
    (lambda: authors_model(_one(_params()), torch.rand(n, D_IN), torch.rand(B, D_IN + 1)),
     "queries x must be"),
    (lambda: authors_model(_one(_params()), torch.rand(B + 1, n, D_IN), torch.rand(B, D_IN)),
     "needs the leading shape"),
])
def test_bad_input_raises_config_error(call, message):
    with pytest.raises(ConfigError, match=message):
        call()
