"""The memorization paper's trained model: embedding, positional encoding, one attention layer.

memorization-capacity-of-mha §5.2: "Each input is then given to the model
consisting of an embedding layer, positional encoding, and an Attention layer",
with the §3 notation e^(t) = x^(t) + pos_0, e_i^(t) = x_i^(t) + pos_i. The attention
layer is eqs. (1)-(6) as :mod:`attnlab.papers.memorization.model` writes them out, applied
to embedded tokens; for one example (raw query x in R^{d_in}, raw context x_1..x_n in
R^{d_in}) what changes is:

    e       = W_E^T x   + b_E + pos_0          (d)            embedding + PE of the query
    e_i     = W_E^T x_i + b_E + pos_i          (d)            i = 1..n
    K       = [e; e_1; ...; e_n]               (n+1, d)       keys="all"
              [e_1; ...; e_n]                  (n, d)         keys="context"
    alpha_h = s K W_K,h W_Q,h^T e                             eq. (1) with K in place of E, scaled by s
    eqs. (2)-(5) with K in place of E, and  y_hat = W_D^T o + b_D   (eq. (6) plus a bias)

The sequence is laid out as the authors' data set does: the query token first
(position 0), then the n context tokens (positions 1..n); only the first token's
output is read (their loss takes the logits of token 0), so only the query's row
of attention is computed. pos_t is the sinusoidal encoding of
:func:`attnlab.nn.positional.sinusoidal_encoding` (pos_t[2k] = sin(w_k t),
pos_t[2k+1] = cos(w_k t), w_k = 10000^(-2k/d)), d even.

Where the paper is vague, and what is chosen here (from the authors' published
code, github.com/smahdavi4/attention-memorization, where it settles the point):

- keys: eq. (1) lets the query attend to E, the n context tokens. With the query
  token in the sequence it may also attend to itself. ``keys="all"`` (default):
  the query attends to all n + 1 tokens; ``keys="context"``: only to the n context
  tokens, eq. (1) as written, and the released model's: src/attn_models.py's
  BaselineAttention masks column 0 (the query) of every row with -inf. (The copy in
  src/gnn_models.py, which the released src/main.py imports, multiplies that logit by 0
  instead, so the query keeps weight exp(0) / sum on its own value: neither mode
  reproduces that variant.)
- logit scale s: eqs. (1)-(2) have none; the authors' code divides the logits by
  sqrt(d) (the model width, not d_h). ``scale=None`` (default) uses 1/sqrt(d);
  ``scale=1.0`` gives the paper's unscaled eq. (1).
- biases: the embedding and the read-out carry biases b_E, b_D (as nn.Linear in
  the authors' code); the attention maps have none.
- d_v: the released model uses d_v = 1 per head (CustomAttention(dv=1)) and
  d_h = d; here d_v defaults to d_h (as in :mod:`attnlab.papers.memorization.model`)
  and is an argument. :data:`AUTHORS_RELEASED` is the released model's setting.
- init (:func:`init_authors_model`): as the authors' code, Xavier-uniform
  U(-a, a), a = sqrt(6 / (fan_in + fan_out)), for every W_K,h, W_Q,h, W_V,h and
  W_O; PyTorch's nn.Linear default U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for W_E,
  b_E, W_D, b_D.

Data: the context is ``E_raw`` (n, d_in) shared by all queries (§5.2, the
``model_data`` of :func:`attnlab.training.train_batched`) or (..., n, d_in), one
per query (Appendix I.1); queries ``x`` (..., d_in). With a shared context its
embedding, keys and values are computed once per batch.

Parameter dict (one model):  W_E: (d_in, d)  b_E: (d,)
                             W_K, W_Q: (H, d, d_h)   W_V: (H, d, d_v)
                             W_O: (H d_v, d)  W_D: (d, d_out)  b_D: (d_out,)
Stacked for M models, every tensor gains a leading axis M. d_out = n_classes
(logits) for classification, the label dimension for regression.
"""

from __future__ import annotations

import functools
import math

import torch
import torch.nn.functional as F
from torch import Tensor

from attnlab.config import check_choice, check_int, check_number
from attnlab.errors import ConfigError
from attnlab.nn.positional import sinusoidal_encoding

KEYS = ("all", "context")
AUTHORS_RELEASED = {"d_v": 1, "keys": "context", "scale": None}
"""The released model's choices (github.com/smahdavi4/attention-memorization, src/attn_models.py,
BaselineAttention): one value dimension per head, the query's own key masked out of its row,
logits divided by sqrt(d); with d_h = d (its default) and the embedding and positions above."""


def init_authors_model(
    M: int,
    d_in: int,
    d: int,
    n: int,
    H: int,
    d_h: int,
    d_out: int,
    generator: torch.Generator,
    *,
    d_v: int | None = None,
    dtype: torch.dtype = torch.float32,
    device: str | torch.device = "cpu",
) -> dict[str, Tensor]:
    """Stacked parameters of M models, initialised as the authors' code does (module docstring).

    ``n`` (context length) does not enter the parameter shapes; it is checked so a
    call states the whole model. d must be even (sinusoidal encoding). d_v defaults to d_h.
    """
    d_v = d_h if d_v is None else d_v
    for name, value in dict(M=M, d_in=d_in, d=d, n=n, H=H, d_h=d_h, d_v=d_v, d_out=d_out).items():
        check_int(name, value, 1)
    if d % 2:
        raise ConfigError(f"d must be even for the sinusoidal positional encoding, got d={d}")
    xavier = lambda fan_in, fan_out: math.sqrt(6.0 / (fan_in + fan_out))
    bounds = {  # name: (shape of one model, half-width a of U(-a, a))
        "W_E": ((d_in, d), 1 / math.sqrt(d_in)),
        "b_E": ((d,), 1 / math.sqrt(d_in)),
        "W_K": ((H, d, d_h), xavier(d, d_h)),
        "W_Q": ((H, d, d_h), xavier(d, d_h)),
        "W_V": ((H, d, d_v), xavier(d, d_v)),
        "W_O": ((H * d_v, d), xavier(H * d_v, d)),
        "W_D": ((d, d_out), 1 / math.sqrt(d)),
        "b_D": ((d_out,), 1 / math.sqrt(d)),
    }
    params = {}
    for name, (shape, a) in bounds.items():
        u = torch.rand((M, *shape), generator=generator, dtype=torch.float64)
        params[name] = ((2 * u - 1) * a).to(dtype=dtype, device=device)
    return params


@functools.lru_cache(maxsize=16)
def positions(n_tokens: int, d: int, dtype: torch.dtype, device: str) -> Tensor:
    """pos_0..pos_{n_tokens-1} as rows: (n_tokens, d), a constant (cached)."""
    return sinusoidal_encoding(n_tokens, d, dtype=dtype).to(device)


def _check(params: dict[str, Tensor], E_raw: Tensor, x: Tensor, keys: str, scale: float | None) -> None:
    check_choice("keys", keys, KEYS)
    if scale is not None:  # None: 1/sqrt(d)
        check_number("scale", scale, 0, open_min=True)
    d_in = params["W_E"].shape[0]
    if x.shape[-1] != d_in or E_raw.ndim < 2 or E_raw.shape[-1] != d_in:
        raise ConfigError(f"queries x must be (..., {d_in}) and the context E_raw (n, {d_in}) or "
                          f"(..., n, {d_in}), got x {tuple(x.shape)} and E_raw {tuple(E_raw.shape)}")
    if E_raw.ndim > 2 and E_raw.shape[:-2] != x.shape[:-1]:
        raise ConfigError(f"a per-query context E_raw {tuple(E_raw.shape)} needs the leading shape "
                          f"of x {tuple(x.shape[:-1])}")


def _forward(params: dict[str, Tensor], E_raw: Tensor, x: Tensor, keys: str,
             scale: float | None) -> tuple[Tensor, Tensor]:
    """(y_hat (B, d_out), theta (B, H, n) or (B, H, n+1) with the query's own key first)."""
    _check(params, E_raw, x, keys, scale)
    W_E, b_E, W_K, W_Q, W_V = (params[k] for k in ("W_E", "b_E", "W_K", "W_Q", "W_V"))
    H, d, d_h = W_Q.shape
    d_v = W_V.shape[-1]
    n = E_raw.shape[-2]
    s = 1.0 / math.sqrt(d) if scale is None else float(scale)
    pos = positions(n + 1, d, x.dtype, str(x.device))  # (n+1, d): pos_0 query, pos_1..n context
    e = x.reshape(-1, x.shape[-1]) @ W_E + b_E + pos[0]  # (B, d)
    shared = E_raw.ndim == 2
    E = (E_raw if shared else E_raw.reshape(-1, n, E_raw.shape[-1])) @ W_E + b_E + pos[1:]  # (n, d) | (B, n, d)
    # the query's own projections in one GEMM: W_Q,h^T e, W_K,h^T e, W_V,h^T e
    W_qkv = torch.cat([W.permute(1, 0, 2).reshape(d, -1) for W in (W_Q, W_K, W_V)], dim=1)  # (d, H(2 d_h + d_v))
    q, k0, v0 = torch.split(e @ W_qkv, [H * d_h, H * d_h, H * d_v], dim=1)
    q, k0, v0 = q.view(-1, H, d_h), k0.view(-1, H, d_h), v0.view(-1, H, d_v)  # (B, H, .)
    ctx = "" if shared else "b"
    K = torch.einsum(f"{ctx}nd,hdk->{ctx}hnk", E, W_K)  # context keys: (H, n, d_h) | (B, H, n, d_h)
    V = torch.einsum(f"{ctx}nd,hdv->{ctx}hnv", E, W_V)  # context values: (H, n, d_v) | (B, H, n, d_v)
    alpha = s * torch.einsum(f"bhk,{ctx}hnk->bhn", q, K)  # eq. (1) over the context: (B, H, n)
    if keys == "all":  # the query's own key first: alpha_h = s [(W_K,h^T e).(W_Q,h^T e); K_h W_Q,h^T e]
        alpha = torch.cat([s * (q * k0).sum(-1, keepdim=True), alpha], dim=-1)  # (B, H, n+1)
    theta = torch.softmax(alpha, dim=-1)  # eq. (2)
    p = torch.einsum(f"bhn,{ctx}hnv->bhv", theta[..., -n:], V)  # eqs. (3)-(4) over the context: (B, H, d_v)
    if keys == "all":
        p = p + theta[..., :1] * v0  # the query's own value, weight theta_h[0]
    o = p.flatten(1) @ params["W_O"]  # eq. (5): [p_1; ...; p_H] (B, H d_v) @ (H d_v, d) -> (B, d)
    y_hat = o @ params["W_D"] + params["b_D"]  # eq. (6): (B, d_out)
    return y_hat, theta


def authors_model(params: dict[str, Tensor], E_raw: Tensor, x: Tensor, *, keys: str = "all",
                  scale: float | None = None) -> Tensor:
    """y_hat of the query token (module docstring) for one model (unstacked params).

    E_raw: (n, d_in) shared context or (..., n, d_in) one per query.  x: (..., d_in)
    raw queries.  keys: "all" (query attends to all n + 1 tokens) or "context" (to
    the n context tokens).  scale: logit factor s (None: 1/sqrt(d)).  -> (..., d_out).
    """
    y_hat, _ = _forward(params, E_raw, x, keys, scale)
    return y_hat.view(*x.shape[:-1], y_hat.shape[-1])


def authors_attention(params: dict[str, Tensor], E_raw: Tensor, x: Tensor, *, keys: str = "all",
                      scale: float | None = None) -> Tensor:
    """The query's softmax coefficients theta_h of eq. (2) in the authors' model, one model:
    (..., H, n) over the context tokens (keys="context") or (..., H, n + 1), the query's own
    key first (keys="all")."""
    _, theta = _forward(params, E_raw, x, keys, scale)
    return theta.view(*x.shape[:-1], *theta.shape[1:])


def authors_loss(params: dict[str, Tensor], E_raw: Tensor, x: Tensor, y: Tensor, *, keys: str = "all",
                 scale: float | None = None) -> Tensor:
    """Mean cross-entropy of the query token's logits against integer labels y: (B,) -> scalar."""
    return F.cross_entropy(authors_model(params, E_raw, x, keys=keys, scale=scale), y)


def authors_metrics(params: dict[str, Tensor], E_raw: Tensor, x: Tensor, y: Tensor, *, keys: str = "all",
                    scale: float | None = None) -> dict[str, Tensor]:
    """Full-data cross-entropy and accuracy (fraction of argmax y_hat == y)."""
    logits = authors_model(params, E_raw, x, keys=keys, scale=scale)
    return {"loss": F.cross_entropy(logits, y), "accuracy": (logits.argmax(-1) == y).to(logits.dtype).mean()}


def authors_regression_loss(params: dict[str, Tensor], E_raw: Tensor, x: Tensor, y: Tensor, *,
                            keys: str = "all", scale: float | None = None) -> Tensor:
    """Mean squared error against real labels y: (B, d_out), or (B,) with d_out = 1 (App. A's MSE)."""
    y_hat = authors_model(params, E_raw, x, keys=keys, scale=scale)
    return F.mse_loss(y_hat.view(y.shape), y)


def authors_regression_metrics(params: dict[str, Tensor], E_raw: Tensor, x: Tensor, y: Tensor, *,
                               keys: str = "all", scale: float | None = None) -> dict[str, Tensor]:
    """Full-data MSE ("loss") and the largest |y_hat - y| ("max_abs_error")."""
    y_hat = authors_model(params, E_raw, x, keys=keys, scale=scale).view(y.shape)
    return {"loss": F.mse_loss(y_hat, y), "max_abs_error": (y_hat - y).abs().max()}
