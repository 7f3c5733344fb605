"""Positional encodings (math-behind-transformers §1.2.1, eq. 1).

Sinusoidal encoding f: N -> R^d, for k = 0, ..., d/2 - 1,

    f(t)^(2k)   = sin(w_k t)
    f(t)^(2k+1) = cos(w_k t),        w_k = 1 / N^(2k/d),   N = 10000 in [1]

stacked as P in R^{n x d}, P[t] = f(t), and added to the token embeddings,
X W^E + P[:n, :].

A shift by s is one fixed linear map: PE(t + s) = M_s PE(t) for every t, with
M_s block diagonal, one 2x2 rotation per frequency acting on the pair
(sin(w_k t), cos(w_k t)):

    [sin(w_k (t+s))]   [ cos(w_k s)  sin(w_k s)] [sin(w_k t)]
    [cos(w_k (t+s))] = [-sin(w_k s)  cos(w_k s)] [cos(w_k t)]

Typos in the text, corrected here:
* the complex form is f(t)^(k) = e^{i w_k t} (the text prints e^{i t / w_k});
* "a sin(w_k t) + b" hides that b = sin(w_k s) cos(w_k t) depends on t through
  the *other* coordinate of the pair: the map mixes sin and cos, it is not a
  per-coordinate affine map (likewise a' cos(w_k t) + b');
* "(sin(w_1 t), ..., sin(w_d t))" is loose: the vector interleaves sin and cos
  of d/2 frequencies w_0, ..., w_{d/2-1}.

Positions that act on the queries, keys and values instead of the input (:class:`QKVTransform`):
a stack builds, once per pass from the position ids p (B, n), one map

    T_p: (q, k, v) -> (q', k', v'),   q (B, H, n, k), k (B, H_kv, n, k), v (B, H_kv, n, d_v), shapes kept,

and every block applies it after the projections Q_h = X W_Q,h + b_Q,h (and K_h, V_h), before the
logits c Q_h K_h^T. Its first implementation is :class:`RoPE` (Su et al. 2021, "RoFormer",
eq. (34)): each pair of coordinates of a query or key at position p is rotated by the angle
p theta_j, theta_j = b^(-2j/k), j = 0, ..., k/2 - 1 (b the base), and v is left as it is.
The pairs are in the half-split layout, pair j = (x_j, x_{j+k/2}) (RoFormer's adjacent pairs
(x_{2j}, x_{2j+1}) are one fixed permutation of a head's coordinates away):

    x'_j       = x_j cos(p theta_j) - x_{j+k/2} sin(p theta_j)
    x'_{j+k/2} = x_{j+k/2} cos(p theta_j) + x_j sin(p theta_j)

so q'_i . k'_j = q_i^T R(p_j - p_i) k_j depends on the positions only through p_j - p_i: the
shift-by-rotation of eq. (1) above, moved from the input to the logits (:mod:`attnlab.ops.rotary`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import torch
from torch import Tensor, nn

from attnlab.errors import ConfigError
from attnlab.ops.multihead import QKVMap
from attnlab.ops.rotary import Rotary, rotary


def _check(d: int, N: float) -> None:
    if d <= 0 or d % 2 != 0:
        raise ConfigError(f"the sinusoidal encoding needs an even dimension d > 0, got d={d}")
    if not N > 1:
        raise ConfigError(f"the base N must be > 1 (the text uses N=10000), got N={N}")


def frequencies(d: int, N: float = 10000.0) -> Tensor:
    """w_k = N^(-2k/d) for k = 0, ..., d/2 - 1, float64, shape (d/2,)."""
    _check(d, N)
    k = torch.arange(d // 2, dtype=torch.float64)
    return torch.as_tensor(float(N), dtype=torch.float64) ** (-2.0 * k / d)


def sinusoidal_encoding(
    n_positions: int, d: int, N: float = 10000.0, dtype: torch.dtype = torch.float32
) -> Tensor:
    """P in R^{n x d} with P[t, 2k] = sin(w_k t), P[t, 2k+1] = cos(w_k t), eq. (1).

    Computed in float64 for t = 0, ..., n_positions - 1, then cast to ``dtype``.
    """
    if n_positions <= 0:
        raise ConfigError(f"n_positions must be positive, got {n_positions}")
    w = frequencies(d, N)  # (d/2,)
    angles = torch.arange(n_positions, dtype=torch.float64)[:, None] * w[None, :]  # (n, d/2)
    P = torch.stack((torch.sin(angles), torch.cos(angles)), dim=-1)  # (n, d/2, 2)
    return P.reshape(n_positions, d).to(dtype)  # (n, d), interleaved sin/cos


def shift_matrix(s: float, d: int, N: float = 10000.0, dtype: torch.dtype = torch.float64) -> Tensor:
    """M_s in R^{d x d}, block diagonal with 2x2 rotations, PE(t+s) = M_s PE(t).

    Block k (rows/cols 2k, 2k+1) is [[cos(w_k s), sin(w_k s)], [-sin(w_k s), cos(w_k s)]].
    Row-vector form: P[t + s] = P[t] @ M_s.T.
    """
    a = frequencies(d, N) * float(s)  # (d/2,)
    c, sn = torch.cos(a), torch.sin(a)
    blocks = torch.stack((torch.stack((c, sn), -1), torch.stack((-sn, c), -1)), -2)  # (d/2, 2, 2)
    return torch.block_diag(*blocks).to(dtype)  # (d, d)


def _check_length(n: int, max_len: int) -> None:
    if n > max_len:
        raise ConfigError(
            f"sequence length {n} exceeds max_len={max_len}: build the encoding with a larger max_len"
        )


def _rows(P: Tensor, x: Tensor, position_ids: Tensor | None, max_len: int) -> Tensor:
    """P[:n] (n = x's length), or P[position_ids] for explicit positions."""
    n = x.shape[-2]
    if position_ids is None:
        _check_length(n, max_len)
        return P[:n]  # (n, d)
    if position_ids.dtype not in (torch.int64, torch.int32) or position_ids.shape[-1:] != (n,):
        raise ConfigError(
            f"position_ids must be an integer tensor (..., {n}) matching the input's length, "
            f"got {position_ids.dtype} {tuple(position_ids.shape)}"
        )
    if position_ids.numel() and (position_ids.min() < 0 or position_ids.max() >= max_len):
        raise ConfigError(
            f"position_ids must lie in [0, {max_len}), got [{position_ids.min()}, {position_ids.max()}]: "
            "build the encoding with a larger max_len"
        )
    return P[position_ids]  # (..., n, d)


class SinusoidalPositionalEncoding(nn.Module):
    """x -> x + P[:n] with the fixed sinusoidal P (buffer, no parameters)."""

    def __init__(self, d_model: int, max_len: int = 512, N: float = 10000.0, dropout: float = 0.0):
        super().__init__()
        self.d_model, self.max_len, self.N = d_model, max_len, N
        # float64 so a float64 model sees the exact encoding; cast to x's dtype on use
        self.register_buffer("P", sinusoidal_encoding(max_len, d_model, N, torch.float64), persistent=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor, position_ids: Tensor | None = None) -> Tensor:
        """x: (..., n, d_model) -> x + P[position_ids] (default P[:n]), (..., n, d_model).

        position_ids: integer (..., n) (or (n,)), each in [0, max_len).
        """
        return self.dropout(x + _rows(self.P, x, position_ids, self.max_len).to(x.dtype))


class LearnedPositionalEmbedding(nn.Module):
    """x -> x + P[:n] with a trainable P in R^{max_len x d} (GPT, BERT)."""

    def __init__(self, d_model: int, max_len: int = 512, dropout: float = 0.0, std: float = 0.02):
        super().__init__()
        if d_model <= 0 or max_len <= 0:
            raise ConfigError(f"d_model and max_len must be positive, got {d_model}, {max_len}")
        self.d_model, self.max_len = d_model, max_len
        self.P = nn.Parameter(torch.randn(max_len, d_model) * std)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor, position_ids: Tensor | None = None) -> Tensor:
        """x: (..., n, d_model) -> x + P[position_ids] (default P[:n]), (..., n, d_model).

        position_ids: integer (..., n) (or (n,)), each in [0, max_len).
        """
        return self.dropout(x + _rows(self.P, x, position_ids, self.max_len))


@runtime_checkable
class QKVTransform(Protocol):
    """What acts on every layer's projected queries, keys and values (module docstring): the
    extension point of positions that are not added to the input.

    :meth:`at` builds the pass's map T_p from the position ids once; every block calls it on its
    (q, k, v). :class:`RoPE` is the first implementation.
    """

    def at(self, position_ids: Tensor, d_head: int, dtype: torch.dtype) -> QKVMap:
        """T_p for integer ``position_ids`` (B, n) (or (n,)) and heads of size ``d_head`` = k, computed
        in ``dtype``: a callable (q, k, v) -> (q', k', v') on (..., H, n, k), (..., H_kv, n, k),
        (..., H_kv, n, d_v). One-line ConfigError when it cannot act on such heads."""
        ...


@dataclass(frozen=True)
class RoPE:
    """Rotary position embedding (Su et al. 2021, eq. (34); module docstring), a :class:`QKVTransform`.

    base:    b of theta_j = b^(-2j/k) (10^4 in RoFormer, 10^5 in SmolLM2)
    scaling: s > 0, linear position interpolation: angles (p / s) theta_j (1.0: none)

    T_p(q, k, v) = (R(p) q, R(p) k, v) in the half-split layout; angles formed in float64
    (:func:`attnlab.ops.rotary.rotary`).
    """

    base: float = 10000.0
    scaling: float = 1.0

    def __post_init__(self) -> None:
        if isinstance(self.base, bool) or not (isinstance(self.base, (int, float)) and math.isfinite(self.base)
                                               and self.base > 1):
            raise ConfigError(f"the RoPE base must be a finite number > 1 (10000 in RoFormer), got {self.base!r}")
        if isinstance(self.scaling, bool) or not (isinstance(self.scaling, (int, float))
                                                  and math.isfinite(self.scaling) and self.scaling > 0):
            raise ConfigError(f"the RoPE position scaling must be a positive number, got {self.scaling!r}")

    def at(self, position_ids: Tensor, d_head: int, dtype: torch.dtype) -> Rotary:
        """R(p) of every position, cos and sin (B or 1, n, k) in ``dtype``: called on (q, k, v) it
        returns (R q, R k, v)."""
        return rotary(position_ids, d_head, self.base, dtype=dtype, scaling=self.scaling)
