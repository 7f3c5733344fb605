"""Seven attentions in a network's blocks, and the residuals rank-collapse.masks-variants measures on them.

Each network's blocks run with softmax attention unmasked, under a causal mask, under the catalogue
window's mask |i - j| <= w // 2 (and causal), with linear attention (elu + 1), FAVOR+ (m random features)
and Linformer (fixed k' x n projections E, F): :func:`variants` builds them from
:data:`attnlab.ops.catalogue.CATALOGUE`, :func:`forward` runs X_0 through the blocks with one of them (the
SAN, or the post-LN transformer block), and :func:`frobenius_residual` is Wu et al.'s residual
||X - 1 mean^T||_F / ||X||_F beside the notes' composite norm.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from attnlab.analysis.residuals import residual
from attnlab.ops.catalogue import CATALOGUE
from attnlab.ops.lowrank import linformer_projections
from attnlab.ops.multihead import multi_head_attention
from attnlab.ops.softmax import AttentionOutput
from attnlab.ops.sparse import graph_to_mask


def softmax_variant(q: Tensor, k: Tensor, v: Tensor, *, return_weights: bool = False,
                     scale: str | float = "1/sqrt(d)", mask: Tensor | None = None,
                     causal: bool | None = None) -> AttentionOutput:
    """The catalogue's softmax attention, softmax(c Q K^T + M) V, under ``mask`` or ``causal``."""
    return CATALOGUE["softmax"](q, k, v, mask=mask, causal=causal, scale=scale, return_weights=return_weights)


def linear_variant(q: Tensor, k: Tensor, v: Tensor, *, return_weights: bool = False,
                    scale: str | float = "1/sqrt(d)", variant: str = "linear",
                    generator: torch.Generator | None = None, num_features: int | None = None) -> AttentionOutput:
    """The catalogue's kernel attention ``variant`` ("linear": phi = elu + 1; "favor+": ``num_features`` positive
    random features drawn from ``generator``); ``scale`` is accepted and unused."""
    # the kernel replaces exp(c q.k); FAVOR+ builds c = 1/sqrt(d_head) into its features
    return CATALOGUE[variant](q, k, v, generator=generator, num_features=num_features, return_weights=return_weights)


def linformer_variant(q: Tensor, k: Tensor, v: Tensor, *, return_weights: bool = False,
                       scale: str | float = "1/sqrt(d)", E: Tensor | None = None,
                       F: Tensor | None = None) -> AttentionOutput:
    """The catalogue's Linformer, softmax(c Q (E K)^T) (F V), with fixed projections E, F (k' x n)."""
    return CATALOGUE["linformer"](q, k, v, E, F, scale=scale, return_weights=return_weights)


def window_mask(n: int, w: int, causal: bool) -> torch.Tensor:
    """(n, n) bool: the catalogue window's graph as a mask, |i - j| <= w // 2 (and j <= i if causal)."""
    return graph_to_mask(CATALOGUE["window"].graph(n, w, causal=causal), n)


@dataclass(frozen=True)
class AttentionVariants:
    """The seven attentions of one network, each (q, k, v, *, return_weights, scale) -> AttentionOutput."""

    w: int  # sliding window w: |i - j| <= w // 2
    m: int  # FAVOR+'s random features
    k_prime: int  # Linformer's projected length k'
    softmax: Callable[..., AttentionOutput]  # softmax(c Q K^T) V, every pair
    causal: Callable[..., AttentionOutput]  # softmax with j <= i
    window: Callable[..., AttentionOutput]  # softmax with |i - j| <= w // 2
    causal_window: Callable[..., AttentionOutput]  # softmax with 0 <= i - j <= w // 2
    linear: Callable[..., AttentionOutput]  # phi(Q) (phi(K)^T V) / phi(Q) phi(K)^T 1, phi = elu + 1
    favor: Callable[..., AttentionOutput]  # the same with m positive random features (FAVOR+)
    linformer: Callable[..., AttentionOutput]  # softmax(c Q (E K)^T) (F V), E, F fixed k' x n draws

    def named(self) -> dict[str, Callable[..., AttentionOutput]]:
        """Label -> attention, in the order of the figures, tables and stored curves."""
        return {"softmax": self.softmax, "causal": self.causal, f"window w={self.w}": self.window,
                f"causal window w={self.w}": self.causal_window, "linear elu+1": self.linear,
                f"FAVOR+ m={self.m}": self.favor, f"Linformer k'={self.k_prime}": self.linformer}


def variants(window: int, favor_features: int, linformer_k: int, n: int, g: torch.Generator,
             device: str) -> AttentionVariants:
    """The attentions for one network on n tokens: catalogue entries softmax (unmasked, causal, and under the
    mask of a window of ``window``), linear (elu+1), favor+ (``favor_features`` features) and linformer
    (k' = ``linformer_k``; E, F drawn from ``g`` now, FAVOR+'s features from ``g`` at every call)."""
    w = window
    E, F = linformer_projections(linformer_k, n, generator=g, device=device)
    return AttentionVariants(
        w=w, m=favor_features, k_prime=linformer_k,
        softmax=softmax_variant,
        causal=functools.partial(softmax_variant, causal=True),
        window=functools.partial(softmax_variant, mask=window_mask(n, w, False).to(device)),
        causal_window=functools.partial(softmax_variant, mask=window_mask(n, w, True).to(device)),
        linear=functools.partial(linear_variant, variant="linear"),
        favor=functools.partial(linear_variant, variant="favor+", generator=g, num_features=favor_features),
        linformer=functools.partial(linformer_variant, E=E, F=F),
    )


def forward(model: Any, X: torch.Tensor, attention: Callable[..., AttentionOutput],
            full: bool) -> list[torch.Tensor]:
    """X_0 = X, X_l = block l of ``model`` (an encoder's ``blocks``) with ``attention``: full, the post-LN block
    X_l = N_2(u + FFN(u)), u = N_1(X_{l-1} + MHA(X_{l-1})); else the SAN X_l = MHA(X_{l-1})."""
    hidden = [X]
    with torch.no_grad():
        for block in model.blocks:
            a = block.attn
            A = multi_head_attention(X, X, a.W_Q, a.W_K, a.W_V, a.W_O, a.b_Q, a.b_K, a.b_V, a.b_O,
                                     attention=attention, scale=a.scale).output
            if full:
                u = block.norm1(X + A)
                X = block.norm2(u + block.ffn(u))
            else:
                X = A
            hidden.append(X)
    return hidden


def frobenius_residual(X: Tensor) -> Tensor:
    """||X - 1 mean^T||_F / ||X||_F (...): Wu et al.'s residual mu(X), relative to the state's size."""
    return torch.linalg.matrix_norm(residual(X, "mean").matrix) / torch.linalg.matrix_norm(X)
