"""Rotary position embedding (RoPE; Su et al. 2021, "RoFormer", eq. (34)), in the half-split layout.

The math text's sinusoidal encoding (§1.2.1) shifts by a rotation: PE(t + s) = M_s PE(t), one
2 x 2 rotation per frequency. RoPE applies that rotation to the queries and keys themselves
instead of adding a position vector to the input. For a head of even size d and position p,

    theta_k = b^(-2k/d),                    k = 0, ..., d/2 - 1   (b the base: 10^4 in RoFormer,
                                                                     10^5 in SmolLM2)
    R(p) x:  (x_k, x_{k+d/2})  ->  (x_k cos(p theta_k) - x_{k+d/2} sin(p theta_k),
                                    x_{k+d/2} cos(p theta_k) + x_k sin(p theta_k))

so R(p) is orthogonal, R(p)^T R(p') = R(p' - p), and the logit of query i and key j,

    (R(p_i) q_i) . (R(p_j) k_j) = q_i^T R(p_j - p_i) k_j,

depends on the positions only through p_j - p_i.

Layout. RoFormer rotates the adjacent pairs (x_{2k}, x_{2k+1}); Llama checkpoints in the
transformers layout rotate (x_k, x_{k+d/2}), the "rotate half" layout used here. The two are
one fixed permutation of the head's coordinates apart, applied to the rows of W_Q and W_K:
GGUF files store the adjacent-pair layout, and :mod:`attnlab.pretrained.llama` moves their rows
back (:func:`half_split_rows`).

Numerics: the angles p theta_k are formed in float64 whatever the input dtype and cast at the
end, so positions up to 8192 lose nothing to float32 rounding of the product (transformers forms
them in float32: at p = 8192 an angle is off by up to ~4e-4 rad there).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from attnlab.errors import ConfigError


def rope_frequencies(d_head: int, base: float = 10000.0, *, device=None) -> Tensor:
    """theta_k = base^(-2k/d_head), k = 0, ..., d_head/2 - 1, float64, shape (d_head/2,)."""
    if not isinstance(d_head, int) or d_head <= 0 or d_head % 2:
        raise ConfigError(f"RoPE needs an even head size d_head > 0, got {d_head!r}")
    if not (isinstance(base, (int, float)) and math.isfinite(base) and base > 1):
        raise ConfigError(f"the RoPE base must be a finite number > 1 (10000 in RoFormer), got {base!r}")
    k = torch.arange(0, d_head, 2, dtype=torch.float64, device=device)
    return float(base) ** (-k / d_head)


@dataclass(frozen=True)
class Rotary:
    """cos(p theta), sin(p theta) of given positions, each (B or 1, n, d_head) in the
    half-split layout ([theta, theta] repeated), ready to rotate q and k (..., H, n, d_head)."""

    cos: Tensor
    sin: Tensor

    def rotate(self, x: Tensor) -> Tensor:
        """R(p) x over the last axis of x (..., H, n, d_head); cos/sin broadcast over the heads."""
        d = x.shape[-1]
        if d != self.cos.shape[-1]:
            raise ConfigError(f"RoPE was built for head size {self.cos.shape[-1]}, got vectors of size {d}")
        cos, sin = self.cos.unsqueeze(-3), self.sin.unsqueeze(-3)  # (B, 1, n, d)
        x1, x2 = x[..., : d // 2], x[..., d // 2:]
        return x * cos + torch.cat((-x2, x1), dim=-1) * sin

    def __call__(self, q: Tensor, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """The q/k/v transform of :func:`attnlab.ops.multihead.multi_head_attention`: (R q, R k, v)."""
        return self.rotate(q), self.rotate(k), v


def rotary(position_ids: Tensor, d_head: int, base: float = 10000.0, *, dtype: torch.dtype = torch.float64,
           scaling: float = 1.0) -> Rotary:
    """The :class:`Rotary` of integer ``position_ids`` (B, n) (or (n,)): angles p theta_k / scaling in float64,
    cos and sin cast to ``dtype``. ``scaling`` > 1 is linear position interpolation (positions divided
    by it; transformers' rope_scaling type "linear")."""
    if position_ids.dtype not in (torch.int64, torch.int32):
        raise ConfigError(f"position_ids must be an integer tensor, got {position_ids.dtype}")
    if not (isinstance(scaling, (int, float)) and math.isfinite(scaling) and scaling > 0):
        raise ConfigError(f"the RoPE position scaling must be a positive number, got {scaling!r}")
    p = position_ids if position_ids.ndim == 2 else position_ids.reshape(1, -1)
    theta = rope_frequencies(d_head, base, device=p.device)
    angles = (p.to(torch.float64) / float(scaling))[..., None] * theta  # (B, n, d/2)
    angles = torch.cat((angles, angles), dim=-1)  # (B, n, d): [theta, theta], the half-split layout
    return Rotary(angles.cos().to(dtype), angles.sin().to(dtype))


def half_split_rows(W: Tensor, n_heads: int) -> Tensor:
    """Rows of a projection (n_heads d_head, ...) in the adjacent-pair layout -> the half-split layout.

    Within each head, row 2k + r (pair k, member r in {0, 1}) moves to row r d_head/2 + k, so that
    the pair (2k, 2k+1) becomes (k, k + d_head/2). This undoes the permutation a GGUF conversion
    applies to W_q and W_k of Llama models (the inverse of
    :func:`adjacent_pair_rows`).
    """
    rows = W.shape[0]
    if rows % n_heads or (rows // n_heads) % 2:
        raise ConfigError(f"a projection of {rows} rows cannot hold {n_heads} heads of even size")
    d = rows // n_heads
    return W.reshape(n_heads, d // 2, 2, *W.shape[1:]).transpose(1, 2).reshape(W.shape)


def adjacent_pair_rows(W: Tensor, n_heads: int) -> Tensor:
    """The inverse of :func:`half_split_rows`: half-split rows -> the adjacent-pair layout."""
    rows = W.shape[0]
    if rows % n_heads or (rows // n_heads) % 2:
        raise ConfigError(f"a projection of {rows} rows cannot hold {n_heads} heads of even size")
    d = rows // n_heads
    return W.reshape(n_heads, 2, d // 2, *W.shape[1:]).transpose(1, 2).reshape(W.shape)
