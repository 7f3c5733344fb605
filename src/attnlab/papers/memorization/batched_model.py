"""The memorization paper's single-layer multi-head attention model as a pure function.

memorization-capacity-of-mha §3, eqs. (1)-(6). For one example (context E, query e)
and every head h = 1..H:

    alpha_h = E W_K,h W_Q,h^T e           (n)        (1)
    theta_h = Softmax(alpha_h)             (n)        (2)
    z_h     = E^T theta_h                  (d)        (3)
    p_h     = W_V,h^T z_h                  (d_v)      (4)
    o       = W_O^T [p_1; ...; p_H]        (d)        (5)
    y_hat   = W_D^T o                      (d_out)    (6)

Symbols: E (n x d) the context (n tokens e_1..e_n as rows), e (d) the query,
W_K,h, W_Q,h (d x d_h), W_V,h (d x d_v), W_O (H d_v x d), W_D (d x d_out); here
d_out = n_classes and y_hat are the class logits (classifier_loss), or d_out
real outputs for regression (regression_loss; init with n_classes = d_out). No
1/sqrt(d_h) factor: the paper has none. The products are ordered by what the batch shares:

- one context E for all queries (§5.2, Appendix H): K_h = E W_K,h and V_h = E W_V,h
  once per batch, then alpha_h = K_h (W_Q,h^T e) and p_h = V_h^T theta_h are GEMMs
  over the batch;
- one context per query (Appendix I.1): the circuits W_QK,h = W_K,h W_Q,h^T and
  W_OV,h = W_V,h W_O,h (d x d, W_O,h the h-th block of d_v rows of W_O) once per
  batch, then alpha_h = E (W_QK,h e) and o = sum_h W_OV,h^T E^T theta_h, so that E,
  by far the largest tensor, meets only two batched products and is never copied.

Either way the gradients flow to W_K, W_Q, W_V, W_O.

The softmax is ``torch.softmax`` on explicit logits (never the fused SDPA kernel,
which has no vmap rule on CPU), so the model works under ``torch.func.vmap``.

Parameter dict (one model):  W_K, W_Q: (H, d, d_h)   W_V: (H, d, d_v)
                             W_O: (H d_v, d)         W_D: (d, n_classes)
Stacked for M models, every tensor gains a leading axis M.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor

from attnlab.errors import ConfigError


def init_attention_classifier(
    M: int,
    d: int,
    n: int,
    H: int,
    d_h: int,
    n_classes: int,
    generator: torch.Generator,
    *,
    d_v: int | None = None,
    dtype: torch.dtype = torch.float32,
    device: str | torch.device = "cpu",
) -> dict[str, Tensor]:
    """Stacked parameters of M models, each entry N(0, 1/fan_in) (LeCun normal).

    ``n`` (context length) does not enter the parameter shapes; it is checked so a
    call states the whole model. d_v defaults to d_h.
    """
    d_v = d_h if d_v is None else d_v
    for name, value in dict(M=M, d=d, n=n, H=H, d_h=d_h, d_v=d_v, n_classes=n_classes).items():
        if not isinstance(value, int) or value < 1:
            raise ConfigError(f"{name} must be an integer >= 1, got {value!r}")
    shapes = {
        "W_K": ((M, H, d, d_h), d),
        "W_Q": ((M, H, d, d_h), d),
        "W_V": ((M, H, d, d_v), d),
        "W_O": ((M, H * d_v, d), H * d_v),
        "W_D": ((M, d, n_classes), d),
    }
    params = {}
    for name, (shape, fan_in) in shapes.items():
        w = torch.randn(shape, generator=generator, dtype=torch.float64) / math.sqrt(fan_in)
        params[name] = w.to(dtype=dtype, device=device)
    return params


def attention_classifier(params: dict[str, Tensor], E: Tensor, e: Tensor) -> Tensor:
    """Logits y_hat of eqs. (1)-(6) for one model (unstacked params).

    e: (..., d) queries.  E: (n, d), one context shared by all queries (the paper's
    §5.2 setting), or (..., n, d), one per query.  -> (..., n_classes).
    """
    if E.ndim == 2:
        return _shared_context_logits(params, E, e)
    return _per_example_logits(params, E, e)


def _shared_context_logits(params: dict[str, Tensor], E: Tensor, e: Tensor) -> Tensor:
    """Keys and values projected once per batch: K_h = E W_K,h, V_h = E W_V,h (n x d_h, n x d_v);
    then alpha_h = K_h (W_Q,h^T e) is eq. (1) and p_h = V_h^T theta_h is eqs. (3)-(4)."""
    W_K, W_Q, W_V, W_O, W_D = (params[k] for k in ("W_K", "W_Q", "W_V", "W_O", "W_D"))
    H, d, d_h = W_Q.shape
    lead = e.shape[:-1]
    K = E @ W_K  # (n, d) @ (H, d, d_h) -> (H, n, d_h)
    V = E @ W_V  # (H, n, d_v)
    q = e.reshape(-1, d) @ W_Q.permute(1, 0, 2).reshape(d, H * d_h)  # W_Q,h^T e: (B, H d_h)
    q = q.view(-1, H, d_h).transpose(0, 1)  # (H, B, d_h)
    alpha = q @ K.mT  # eq. (1): (H, B, d_h) @ (H, d_h, n) -> (H, B, n)
    theta = torch.softmax(alpha, dim=-1)  # eq. (2)
    p = theta @ V  # eqs. (3)-(4): (H, B, n) @ (H, n, d_v) -> (H, B, d_v)
    o = p.transpose(0, 1).flatten(1) @ W_O  # eq. (5): [p_1; ...; p_H] (B, H d_v) -> (B, d)
    return (o @ W_D).view(*lead, W_D.shape[-1])  # eq. (6): (..., n_classes)


def _per_example_logits(params: dict[str, Tensor], E: Tensor, e: Tensor) -> Tensor:
    """Through the circuits W_QK,h = W_K,h W_Q,h^T and W_OV,h = W_V,h W_O,h (d x d):
    alpha_h = E (W_QK,h e) is eq. (1), o = sum_h W_OV,h^T E^T theta_h is eqs. (3)-(5)."""
    W_K, W_Q, W_V, W_O, W_D = (params[k] for k in ("W_K", "W_Q", "W_V", "W_O", "W_D"))
    H, d, d_v = W_V.shape
    W_QK = W_K @ W_Q.mT  # (H, d, d)
    W_OV = W_V @ W_O.view(H, d_v, d)  # W_O = [W_O,1; ...; W_O,H], W_O,h: (d_v, d) -> (H, d, d)
    u = e @ W_QK.permute(2, 0, 1).reshape(d, H * d)  # rows (W_QK,h e)^T: (..., H d)
    u = u.unflatten(-1, (H, d))  # (..., H, d)
    # E enters only through matmuls with E or its transposed view, never a permuted
    # copy: it is the largest tensor by far (n d per example)
    alpha = u @ E.mT  # eq. (1), one row per head: (..., H, d) @ (..., d, n) -> (..., H, n)
    theta = torch.softmax(alpha, dim=-1)  # eq. (2): (..., H, n)
    z = theta @ E  # eq. (3): rows theta_h^T E = (E^T theta_h)^T: (..., H, d)
    o = z.flatten(-2) @ W_OV.reshape(H * d, d)  # eqs. (4)-(5): (..., H d) @ (H d, d) -> (..., d)
    return o @ W_D  # eq. (6): (..., n_classes)


def classifier_loss(params: dict[str, Tensor], E: Tensor, e: Tensor, y: Tensor) -> Tensor:
    """Mean cross-entropy of the logits against integer labels y: (B,) -> scalar."""
    return F.cross_entropy(attention_classifier(params, E, e), y)


def classifier_metrics(params: dict[str, Tensor], E: Tensor, e: Tensor, y: Tensor) -> dict[str, Tensor]:
    """Full-data cross-entropy and accuracy (fraction of argmax y_hat == y)."""
    logits = attention_classifier(params, E, e)
    return {
        "loss": F.cross_entropy(logits, y),
        "accuracy": (logits.argmax(-1) == y).to(logits.dtype).mean(),
    }


def regression_loss(params: dict[str, Tensor], E: Tensor, e: Tensor, y: Tensor) -> Tensor:
    """Mean squared error of eqs. (1)-(6) with real labels (Appendix A, Fig. 5).

    y: (B, d_out) targets, or (B,) when d_out = 1 (the paper's y ~ U(0, 1));
    MSE = (1 / (B d_out)) sum_t ||y_hat^(t) - y^(t)||^2.  -> scalar.
    """
    y_hat = attention_classifier(params, E, e)  # (B, d_out)
    return F.mse_loss(y_hat, y.reshape(y_hat.shape))


def regression_metrics(params: dict[str, Tensor], E: Tensor, e: Tensor, y: Tensor) -> dict[str, Tensor]:
    """Full-data MSE ("loss" and "mse") and the largest error max_t |y_hat^(t) - y^(t)|."""
    y_hat = attention_classifier(params, E, e)
    err = y_hat - y.reshape(y_hat.shape)  # (B, d_out)
    mse = (err * err).mean()
    return {"loss": mse, "mse": mse, "max_abs_error": err.abs().amax()}


def training_flops_per_step(d: int, n: int, H: int, d_h: int, n_classes: int, batch: int,
                            *, shared_context: bool, d_v: int | None = None) -> int:
    """Forward + backward FLOPs of one model's step on ``batch`` examples, counted from
    the matmuls of attention_classifier (2 FLOPs per multiply-add).

    shared context, per example: 2 d H d_h (q) + 2 H d_h n (alpha, eq. 1)
        + 2 H n d_v (p, eqs. 3-4) + 2 H d_v d (o, eq. 5) + 2 d n_classes (eq. 6);
        per batch: 2 n d H (d_h + d_v) (K and V).
    per-example context, per example: 2 d H d (W_QK e) + 2 H n d (alpha) + 2 H n d (z)
        + 2 H d d (o through W_OV) + 2 d n_classes;
        per batch: 2 H d d (d_h + d_v) (W_QK and W_OV).
    Training = 3 x forward (the backward pass costs two matmuls per forward matmul:
    weight gradient and input gradient). Softmax, cross-entropy and the optimizer
    (elementwise) are not counted.
    """
    d_v = d_h if d_v is None else d_v
    if shared_context:
        per_example = 2 * d * H * d_h + 2 * H * d_h * n + 2 * H * n * d_v + 2 * H * d_v * d
        per_batch = 2 * n * d * H * (d_h + d_v)
    else:
        per_example = 2 * d * H * d + 4 * H * n * d + 2 * H * d * d
        per_batch = 2 * H * d * d * (d_h + d_v)
    return 3 * (batch * (per_example + 2 * d * n_classes) + per_batch)
