"""Single-head self-attention networks without biases, as in Theorem 2.2 of the rank-collapse
notes (Dong et al. 2021, Theorem 2.2), with the quantities the theorem's bound is made of.

    SA_l(X) = softmax(X W_QK^l X^T / sqrt(d_qk)) X W_V^l,   W_QK^l = W_Q^l (W_K^l)^T (d x d),
    W_V^l (d x d) (value and output projections merged; biases only add 1 b^T, which res removes)

    beta_l = ||W_QK^l||_1 ||W_V^l||_{1,inf},   c_l = 4 beta_l / sqrt(d_qk)

    one layer:   ||res SA_l(X)||_{1,inf} <= c_l ||res X||_{1,inf}^3
    L layers:    ||res SAN(X)||_{1,inf}  <= c^{(3^L - 1)/2} ||res X||_{1,inf}^{3^L},  c = max_l c_l

(the L-layer form follows from the one-layer form by induction: exponents 1 + 3 + ... +
3^{L-1} = (3^L - 1)/2 on c). res is the exact composite-norm residual (Dong et al.'s
definition; the notes' §2.2 writes the 2-norm argmin, but measures ||.||_{1,inf}).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from attnlab.analysis.residuals import composite_norm, l1_norm


def single_head_layer(X: Tensor, W_Q: Tensor, W_K: Tensor, W_V: Tensor) -> Tensor:
    """softmax(X W_Q W_K^T X^T / sqrt(d_qk)) X W_V for X (..., n, d), W_Q, W_K (d, d_qk), W_V (d, d)."""
    A = (X @ W_Q) @ (X @ W_K).transpose(-1, -2) / math.sqrt(W_Q.shape[-1])  # (..., n, n)
    return torch.softmax(A, dim=-1) @ X @ W_V


def layer_beta(W_Q: Tensor, W_K: Tensor, W_V: Tensor) -> Tensor:
    """beta = ||W_QK||_1 ||W_V||_{1,inf}, W_QK = W_Q W_K^T (Theorem 2.2's hypothesis on one layer);
    W_Q, W_K (..., d, d_qk), W_V (..., d, d) (the value-output product), shape (...)."""
    return l1_norm(W_Q @ W_K.transpose(-1, -2)) * composite_norm(W_V)


def layer_constant(W_Q: Tensor, W_K: Tensor, W_V: Tensor) -> Tensor:
    """c = 4 beta / sqrt(d_qk), beta = ||W_Q W_K^T||_1 ||W_V||_{1,inf} (Theorem 2.2; :func:`layer_beta`)."""
    return 4 * layer_beta(W_Q, W_K, W_V) / math.sqrt(W_Q.shape[-1])


def log_theorem22_bound(c: float, res0: float, L: int) -> float:
    """ln of Theorem 2.2's bound c^{(3^L - 1)/2} res0^{3^L} after L layers:
    (3^L - 1)/2 ln c + 3^L ln res0, with c = 4 H beta / sqrt(d_qk) (H = 1 in the theorem) and
    res0 = ||res X||_{1,inf} of the input; -inf when res0 = 0."""
    if res0 == 0:
        return -math.inf
    return (3**L - 1) / 2 * math.log(c) + 3**L * math.log(res0)


def theorem22_bound(c: float, res0: float, L: int) -> float:
    """c^{(3^L - 1)/2} res0^{3^L} (:func:`log_theorem22_bound`), inf or 0 rather than overflow."""
    log = log_theorem22_bound(c, res0, L)
    return math.exp(log) if log < 700 else math.inf


def random_single_head_weights(L: int, d: int, d_qk: int, g: torch.Generator, scale: float = 1.0):
    """L layers of (W_Q, W_K, W_V), entries N(0, scale^2 / d), float64."""
    def w(*shape):
        return torch.randn(*shape, generator=g, dtype=torch.float64) * scale / math.sqrt(d)

    return [(w(d, d_qk), w(d, d_qk), w(d, d)) for _ in range(L)]
