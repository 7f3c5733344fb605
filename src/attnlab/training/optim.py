"""Functional Adam and AdamW on dicts of stacked parameters.

Parameters are a dict name -> Tensor whose leading axis indexes M independent
models (shape (M, ...)); gradients have the same structure. The state is
``AdamState(m, v, step)`` with first and second moments m, v shaped like the
parameters and a per-model step counter t of shape (M,). For each model, one
update with gradient g, rate eta, betas (b1, b2), eps and weight decay lambda is
(Kingma & Ba 2015, Alg. 1; AdamW: Loshchilov & Hutter 2019, Alg. 2)

    t   <- t + 1
    g   <- g + lambda theta                        (Adam: L2 penalty in the gradient)
    theta <- theta (1 - eta lambda)                (AdamW: decoupled decay instead)
    m   <- b1 m + (1 - b1) g
    v   <- b2 v + (1 - b2) g^2
    theta <- theta - eta / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)

which is, operation for operation, what ``torch.optim.Adam`` / ``AdamW`` do
(tests/training/test_optim.py holds them equal to 1e-12 in float64).

``active`` (bool, shape (M,)) freezes models exactly: where it is False the
parameters, moments and step counter come back bit for bit unchanged (the update
is scaled by 0 and the decay factors set to 1, so x + 0 = x; this needs finite
gradients, which a stopped model's are unless its loss is already NaN).
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor

from attnlab.errors import ConfigError

Params = dict[str, Tensor]


class AdamState(NamedTuple):
    """m, v: moments shaped like the parameters; step: (M,) int64 update counts t."""

    m: Params
    v: Params
    step: Tensor


def adam_init(params: Params) -> AdamState:
    """Zero moments and t = 0 for every model (leading axis M of each tensor)."""
    if not params:
        raise ConfigError("params is empty: pass a dict of stacked parameter tensors")
    sizes = {p.shape[0] if p.ndim else None for p in params.values()}
    if len(sizes) != 1 or None in sizes:
        raise ConfigError(
            f"every parameter needs the same leading model axis M, got sizes {sorted(map(str, sizes))}"
        )
    (M,) = sizes
    device = next(iter(params.values())).device
    zeros = {k: torch.zeros_like(p) for k, p in params.items()}
    return AdamState(zeros, {k: torch.zeros_like(p) for k, p in params.items()},
                     torch.zeros(M, dtype=torch.int64, device=device))


def _per_model(x: Tensor, like: Tensor) -> Tensor:
    """(M,) -> (M, 1, ..., 1) in ``like``'s dtype, broadcastable against ``like`` (M, ...)."""
    return x.reshape(x.shape + (1,) * (like.ndim - 1)).to(like.dtype)


def adam_update(
    params: Params,
    grads: Params,
    state: AdamState,
    lr: float,
    *,
    betas: tuple[float, float] = (0.9, 0.999),
    eps: float = 1e-8,
    weight_decay: float = 0.0,
    decoupled: bool = False,
    active: Tensor | None = None,
    inplace: bool = False,
) -> tuple[Params, AdamState]:
    """One Adam (``decoupled=False``) or AdamW (``decoupled=True``) step for all M models.

    Returns new (params, state). With ``inplace=True`` the parameter and moment
    tensors are updated in place (and returned): no allocation of parameter-sized
    buffers per step, which for large stacks is most of the optimizer's time.
    """
    b1, b2 = betas
    if active is None:
        active = torch.ones_like(state.step, dtype=torch.bool)
    on = active.to(torch.float64)  # (M,) 1 = update, 0 = frozen
    t64 = (state.step + 1).to(torch.float64)
    step_size = on * lr / (1.0 - b1**t64)  # eta / (1 - b1^t), 0 when frozen: (M,)
    bias2_sqrt = (1.0 - b2**t64).sqrt()  # (M,)
    if not inplace:
        params = {k: p.clone() for k, p in params.items()}
        state = AdamState({k: x.clone() for k, x in state.m.items()},
                          {k: x.clone() for k, x in state.v.items()}, state.step)
    for k, theta in params.items():
        m, v, g = state.m[k], state.v[k], grads[k]
        if weight_decay and not decoupled:
            g = g.add(theta, alpha=weight_decay)
        if weight_decay and decoupled:
            theta.mul_(_per_model(1.0 - on * lr * weight_decay, theta))
        # frozen models: weights 0 and 1 below make every update an exact no-op
        # (x + 0 * finite = x, x * 1 = x)
        m.lerp_(g, _per_model(on * (1.0 - b1), theta))
        v.mul_(_per_model(on * b2 + (1.0 - on), theta)).addcmul_(g, g * _per_model(on * (1.0 - b2), theta))
        denom = v.sqrt().div_(_per_model(bias2_sqrt, theta)).add_(eps)
        theta.sub_(torch.div(m, denom, out=denom).mul_(_per_model(step_size, theta)))
    return params, AdamState(state.m, state.v, state.step + active.to(state.step.dtype))


def adamw_update(
    params: Params,
    grads: Params,
    state: AdamState,
    lr: float,
    *,
    betas: tuple[float, float] = (0.9, 0.999),
    eps: float = 1e-8,
    weight_decay: float = 1e-2,
    active: Tensor | None = None,
    inplace: bool = False,
) -> tuple[Params, AdamState]:
    """AdamW: Adam with decoupled weight decay (torch.optim.AdamW's default lambda = 1e-2)."""
    return adam_update(params, grads, state, lr, betas=betas, eps=eps, weight_decay=weight_decay,
                       decoupled=True, active=active, inplace=inplace)
