"""Functional Adam / AdamW (training/optim.py) against torch.optim, stacked models."""

from __future__ import annotations

import pytest
import torch

from tolerances import assert_close

from attnlab.errors import ConfigError
from attnlab.training import WarmupCosine, adam_init, adam_update, adamw_update

F64 = torch.float64
M, K = 3, 20  # models, steps
SCHED = WarmupCosine(base_lr=0.05, warmup_steps=4, total_steps=K, min_lr=0.001)


def _params(gen: torch.Generator) -> dict[str, torch.Tensor]:
    return {"W": torch.randn(M, 5, 7, generator=gen, dtype=F64),
            "b": torch.randn(M, 3, generator=gen, dtype=F64)}


def _grad(p: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """A parameter-dependent gradient (of sum((p - target)^4) / 4) so the updates feed back."""
    return (p - target) ** 3


@pytest.mark.parametrize(
    "torch_cls, weight_decay, decoupled",
    [(torch.optim.Adam, 0.0, False), (torch.optim.Adam, 0.1, False), (torch.optim.AdamW, 0.1, True)],
)
def test_matches_torch_adam_for_20_steps_float64(torch_cls, weight_decay, decoupled):
    gen = torch.Generator().manual_seed(3)
    params = _params(gen)
    targets = {k: torch.randn(p.shape, generator=gen, dtype=F64) for k, p in params.items()}
    # reference: each model alone with torch.optim
    expected = {k: [] for k in params}
    for m in range(M):
        theta = {k: p[m].clone() for k, p in params.items()}
        opt = torch_cls(theta.values(), lr=SCHED(0), betas=(0.8, 0.99), eps=1e-8,
                        weight_decay=weight_decay)
        for s in range(K):
            opt.param_groups[0]["lr"] = SCHED(s)
            for k, p in theta.items():
                p.grad = _grad(p.detach(), targets[k][m])
            opt.step()
        for k in params:
            expected[k].append(theta[k])
    state = adam_init(params)
    for s in range(K):
        grads = {k: _grad(p, targets[k]) for k, p in params.items()}
        params, state = adam_update(params, grads, state, SCHED(s), betas=(0.8, 0.99),
                                    weight_decay=weight_decay, decoupled=decoupled)
    for k in params:
        assert_close(params[k], torch.stack(expected[k]))  # float64: 1e-12
    assert state.step.tolist() == [K] * M


def test_inactive_models_are_frozen_exactly():
    gen = torch.Generator().manual_seed(5)
    params = _params(gen)
    targets = {k: torch.randn(p.shape, generator=gen, dtype=F64) for k, p in params.items()}
    state = adam_init(params)
    grads = {k: _grad(p, targets[k]) for k, p in params.items()}
    p1, s1 = adam_update(params, grads, state, 0.01)  # all models move once
    active = torch.tensor([True, False, True])
    grads = {k: _grad(p, targets[k]) for k, p in p1.items()}
    free, _ = adamw_update(p1, grads, s1, 0.01)
    masked, s2 = adamw_update(p1, grads, s1, 0.01, active=active)
    for k in params:
        assert torch.equal(masked[k][1], p1[k][1])  # not one bit changed
        assert torch.equal(s2.m[k][1], s1.m[k][1]) and torch.equal(s2.v[k][1], s1.v[k][1])
        assert torch.equal(masked[k][active], free[k][active])
        assert (masked[k][0] - p1[k][0]).abs().max() > 1e-4  # the active ones did move
    assert s2.step.tolist() == [2, 1, 2]


def test_init_rejects_empty_and_ragged_params():
    with pytest.raises(ConfigError, match="empty"):
        adam_init({})
    with pytest.raises(ConfigError, match="leading model axis"):
        adam_init({"a": torch.zeros(2, 3), "b": torch.zeros(3, 3)})
