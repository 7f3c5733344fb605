"""O(n) BigBird and Longformer attention over a SparsePattern (math text §2.1.1, eq. 11).

    o_i = sum_{j in N(i)} softmax_j(c q_i · k_j) v_j,  N(i) = N_win(i) ∪ extra(i)   (11)

One softmax over both parts of N(i): the window logits come from banded blocks
(queries in blocks of B share one strip of B + 2 half keys, one matmul per
block, as window.py; a dilation delta splits the sequence into delta residue
classes, each an undilated window), the extra logits from gathering only the e
extra keys of each row (random keys, global columns). Global rows are dense
softmax rows against their mask, O(g n). Time and memory O(n (B + 2 half + e) d),
linear in n. Equal to the dense masked softmax in value and gradient (float64, 1e-12).
With return_weights the dense (..., n, n) weights are scattered into one tensor, in place,
after a check that it fits (attnlab.ops.memory), made before the pattern is built.
"""

from __future__ import annotations

from typing import Callable, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor

from attnlab.errors import ConfigError
from attnlab.ops.memory import check_dense_fits
from attnlab.ops.softmax import (
    AttentionOutput,
    Scale,
    batch_shape,
    check_qkv,
    empty_attention,
    masked_softmax,
    resolve_scale,
)
from attnlab.ops.softmax import softmax_attention
from attnlab.ops.sparse.gather import gather_rows
from attnlab.ops.sparse.pattern import SparsePattern, bigbird_pattern, longformer_pattern
from attnlab.ops.sparse.window import BLOCK, _padded
from attnlab.ops.tables import table_cache


class _Band:
    """Window logits of one dilation for q, k (..., n, d): (..., n, L) in row order, with
    ``allowed`` and ``keys`` (n, L) (key position, n where none) and ``apply(P, v)``."""

    def __init__(self, n: int, half: int, delta: int, causal: bool, B: int):
        self.n, self.half, self.delta = n, half, delta
        self.m = -(-n // delta)  # tokens per residue class (the last ones padded)
        self.B = B  # the same for every head group, so that their strips are equally long
        self.nb = -(-self.m // self.B)
        self.L = self.B + half + (0 if causal else half)
        s = torch.arange(self.B)[:, None]
        t = torch.arange(self.L)[None, :]
        a_key = (torch.arange(self.nb) * self.B - half)[:, None, None] + t  # (nb, 1, L) key index in its class
        rho = torch.arange(delta)[:, None, None, None]
        pos = rho + delta * a_key  # (delta, nb, 1, L) key position
        ok = (t >= s) & (t <= s + self.L - self.B) & (a_key >= 0) & (pos < n)  # (delta, nb, B, L)
        self.allowed = self.rows(ok)  # (n, L)
        self.keys = self.rows(torch.where(ok, pos, n).expand(ok.shape))  # (n, L)

    def to(self, device: torch.device) -> "_Band":
        """This band with its tables on ``device``."""
        self.allowed, self.keys = self.allowed.to(device), self.keys.to(device)
        return self

    def classes(self, x: Tensor, rows: int) -> Tensor:
        """x (..., n, f) -> (..., delta, rows, f): class rho, index a = position rho + delta a."""
        x = F.pad(x, (0, 0, 0, self.m * self.delta - self.n))
        x = x.reshape(*x.shape[:-2], self.m, self.delta, x.shape[-1]).transpose(-2, -3)  # (..., delta, m, f)
        return F.pad(x, (0, 0, 0, rows - self.m))

    def rows(self, x: Tensor) -> Tensor:
        """(..., delta, nb, B, f) -> (..., n, f) in position order (inverse of classes)."""
        x = x.reshape(*x.shape[:-3], self.nb * self.B, x.shape[-1])[..., : self.m, :]  # (..., delta, m, f)
        x = x.transpose(-2, -3).reshape(*x.shape[:-3], self.m * self.delta, x.shape[-1])
        return x[..., : self.n, :]

    def strips(self, x: Tensor) -> Tensor:
        """x (..., n, f) -> overlapping key strips (..., delta, nb, L, f) (views of one padded copy)."""
        T = (self.nb - 1) * self.B + self.L
        xc = _padded(self.classes(x, self.m), -self.half, T)  # (..., delta, T, f)
        return xc.unfold(-2, self.L, self.B).transpose(-1, -2)  # (..., delta, nb, L, f)

    def logits(self, q: Tensor, k: Tensor) -> Tensor:
        Q = self.classes(q, self.nb * self.B)
        Q = Q.reshape(*Q.shape[:-2], self.nb, self.B, Q.shape[-1])  # (..., delta, nb, B, d)
        return self.rows(Q @ self.strips(k).transpose(-1, -2))  # (..., n, L)

    def apply(self, P: Tensor, v: Tensor) -> Tensor:
        Pc = self.classes(P, self.nb * self.B)
        Pc = Pc.reshape(*Pc.shape[:-2], self.nb, self.B, self.L)  # (..., delta, nb, B, L)
        return self.rows(Pc @ self.strips(v))  # (..., n, d_v)


def _block(p: SparsePattern) -> int:
    """Query block size: BLOCK, or the longest residue class if shorter."""
    return max(1, min(BLOCK, -(-p.n // max(p.dilation))))


def _head_groups(dilation: tuple[int, ...]) -> list[tuple[int, Tensor]]:
    """[(delta, head indices)] per distinct dilation."""
    return [(d, torch.tensor([h for h, x in enumerate(dilation) if x == d])) for d in sorted(set(dilation))]


@table_cache(maxsize=32)
def _placed_bands(n: int, half: int, dilation: tuple[int, ...], causal: bool, B: int, device: torch.device) -> tuple[list[tuple[Tensor | None, _Band]], Tensor | None]:
    """The window tables of a pattern on ``device``: [(head indices, band)] per distinct dilation
    and the permutation putting the heads back in order (None for one shared dilation). Built on
    the host from the sizes alone and copied once per device, so a forward pass copies nothing."""
    if len(dilation) == 1:
        return [(None, _Band(n, half, dilation[0], causal, B).to(device))], None
    groups = [(h.to(device), _Band(n, half, d, causal, B).to(device)) for d, h in _head_groups(dilation)]
    order = torch.cat([h for h, _ in groups]).argsort()  # heads back in order
    return groups, order


@table_cache(maxsize=32)
def _placed(pattern: SparsePattern, device: torch.device) -> tuple[Tensor, Tensor, Tensor]:
    """(extra, global_rows, global_mask) of ``pattern`` on ``device``, copied once per device."""
    return pattern.extra.to(device), pattern.global_rows.to(device), pattern.global_mask.to(device)


def _window_logits(p: SparsePattern, q: Tensor, k: Tensor) -> tuple[Tensor, Tensor, Tensor, Callable[[Tensor, Tensor], Tensor]]:
    """Window logits (..., [H,] n, L), allowed and key positions (broadcastable, on q's device),
    and an apply(P, v)."""
    groups, order = _placed_bands(p.n, p.half, p.dilation, p.causal, _block(p), q.device)
    if order is None:
        band = groups[0][1]
        return band.logits(q, k), band.allowed, band.keys, band.apply
    cat = lambda xs: torch.cat(xs, dim=-3).index_select(-3, order)  # noqa: E731
    logits = cat([b.logits(q.index_select(-3, h), k.index_select(-3, h)) for h, b in groups])
    allowed = cat([b.allowed.expand(len(h), -1, -1) for h, b in groups])  # (H, n, L)
    keys = cat([b.keys.expand(len(h), -1, -1) for h, b in groups])

    def apply(P: Tensor, v: Tensor) -> Tensor:
        return cat([b.apply(P.index_select(-3, h), v.index_select(-3, h)) for h, b in groups])

    return logits, allowed, keys, apply


def _check_weights_fit(q: Tensor, k: Tensor, v: Tensor, caller: str) -> None:
    """ConfigError before the pattern or anything dense is built when the (..., n, n) weights cannot fit."""
    check_dense_fits(q, k, v, copies=1, what=f"{caller}(return_weights=True): the dense weights",
                     change="lower n, or drop return_weights (without them memory grows linearly in n)")


def pattern_attention(
    q: Tensor, k: Tensor, v: Tensor, pattern: SparsePattern, *, scale: Scale = "1/sqrt(d)", return_weights: bool = False
) -> AttentionOutput:
    """Softmax attention over a SparsePattern (module docstring); q, k, v (..., n, d), n = pattern.n.

    With a per-head dilation q, k, v need a head axis (..., H, n, d) with H = len(pattern.dilation).
    return_weights gives the dense (..., n, n) weights (O(n^2) memory).
    """
    check_qkv(q, k, v)
    n = pattern.n
    if q.shape[-2] != n or k.shape[-2] != n:
        raise ConfigError(f"the pattern is for n={n} tokens, got n_q={q.shape[-2]}, n_k={k.shape[-2]}: build it for this n")
    if return_weights:
        _check_weights_fit(q, k, v, "pattern_attention")
    if pattern.heads is not None and (q.ndim < 3 or batch_shape(q, k, v)[-1] != pattern.heads):
        raise ConfigError(f"the pattern has one dilation per head: q, k, v must be (..., {pattern.heads}, n, d)")
    c = resolve_scale(scale, q.shape[-1])
    batch = tuple(torch.broadcast_shapes(batch_shape(q, k, v), pattern.extra.shape[:-2], pattern.global_mask.shape[:-2]))
    q, k, v = (t.expand(*batch, *t.shape[-2:]) for t in (q, k, v))
    dev = q.device
    extra, g, global_mask = _placed(pattern, dev)  # g: the global rows
    e = extra.expand(*batch, n, extra.shape[-1])
    valid_e, idx_e = e >= 0, e.clamp(min=0)
    K_E, V_E = gather_rows(k, batch, idx_e), gather_rows(v, batch, idx_e)  # (*batch, n, e, d)
    logits_e = torch.einsum("...id,...iwd->...iw", q, K_E)
    if pattern.half >= 0:
        logits_w, allowed_w, keys_w, apply_w = _window_logits(pattern, q, k)
        L = logits_w.shape[-1]
        logits = torch.cat([logits_w, logits_e], dim=-1) * c
        allowed = torch.cat([allowed_w.expand(*batch, n, L), valid_e], dim=-1)
    else:
        L, logits, allowed = 0, logits_e * c, valid_e
    P = masked_softmax(logits, allowed)  # (*batch, n, L + e)
    out = torch.einsum("...iw,...iwd->...id", P[..., L:], V_E)
    if L:
        out = out + apply_w(P[..., :L], v)
    glob = softmax_attention(q.index_select(-2, g), k, v, mask=global_mask, scale=c,
                             return_weights=return_weights)
    out = out.index_copy(-2, g, glob.output)  # (*batch, n, d_v): global rows replaced
    weights = None
    if return_weights:
        cols = torch.where(valid_e, idx_e, n)
        if L:
            cols = torch.cat([keys_w.expand(*batch, n, L), cols], dim=-1)
        # in place: one dense tensor is held (column n collects the padding), the global rows copied into it
        weights = q.new_zeros(*batch, n, n + 1).scatter_(-1, cols, P.masked_fill(~allowed, 0.0))[..., :n]
        weights.index_copy_(-2, g, glob.weights)
    return AttentionOutput(out, weights)


def bigbird_attention(
    q: Tensor, k: Tensor, v: Tensor, *, g: int, w: int, r: int, seed: int, causal: bool = False,
    scale: Scale = "1/sqrt(d)", return_weights: bool = False,
) -> AttentionOutput:
    """BigBird attention (Zaheer et al. 2020; §2.1.1, Figure 7): the graph of bigbird_graph, in O(n (w + r + g) d)."""
    check_qkv(q, k, v)
    if (empty := empty_attention(q, k, v, return_weights)) is not None:
        return empty
    if return_weights:
        _check_weights_fit(q, k, v, "bigbird_attention")
    p = bigbird_pattern(q.shape[-2], g=g, w=w, r=r, seed=seed, causal=bool(causal))
    return pattern_attention(q, k, v, p, scale=scale, return_weights=return_weights)


def longformer_attention(
    q: Tensor, k: Tensor, v: Tensor, *, w: int, dilation: int | Sequence[int] = 1,
    global_tokens: Sequence[int] = (), causal: bool = False, scale: Scale = "1/sqrt(d)", return_weights: bool = False,
) -> AttentionOutput:
    """Longformer attention (Beltagy et al. 2020; §2.1.1, Figure 9): the graph of longformer_graph, in O(n (w + g) d)."""
    check_qkv(q, k, v)
    if (empty := empty_attention(q, k, v, return_weights)) is not None:
        return empty
    if return_weights:
        _check_weights_fit(q, k, v, "longformer_attention")
    dil = list(dilation) if isinstance(dilation, (list, tuple)) else dilation
    p = longformer_pattern(q.shape[-2], w=w, dilation=dil, global_tokens=tuple(global_tokens), causal=bool(causal))
    return pattern_attention(q, k, v, p, scale=scale, return_weights=return_weights)
