"""The softmax Jacobian and its saturation (math text §1.2.3, eq. 8-9).

    s = softmax(z),   J_s = d s / d z = diag(s) - s s^T                      (8)

J_s = 0 exactly at one-hot s (eq. 9), and as the logits are scaled up,
s -> one-hot and ||J_s|| -> 0: the vanishing gradient that 1/sqrt(d_k) guards
against. Typo in the text: the (2,2) entry of the printed J_s reads
-s_2 (1 - s_2); it is +s_2 (1 - s_2), like every diagonal entry.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor


def softmax_jacobian(z: Tensor) -> Tensor:
    """Closed form diag(s) - s s^T for z of shape (..., n); returns (..., n, n).

    The diagonal is formed as s_i (1 - s_i) with 1 - s_i = sum_{j != i} s_j
    evaluated in log space: s_i - s_i^2 rounds to 0 at the argmax once
    1 - s_max < 2^-53 (float64), although J_ii ~ 1 - s_max is then the largest
    entry, and ||J||_F would lose a quarter of its square near one-hot.
    """
    n = z.shape[-1]
    s = torch.softmax(z, dim=-1)  # (..., n)
    eye = torch.eye(n, dtype=torch.bool, device=z.device)
    log_others = torch.logsumexp(z.unsqueeze(-2).masked_fill(eye, -math.inf), dim=-1)  # (..., n)
    one_minus_s = torch.exp(log_others - torch.logsumexp(z, dim=-1, keepdim=True))  # (..., n)
    off = -s[..., :, None] * s[..., None, :]  # (..., n, n)
    return torch.where(eye, torch.diag_embed(s * one_minus_s), off)


def softmax_jacobian_autograd(z: Tensor) -> Tensor:
    """d softmax(z) / dz by autograd for a single vector z of shape (n,)."""
    return torch.autograd.functional.jacobian(lambda x: torch.softmax(x, dim=-1), z)


def jacobian_norm_vs_scale(z: Tensor, scales: Tensor) -> Tensor:
    """||J_s(t z)||_F for each t in ``scales``; z (n,), returns (len(scales),)."""
    return torch.stack([torch.linalg.matrix_norm(softmax_jacobian(t * z)) for t in scales])
