"""The softmax Jacobian and its saturation (math text §1.2.3, eq. 8-9).

    s = softmax(z),   J_s = d s / d z = diag(s) - s s^T                      (8)

J_s = 0 exactly at one-hot s (eq. 9), and as the logits are scaled up,
s -> one-hot and ||J_s|| -> 0: the vanishing gradient that 1/sqrt(d_k) guards
against. Typo in the text: the (2,2) entry of the printed J_s reads
-s_2 (1 - s_2); it is +s_2 (1 - s_2), like every diagonal entry.
"""

from __future__ import annotations

import torch
from torch import Tensor


def softmax_jacobian(z: Tensor) -> Tensor:
    """Closed form diag(s) - s s^T for z of shape (..., n); returns (..., n, n)."""
    s = torch.softmax(z, dim=-1)
    return torch.diag_embed(s) - s[..., :, None] * s[..., None, :]


def softmax_jacobian_autograd(z: Tensor) -> Tensor:
    """d softmax(z) / dz by autograd for a single vector z of shape (n,)."""
    return torch.autograd.functional.jacobian(lambda x: torch.softmax(x, dim=-1), z)


def jacobian_norm_vs_scale(z: Tensor, scales: Tensor) -> Tensor:
    """||J_s(t z)||_F for each t in ``scales``; z (n,), returns (len(scales),)."""
    return torch.stack([torch.linalg.matrix_norm(softmax_jacobian(t * z)) for t in scales])
