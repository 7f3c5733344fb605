"""Per-head statistics of attention maps: entropy, distance, offsets, special tokens, confidence.

A: (..., n, n) row-stochastic maps, rows are queries (:mod:`attnlab.analysis.heads.maps`);
every statistic is first computed per query row, shape (..., n), then averaged over the
real (non-padding) query rows into one number per map, shape (...). Leading axes are
anything, e.g. (layers, heads) or (documents, layers, heads).

    entropy     H_i = -sum_{j in K_i} a'_ij ln a'_ij,  a'_ij = 0.9999 a_ij + 0.0001 / |K_i|
                (Clark et al. 2019's smoothing, General_Analysis.ipynb, which keeps ln finite;
                K_i = the keys row i could attend: the real tokens, and j <= i when causal; with
                neither, |K_i| = n, exactly Clark's a' = 0.9999 a + 1e-4 / T)
    uniform     ln |K_i|: the entropy of uniform attention over the same keys (Clark prints it
                beside the heads' entropies; it depends on the length, the 3.8-nat threshold does not)
    distance    sum_j a_ij |i - j|: the mean attention distance in tokens
    previous    a_{i,i-1}  (subdiagonal)     self  a_ii     next  a_{i,i+1}  (superdiagonal)
                0 where the key does not exist; averaged over every real row, as Clark does
    to_keys     sum_{j in S} a_ij for a key set S ([CLS], [SEP], punctuation, given positions)
    confidence  max_j a_ij (Voita et al. 2019's "confidence", before excluding any token)

All in float64; maps are read, never written.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping

import torch
from torch import Tensor

from attnlab.analysis.heads.maps import as_maps, key_set, real_tokens, row_mean, visible_keys
from attnlab.config import check_number

CLARK_SMOOTHING = 0.9999  # a' = 0.9999 a + (1 - 0.9999) / |K_i|


def row_entropy(A, *, key_padding_mask=None, causal: bool = False, smoothing: float = CLARK_SMOOTHING) -> Tensor:
    """H_i (..., n) in nats with Clark's smoothing (module docstring); padded rows are NaN."""
    check_number("smoothing", smoothing, 0.0, 1.0, open_min=True)
    A = as_maps(A)
    real = real_tokens(A, key_padding_mask)
    keys = visible_keys(A, real, causal)  # (..., n, n)
    count = keys.sum(-1, keepdim=True).clamp_min(1).to(torch.float64)  # |K_i|, (..., n, 1)
    a = smoothing * A + (1.0 - smoothing) / count
    H = -torch.where(keys, torch.xlogy(a, a), 0.0).sum(-1)  # 0 ln 0 = 0 (smoothing = 1 leaves zeros)
    return torch.where(real, H, torch.full_like(H, float("nan")))


def offset_weight(A: Tensor, offset: int) -> Tensor:
    """a_{i, i+offset} (..., n), 0 where i + offset is outside [0, n). A: float64 maps."""
    n = A.shape[-1]
    out = torch.zeros(A.shape[:-1], dtype=A.dtype)
    if abs(offset) < n:
        d = torch.diagonal(A, offset=offset, dim1=-2, dim2=-1)  # (..., n - |offset|)
        if offset >= 0:
            out[..., : n - offset] = d
        else:
            out[..., -offset:] = d
    return out


@dataclass(frozen=True)
class HeadStatistics:
    """Averages over real query rows, each of shape (...): one number per map.

    entropy, uniform_entropy (nats), distance (tokens), previous, self_, next (weights),
    to_keys: {name: mean weight on that key set}, confidence (mean max weight),
    rows: how many real query rows each average is over, smoothing: the entropy smoothing.
    """

    entropy: Tensor
    uniform_entropy: Tensor
    distance: Tensor
    previous: Tensor
    self_: Tensor
    next: Tensor
    confidence: Tensor
    to_keys: Mapping[str, Tensor] = field(default_factory=dict)
    rows: Tensor | None = None
    smoothing: float = CLARK_SMOOTHING


def head_statistics(A, *, key_padding_mask=None, causal: bool = False, keys: Mapping[str, object] | None = None,
                    smoothing: float = CLARK_SMOOTHING) -> HeadStatistics:
    """Every statistic of the module docstring for maps A (..., n, n).

    keys: named key sets, each a bool mask (..., n) or a list of positions, e.g.
    {"[CLS]": [0], "[SEP]": token_mask(tokens, ["[SEP]"]), "punctuation": token_mask(tokens, ".,")}.
    """
    A = as_maps(A)
    real = real_tokens(A, key_padding_mask)
    vis = visible_keys(A, real, causal)
    n = A.shape[-1]
    i = torch.arange(n, dtype=torch.float64)
    dist = (A * (i[:, None] - i[None, :]).abs()).sum(-1)  # (..., n)
    uniform = torch.log(vis.sum(-1).clamp_min(1).to(torch.float64))
    to_keys = {name: row_mean((A * key_set(A, s, name=f"keys[{name!r}]")[..., None, :]).sum(-1), real)
               for name, s in (keys or {}).items()}
    return HeadStatistics(
        entropy=row_mean(row_entropy(A, key_padding_mask=key_padding_mask, causal=causal, smoothing=smoothing), real),
        uniform_entropy=row_mean(uniform, real),
        distance=row_mean(dist, real),
        previous=row_mean(offset_weight(A, -1), real),
        self_=row_mean(offset_weight(A, 0), real),
        next=row_mean(offset_weight(A, 1), real),
        confidence=row_mean(A.amax(-1), real),
        to_keys=to_keys,
        rows=real.sum(-1),
        smoothing=smoothing,
    )


def uniform_entropy(n: int) -> float:
    """ln n: the entropy of uniform attention over n keys (3.8 nats is uniform over e^3.8 ~ 45 keys)."""
    return math.log(n)
