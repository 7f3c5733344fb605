"""Full-batch L-BFGS through train_batched (training/lbfgs.py)."""

from __future__ import annotations

import torch

from tolerances import FLOAT64_LONG, assert_close

from attnlab.training import train_batched

F64 = torch.float64
M, D = 3, 7


def _quadratics(seed: int = 0):
    """f_m(x) = (x - c_m)^T A_m (x - c_m) / 2, A_m = Q Q^T / D + I (SPD); minimiser c_m.

    Centred so that f(x*) = 0: near the minimum f changes by O(|x - x*|^2), which in the
    uncentred form x^T A x / 2 - b^T x drowns in the rounding of f's O(1) value once
    |x - x*| < ~1e-8, and a line search on f values cannot get closer."""
    gen = torch.Generator().manual_seed(seed)
    Q = torch.randn(M, D, D, generator=gen, dtype=F64)
    A = Q @ Q.transpose(1, 2) / D + torch.eye(D, dtype=F64)  # (M, D, D)
    c = torch.randn(M, D, generator=gen, dtype=F64)
    x0 = {"x": torch.randn(M, D, generator=gen, dtype=F64)}
    return A, c, x0


def quadratic(params, A, c):
    r = params["x"] - c
    return 0.5 * r @ A @ r


def _torch_lbfgs(x0, A, c, steps: int):
    """torch.optim.LBFGS, one iteration per step: final iterate and f after each step."""
    x = x0.clone().requires_grad_(True)
    # max_eval as train_batched sets it (torch's default 1 would leave the line search idle)
    opt = torch.optim.LBFGS([x], lr=1.0, max_iter=1, max_eval=26, line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = quadratic({"x": x}, A, c)
        loss.backward()
        return loss

    losses = []
    for _ in range(steps):
        opt.step(closure)
        losses.append(quadratic({"x": x.detach()}, A, c))
    return x.detach(), torch.stack(losses)


def test_reaches_the_minimum_of_a_convex_quadratic():
    A, c, x0 = _quadratics()
    # tolerance_change=0: torch's absolute test |f_k - f_{k-1}| < tol would stop at f ~ 1e-17
    # A as model_data (per model, no example axis): loss_fn(params, A, c)
    result = train_batched(quadratic, x0, (c,), model_data=(A,), optimizer="lbfgs", steps=2,
                           lbfgs_max_iter=25,
                           lbfgs_tolerance_grad=1e-14, lbfgs_tolerance_change=0.0)
    err = (result.params["x"] - c).abs().max().item()
    assert err < FLOAT64_LONG, err
    assert result.history["loss"][-1].abs().max().item() < 1e-20  # f(x*) = 0


def test_iterates_match_torch_lbfgs_and_early_stop_freezes():
    A, c, x0 = _quadratics(1)
    # one L-BFGS iteration per step, so each step's iterate is comparable
    kw = dict(optimizer="lbfgs", lbfgs_max_iter=1, lr=1.0, eval_every=1)
    result = train_batched(quadratic, x0, (A, c), steps=5, **kw)
    for m in range(M):
        x, losses = _torch_lbfgs(x0["x"][m], A[m], c[m], steps=5)
        assert torch.equal(result.params["x"][m], x)
        assert_close(result.history["loss"][:, m], losses)
    # one iteration per step still moves: five steps cut every loss by at least 10x
    f0 = torch.stack([quadratic({"x": x0["x"][m]}, A[m], c[m]) for m in range(M)])
    assert (result.history["loss"][-1] < 0.1 * f0).all(), (result.history["loss"][-1], f0)
    # stop model 0 after step 2: it keeps its step-2 iterate, the others go on
    stop = lambda mt: torch.tensor([True, False, False]) & (mt["loss"] < float("inf"))  # noqa: E731
    early = train_batched(quadratic, x0, (A, c), steps=5, stop_when=stop,
                          **{**kw, "eval_every": 2})
    assert early.steps_to_stop.tolist() == [2, -1, -1]
    two = train_batched(quadratic, x0, (A, c), steps=2, **kw)
    assert torch.equal(early.params["x"][0], two.params["x"][0])
    assert torch.equal(early.params["x"][1:], result.params["x"][1:])
    assert early.eval_steps == [2, 4, 5]
    assert early.history["loss"][0, 0] == early.history["loss"][-1, 0]
