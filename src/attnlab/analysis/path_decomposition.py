"""Path decomposition of a self-attention network (rank-collapse notes §2.1, Theorem 2.1).

A self-attention network (SAN) of L attention-only layers with H heads each:

    SA_l(X) = sum_h P_{l,h}(X) (X W_{V,l,h} + 1 b_{V,l,h}^T) W_{O,l,h} + 1 b_{O,l}^T
            = sum_h P_{l,h}(X) X W_{l,h} + 1 b_l^T                                   (since P 1 = 1)

    W_{l,h} = W_{V,l,h} W_{O,l,h}          (d_model x d_model, the OV circuit)
    b_l^T   = sum_h b_{V,l,h}^T W_{O,l,h} + b_{O,l}^T

with P_{l,h}(X) = softmax(X W_{Q,l,h} (X W_{K,l,h})^T / sqrt(d_head)) row-stochastic
(P 1 = 1). Expanding SAN = SA_L o ... o SA_1 gives Theorem 2.1:

    SAN(X) = sum_{(h_1..h_L) in [H]^L} P_{L,h_L} ... P_{1,h_1} X W_{1,h_1} ... W_{L,h_L} + 1 b^T
    b^T    = sum_l b_l^T prod_{m > l} (sum_h W_{m,h})

Each P_{l,h} is evaluated at the input of layer l, which is the output of layer
l - 1: the decomposition is exact, but the P's of later layers depend on X
through the earlier layers. A skip connection X -> X + SA(X) is a dummy head with
P = I and W = I, giving (H+1)^L paths, and sum_h W_{m,h} becomes I + sum_h W_{m,h}.

Typos in the text, corrected here:
* it writes Q = W^Q X and K = W^K X for X of size n x d; with tokens as rows
  it is Q = X W^Q, K = X W^K;
* it writes SA o SA(X) = sum_{h1,h2} P_{h1} P_{h2} X W_{h1} W_{h2} + 1 b^T,
  dropping the layer indices and reversing the order of the P's; the correct
  term is P_{2,h2} P_{1,h1} X W_{1,h1} W_{2,h2} (the later layer's P acts last,
  on the left; its W acts last, on the right), and P_{2,h2} is evaluated at
  SA_1(X), not at X;
* the bias "b isn't the same all the time": it is the accumulated b^T above,
  which needs P 1 = 1 (a row-stochastic P: softmax, not unnormalized attention).

Path lengths (Dong et al. 2021, §3): with skips, a path's length k is the number of
layers where it takes a real head (L - k skips). Of the (H+1)^L paths, C(L, k) H^k have
length k (:func:`path_length_counts`), and the terms of one length sum to

    S_k = sum_{paths of length k} P_path X W_path,      SAN_skip(X) = sum_{k=0}^L S_k + 1 b^T,

computed without enumerating paths by the recursion over layers (:func:`path_length_terms`)

    S_k^{(0)} = X [k = 0],     S_k^{(l)} = S_k^{(l-1)} + sum_h P_{l,h} S_{k-1}^{(l-1)} W_{l,h},

O(L^2 H) matrix products instead of (H+1)^L path terms, with the P's held at the values
recorded in one pass (exact for the network that pass defines).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Iterator

import torch
from torch import Tensor

from attnlab.errors import ConfigError
from attnlab.ops.multihead import check_head_weights, multi_head_attention, ov_circuit


@dataclass(frozen=True)
class SANLayer:
    """One attention-only layer in paper notation.

    W_Q, W_K: (H, d_model, d_head)   W_V: (H, d_model, d_v)   W_O: (H, d_v, d_model)
    b_Q, b_K: (H, d_head) or None    b_V: (H, d_v) or None    b_O: (d_model,) or None
    """

    W_Q: Tensor
    W_K: Tensor
    W_V: Tensor
    W_O: Tensor
    b_Q: Tensor | None = None
    b_K: Tensor | None = None
    b_V: Tensor | None = None
    b_O: Tensor | None = None

    def __post_init__(self) -> None:
        check_head_weights(self.W_Q, self.W_K, self.W_V, self.W_O)

    @property
    def n_heads(self) -> int:
        return self.W_Q.shape[0]

    @property
    def d_model(self) -> int:
        return self.W_Q.shape[1]

    def path_weights(self) -> Tensor:
        """W_{l,h} = W_{V,l,h} W_{O,l,h}, shape (H, d_model, d_model)."""
        return ov_circuit(self.W_V, self.W_O)

    def bias(self) -> Tensor:
        """b_l = sum_h W_{O,l,h}^T b_{V,l,h} + b_{O,l}, shape (d_model,)."""
        b = self.W_O.new_zeros(self.d_model)
        if self.b_V is not None:
            b = b + torch.einsum("hv,hvd->d", self.b_V, self.W_O)  # (d_model,)
        if self.b_O is not None:
            b = b + self.b_O
        return b


def random_san(
    n_layers: int, n_heads: int, d_model: int, d_head: int, d_v: int, g: torch.Generator
) -> list[SANLayer]:
    """L = n_layers random SAN layers of H = n_heads heads, float64, drawn from ``g``.

    Weights ~ N(0, 1/fan_in): W_Q, W_K (H, d_model, d_head) and W_V (H, d_model, d_v)
    with fan_in = d_model, W_O (H, d_v, d_model) with fan_in = H d_v (the concatenated
    heads), so activations stay O(1) through the layers. Every bias (b_Q, b_K, b_V,
    b_O) is N(0, 1) and nonzero, so the 1 b^T term of Theorem 2.1 is exercised.
    """

    def randn(*shape: int, fan_in: int = 1) -> Tensor:
        return torch.randn(*shape, generator=g, dtype=torch.float64) / fan_in**0.5

    return [
        SANLayer(
            W_Q=randn(n_heads, d_model, d_head, fan_in=d_model),
            W_K=randn(n_heads, d_model, d_head, fan_in=d_model),
            W_V=randn(n_heads, d_model, d_v, fan_in=d_model),
            W_O=randn(n_heads, d_v, d_model, fan_in=d_v * n_heads),
            b_Q=randn(n_heads, d_head),
            b_K=randn(n_heads, d_head),
            b_V=randn(n_heads, d_v),
            b_O=randn(d_model),
        )
        for _ in range(n_layers)
    ]


def _check_layers(layers: list[SANLayer]) -> None:
    if not layers:
        raise ConfigError("a SAN needs at least one layer")
    d = layers[0].d_model
    for l, layer in enumerate(layers):
        if layer.d_model != d or layer.W_O.shape[-1] != d:
            raise ConfigError(f"layer {l} maps d_model={layer.d_model}, layer 0 has {d}: all must match")


def san_forward(
    X: Tensor, layers: list[SANLayer], *, skip: bool = False, **attention_kwargs
) -> tuple[Tensor, list[Tensor]]:
    """SAN(X) = SA_L o ... o SA_1(X), recording every P_{l,h}.

    X: (..., n, d_model). With ``skip``, each layer is X -> X + SA_l(X).
    Remaining keyword arguments (scale, mask, causal) go to the softmax attention.
    Returns (output (..., n, d_model), [P_1, ..., P_L] each (..., H, n, n)).
    """
    _check_layers(layers)
    P: list[Tensor] = []
    for layer in layers:
        res = multi_head_attention(
            X, X, layer.W_Q, layer.W_K, layer.W_V, layer.W_O,
            layer.b_Q, layer.b_K, layer.b_V, layer.b_O,
            return_weights=True, **attention_kwargs,
        )
        P.append(res.weights)  # (..., H, n, n)
        X = X + res.output if skip else res.output
    return X, P


def path_count(n_heads: int, n_layers: int, *, skip: bool = False) -> int:
    """|[H]^L| = H^L paths, (H+1)^L with the skip connection as a dummy head."""
    return (n_heads + int(skip)) ** n_layers


def paths(n_heads: int, n_layers: int, *, skip: bool = False) -> Iterator[tuple[int, ...]]:
    """Every path (h_1, ..., h_L); head index H stands for the skip (identity) head."""
    return itertools.product(range(n_heads + int(skip)), repeat=n_layers)


def accumulated_bias(layers: list[SANLayer], *, skip: bool = False) -> Tensor:
    """b^T = sum_l b_l^T prod_{m>l} (sum_h W_{m,h} [+ I with skip]), shape (d_model,)."""
    _check_layers(layers)
    b = layers[0].W_O.new_zeros(layers[0].d_model)
    for layer in layers:
        W_sum = layer.path_weights().sum(dim=0)  # (d_model, d_model)
        if skip:
            W_sum = W_sum + torch.eye(layer.d_model, dtype=W_sum.dtype, device=W_sum.device)
        b = b @ W_sum + layer.bias()  # earlier biases pass through this layer's heads
    return b


def path_term(X: Tensor, P: list[Tensor], layers: list[SANLayer], path: tuple[int, ...]) -> Tensor:
    """P_{L,h_L} ... P_{1,h_1} X W_{1,h_1} ... W_{L,h_L}; head index H = identity (skip)."""
    return _path_term(X, P, [layer.path_weights() for layer in layers], path)


def _path_term(X: Tensor, P: list[Tensor], W: list[Tensor], path: tuple[int, ...]) -> Tensor:
    """As path_term, with W[l] = (H, d_model, d_model) path weights of layer l precomputed."""
    Y = X
    for l, h in enumerate(path):  # P_{1,h_1} acts first, P_{L,h_L} last (leftmost)
        Y = Y if h == W[l].shape[0] else P[l][..., h, :, :] @ Y  # (..., n, d_model)
    for l, h in enumerate(path):  # W_{1,h_1} first, W_{L,h_L} last (rightmost)
        Y = Y if h == W[l].shape[0] else Y @ W[l][h]  # (..., n, d_model)
    return Y


def path_length_counts(n_heads: int, n_layers: int) -> list[int]:
    """[C(L, k) H^k for k = 0..L]: how many of the (H+1)^L skip paths have length k (exact ints)."""
    return [math.comb(n_layers, k) * n_heads**k for k in range(n_layers + 1)]


def path_length_terms(X: Tensor, P: list[Tensor], W: list[Tensor]) -> Tensor:
    """S_0, ..., S_L of the module docstring, stacked: (L + 1, ..., n, d_model).

    X: (..., n, d_model); P: [P_1, ..., P_L], each (..., H, n, n); W: [W_1, ..., W_L], each
    (H, d_model, d_model), the path weights W_{l,h} = W_{V,l,h} W_{O,l,h}
    (:meth:`SANLayer.path_weights`). S_k sums every skip path with exactly k attention
    layers; their sum plus 1 b^T (:func:`accumulated_bias` with skip) is the skip SAN's output.
    """
    if len(P) != len(W) or not P:
        raise ConfigError(f"need one P and one W per layer, got {len(P)} and {len(W)}")
    S = [X] + [torch.zeros_like(X) for _ in P]
    for Pl, Wl in zip(P, W):
        # each S_k gains the length-(k-1) terms routed through one of this layer's heads
        step = [torch.einsum("...hij,...jd,hde->...ie", Pl, S[k - 1], Wl) for k in range(1, len(S))]
        S = [S[0]] + [S[k] + step[k - 1] for k in range(1, len(S))]
    return torch.stack(S)


def path_sum(
    X: Tensor,
    P: list[Tensor],
    layers: list[SANLayer],
    *,
    skip: bool = False,
    include_bias: bool = True,
) -> Tensor:
    """Right-hand side of Theorem 2.1: sum over all paths of path_term + 1 b^T.

    X: (..., n, d_model); P: the list san_forward recorded, each (..., H, n, n).
    ``include_bias=False`` drops 1 b^T (then the identity fails whenever b != 0).
    """
    _check_layers(layers)
    if len(P) != len(layers):
        raise ConfigError(f"got {len(P)} attention matrices for {len(layers)} layers")
    H = layers[0].n_heads
    if any(layer.n_heads != H for layer in layers):
        raise ConfigError("every layer must have the same number of heads H")
    W = [layer.path_weights() for layer in layers]  # each (H, d_model, d_model)
    total = torch.zeros_like(X)
    for path in paths(H, len(layers), skip=skip):
        total = total + _path_term(X, P, W, path)
    if include_bias:
        total = total + accumulated_bias(layers, skip=skip)  # 1 b^T, broadcast over rows
    return total
