"""Losses and metrics of the memorization model (papers/memorization/losses.py), by hand in float64."""

from __future__ import annotations

import pytest
import torch
from numpy_reference import literal_forward
from tolerances import assert_close
from torch.func import vmap

from attnlab.papers.memorization.losses import regression_loss, regression_metrics
from attnlab.papers.memorization.model import attention_classifier, init_attention_classifier
from attnlab.training import train_batched

F64 = torch.float64
# distinct primes so an axis mix-up fails: M, d, n, H, d_h, d_v, classes, batch
M, d, n, H, d_h, d_v, C, B = 2, 7, 5, 3, 2, 11, 13, 4


def test_regression_loss_and_metrics_by_hand_float64():
    gen = torch.Generator().manual_seed(5)
    stacked = init_attention_classifier(M, d, n, H, d_h, 1, gen, d_v=d_v, dtype=F64)  # d_out = 1
    E = torch.rand(M, n, d, generator=gen, dtype=F64)
    e = torch.rand(M, B, d, generator=gen, dtype=F64)
    y = torch.rand(M, B, generator=gen, dtype=F64)  # y ~ U(0, 1), shape (B,) per model (App. A)
    losses = vmap(regression_loss)(stacked, E, e, y)
    metrics = vmap(regression_metrics)(stacked, E, e, y)
    for m in range(M):
        one = {k: p[m] for k, p in stacked.items()}
        y_hat = torch.stack([literal_forward(one, E[m], e[m, b])[0] for b in range(B)])  # eqs. (1)-(6), d_out = 1
        mse = ((y_hat - y[m]) ** 2).sum() / B  # (1 / B) sum_t (y_hat^(t) - y^(t))^2
        assert_close(losses[m], mse)
        assert_close(metrics["mse"][m], mse)
        assert_close(metrics["loss"][m], mse)
        assert_close(metrics["max_abs_error"][m], (y_hat - y[m]).abs().max())
    # (B, 1) targets give the same loss as (B,)
    one = {k: p[0] for k, p in stacked.items()}
    assert_close(regression_loss(one, E[0], e[0], y[0][:, None]), losses[0])


def test_regression_loss_is_zero_exactly_at_the_targets():
    gen = torch.Generator().manual_seed(6)
    one = {k: p[0] for k, p in init_attention_classifier(1, d, n, H, d_h, 3, gen, dtype=F64).items()}
    E, e = torch.rand(B, n, d, generator=gen, dtype=F64), torch.rand(B, d, generator=gen, dtype=F64)
    y = attention_classifier(one, E, e)  # (B, 3): d_out = 3
    assert regression_loss(one, E, e, y).item() == 0.0
    assert regression_loss(one, E, e, y + 0.5).item() == pytest.approx(0.25, abs=1e-15)


def test_regression_trains_below_a_tenth_of_the_label_variance():
    # T = 4 = Theorem 1's bound H (min(n, d_h) - 1) + 1 = 3 (2 - 1) + 1 at n = 5, d_h = 2: Adam must
    # bring the MSE of U(0, 1) labels (variance 1/12) below 1e-3
    gen = torch.Generator().manual_seed(7)
    params = init_attention_classifier(2, d, n, H, d_h, 1, gen)
    E, e, y = torch.rand(2, n, d, generator=gen), torch.rand(2, 4, d, generator=gen), torch.rand(2, 4, generator=gen)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny matrices: extra intra-op threads only wait on a busy machine
    try:
        res = train_batched(regression_loss, params, (e, y), model_data=(E,), steps=150, lr=2e-2,
                            eval_every=150, metrics_fn=regression_metrics)
    finally:
        torch.set_num_threads(threads)
    first = vmap(regression_loss)(params, E, e, y)
    assert (first > 1e-3).all()  # it had something to learn
    assert (res.history["mse"][-1] < 1e-3).all()
