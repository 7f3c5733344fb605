"""The catalogue of attention variants: every variant attnlab ships, in one table.

A variant is one function of (Q, K, V) computed by one operator of :mod:`attnlab.ops`.
Its entry (:class:`AttentionVariant`) says what it computes, against what it is exact,
which inputs it takes and how many FLOPs a forward pass costs. Everything that lists
variants reads this table: the benchmark (``attnlab bench``, :mod:`attnlab.bench.variants`),
the conformance suite (tests/ops/test_conformance.py) and the experiments that compare
variants. Shapes and symbols, for every entry:

    Q: (..., n_q, d_k)    K: (..., n_k, d_k)    V: (..., n_k, d_v)    output: (..., n_q, d_v)
    c = 1/sqrt(d_k) (the default scale),  M_ij = 0 where key j is allowed for query i, else -inf
    B batch, H heads, n = n_q = n_k tokens, d = d_k = d_v (the FLOP counts: :mod:`attnlab.ops.flops`)

    softmax        softmax(c Q K^T + M) V                          math text §1.2.2, eq. (1), (5)-(6)
                   exact                     4 B H n^2 d;  causal: 4 B H d n(n+1)/2
    unnormalized   (Q K^T ⊙ 1[M = 0]) V, c = 1                     logic text, eq. (2.2)
                   different (no softmax)    4 B H n^2 d
    window         softmax over N(i) = {j : |i - j| <= w/2}        math text §2.1.1, eq. (11)
                   approximate               4 B H d |E|,  |E| = n (w + 1) - (w/2)(w/2 + 1)
    bigbird        softmax over N(i) = G ∪ window_w(i) ∪ R(i)      eq. (11), Figure 7
                   approximate               4 B H d |E|
    longformer     softmax over a (dilated) window ∪ global rows   eq. (11), Figure 9
                   approximate               4 B H d |E|
    linear         phi(Q) (phi(K)^T V) / phi(Q) (phi(K)^T 1), phi(x) = elu(x) + 1   §2.1.2, eq. (15)
                   different (another kernel)  B H (4 n r d + 3 n r), r = d
    linear-relu    the same with phi(x) = max(x, 0)
                   different                 as linear, r = d
    linear-taylor  the same with phi(x) = [1, x/|x|]: sim(q, k) = 1 + q^·k^
                   different                 as linear, r = d + 1
    favor+         the same with m positive random features phi   §2.1.2, eq. (14) (Performer)
                   approximate               linear with r = m, + 4 B H n d m (the projections)
    linformer      softmax(c Q (E K)^T) (F V), E, F: (k', n_k)    §2.1.3, eq. (17)
                   approximate (rank k')     8 B H n k' d

N(i) is the set of keys query i sees (the graph D of eq. (11)); |E| = sum_i |N(i)| the pairs
per head. The causal forms of softmax, window and the linear kernels keep only j <= i
(chunked linear attention, chunk C: + B H (n / C)(2 C^2 r + 2 C^2 d + C^2)).

Exactness (:class:`Exactness`) has three kinds:

* ``"exact"``: equals softmax attention, eq. (1), up to floating-point rounding
  (tolerance class ``"rounding"``: the dtype's row of the tolerance table, 1e-12 in float64);
* ``"approximate"``: approximates softmax attention (``approximates``); a sparse variant
  *equals* softmax attention with its graph as the mask (``equals``), to rounding;
* ``"different"``: computes another function of Q, K, V (``equals`` says which).

Features (what the operator accepts besides q, k, v; anything else it refuses):
``"causal"`` (causal=True, "top_left", "bottom_right"), ``"key_padding"`` (key_padding_mask
(B, n_k), True = padding), ``"mask"`` (a boolean or additive (..., n_q, n_k) mask), ``"weights"``
(return_weights=True gives the n_q x n_k weights). A sparse variant becomes causal through its
graph (``graph(n, ..., causal=True)``), not through a keyword.

Add a variant: write its operator, then one :class:`AttentionVariant` in :data:`CATALOGUE`
with its FLOP model in :mod:`attnlab.ops.flops`. The conformance suite and the benchmark's
coverage test fail until it is tested and timed (or listed as not timed, with the reason).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Callable, Mapping

from torch import Tensor

from attnlab.errors import UnknownNameError
from attnlab.ops.flops import (
    Shape,
    chunked_causal_linear_flops,
    dense_flops,
    favor_flops,
    linear_flops,
    linformer_flops,
    sparse_flops,
    window_pairs,
)
from attnlab.ops.linear import linear_attention
from attnlab.ops.lowrank import linformer_attention
from attnlab.ops.softmax import AttentionOutput, softmax_attention
from attnlab.ops.sparse import (
    bigbird_graph,
    graph_attention,
    longformer_graph,
    sliding_window_attention,
    sliding_window_graph,
)
from attnlab.ops.unnormalized import unnormalized_attention

EXACT, APPROXIMATE, DIFFERENT = "exact", "approximate", "different"
KINDS = (EXACT, APPROXIMATE, DIFFERENT)
ROUNDING = "rounding"  # equal up to floating-point rounding: the dtype's tolerance (1e-12 class in float64)
FEATURES = frozenset({"causal", "key_padding", "mask", "weights"})
FAMILIES = ("softmax", "unnormalized", "sparse", "linear", "low rank")


@dataclass(frozen=True)
class Exactness:
    """How a variant's output relates to softmax attention, eq. (1).

    kind:        "exact", "approximate" or "different" (module docstring)
    tolerance:   "rounding" when the output equals ``equals`` up to floating-point rounding
                 (the dtype's tolerance class), None when there is no such function
    approximates: what an approximate variant approximates ("" for the others)
    equals:      the function the output equals up to rounding ("" when none is stated)
    """

    kind: str
    tolerance: str | None = ROUNDING
    approximates: str = ""
    equals: str = "softmax attention, eq. (1)"

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"exactness kind must be one of {KINDS}, got {self.kind!r}")


@dataclass(frozen=True, eq=False)
class AttentionVariant:
    """One entry of the catalogue.

    name:        the variant's name (``attnlab bench`` and the conformance suite use it)
    family:      "softmax", "unnormalized", "sparse", "linear" or "low rank"
    operator:    the attnlab.ops function; ``variant(q, k, v, *args, **kw)`` calls
                 ``operator(q, k, v, *args, **bound, **kw)``
    bound:       keyword arguments the variant fixes (the feature map of a linear variant)
    params:      the variant's own parameters, name -> meaning (window w, features m, k', ...)
    features:    the inputs the operator accepts besides q, k, v (module docstring)
    exactness:   :class:`Exactness`
    flops:       flops(shape, **kw) -> forward FLOPs of one pass on a :class:`Shape`; kw are the
                 parameters the count depends on (causal, w, pairs, m, k_proj, chunk_size)
    order:       "quadratic" or "linear": the time of one pass in n
    explicit:    the operator materialises an n_q x n_k matrix on its default path
    graph:       for a sparse variant, the neighbour lists graph(n, **params) -> (n, width) or
                 (H, n, width), -1 padded (attnlab.ops.sparse.graphs); its mask is the allowed set
    where:       the paper and equation
    """

    name: str
    family: str
    operator: Callable[..., AttentionOutput]
    features: frozenset[str]
    exactness: Exactness
    flops: Callable[..., float]
    order: str
    where: str
    explicit: bool = False
    bound: Mapping[str, object] = field(default_factory=dict)
    params: Mapping[str, str] = field(default_factory=dict)
    graph: Callable[..., Tensor] | None = None

    def __post_init__(self) -> None:
        unknown = self.features - FEATURES
        if unknown:
            raise ValueError(f"{self.name}: unknown features {sorted(unknown)}")
        if self.family not in FAMILIES:
            raise ValueError(f"{self.name}: family must be one of {FAMILIES}, got {self.family!r}")
        object.__setattr__(self, "bound", MappingProxyType(dict(self.bound)))
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))

    def __call__(self, q: Tensor, k: Tensor, v: Tensor, *args, **kw) -> AttentionOutput:
        return self.operator(q, k, v, *args, **{**self.bound, **kw})

    def supports(self, *features: str) -> bool:
        return set(features) <= self.features

    @property
    def exact(self) -> bool:
        return self.exactness.kind == EXACT

    def __repr__(self) -> str:
        return f"AttentionVariant({self.name!r})"


# ----------------------------------------------------------------------------- FLOP models
def _dense(s: Shape, causal: bool = False) -> float:
    return dense_flops(s, causal=causal)


def _window(s: Shape, w: int, causal: bool = False) -> float:
    return sparse_flops(s, window_pairs(s.n, w, causal=causal))


def _graph(s: Shape, pairs: int) -> float:
    return sparse_flops(s, pairs)


def _kernel(r_extra: int) -> Callable[..., float]:
    """Linear attention with r = d + r_extra features; causal: chunked with chunk C = chunk_size."""

    def flops(s: Shape, causal: bool = False, chunk_size: int = 64) -> float:
        r = s.d + r_extra
        return chunked_causal_linear_flops(s, r, chunk_size) if causal else linear_flops(s, r)

    return flops


def _favor(s: Shape, m: int, causal: bool = False, chunk_size: int = 64) -> float:
    if causal:
        return chunked_causal_linear_flops(s, m, chunk_size) + 4.0 * s.B * s.H * s.n * s.d * m
    return favor_flops(s, m)


def _linformer(s: Shape, k_proj: int) -> float:
    return linformer_flops(s, k_proj)


# ----------------------------------------------------------------------------- the catalogue
_ALL = frozenset({"causal", "key_padding", "mask", "weights"})
_SPARSE_EQUALS = "softmax attention with the graph as the mask, eq. (5) with M = -inf off N(i)"
_KERNEL_PARAMS = {"chunk_size": "chunk C of the causal chunked form", "eps": "added to the normaliser"}

_ENTRIES = [
    AttentionVariant(
        "softmax", "softmax", softmax_attention, _ALL, Exactness(EXACT), _dense, "quadratic",
        "math-behind-transformers §1.2.2 eq. (5)-(6); rank-collapse notes §2.1",
        params={"scale": "c: '1/sqrt(d)' (default), '1/d', 'none' or a float"},
    ),
    AttentionVariant(
        "unnormalized", "unnormalized", unnormalized_attention, _ALL,
        Exactness(DIFFERENT, equals="(c Q K^T ⊙ 1[M = 0]) V without normalisation, c = 1"),
        _dense, "quadratic", "logic text eq. (2.2)", explicit=True,
    ),
    AttentionVariant(
        "window", "sparse", sliding_window_attention, frozenset({"causal", "weights"}),
        Exactness(APPROXIMATE, approximates="softmax attention, eq. (1)", equals=_SPARSE_EQUALS),
        _window, "linear", "math-behind-transformers §2.1.1, eq. (11) (sliding window)",
        params={"w": "window: i - w/2 <= j <= i + w/2", "dilation": "keys every dilation-th position",
                "backend": "'gather' (banded), 'flex' (FlexAttention) or 'dense'"},
        graph=sliding_window_graph,
    ),
    AttentionVariant(
        "bigbird", "sparse", graph_attention, frozenset({"weights"}),
        Exactness(APPROXIMATE, approximates="softmax attention, eq. (1)", equals=_SPARSE_EQUALS),
        _graph, "linear", "math-behind-transformers §2.1.1, eq. (11), Figure 7 (Zaheer et al. 2020)",
        params={"g": "global tokens 0..g-1", "w": "window", "r": "random keys per query",
                "seed": "the random keys' seed", "causal": "drop the edges j > i"},
        graph=bigbird_graph,
    ),
    AttentionVariant(
        "longformer", "sparse", graph_attention, frozenset({"weights"}),
        Exactness(APPROXIMATE, approximates="softmax attention, eq. (1)", equals=_SPARSE_EQUALS),
        _graph, "linear", "math-behind-transformers §2.1.1, eq. (11), Figure 9 (Beltagy et al. 2020)",
        params={"w": "window", "dilation": "an int, or one per head", "global_tokens": "positions that see "
                "and are seen by every token", "causal": "drop the edges j > i"},
        graph=longformer_graph,
    ),
    AttentionVariant(
        "linear", "linear", linear_attention, _ALL,
        Exactness(DIFFERENT, equals="kernel attention with phi = elu + 1, eq. (15) (Katharopoulos et al. 2020)"),
        _kernel(0), "linear", "math-behind-transformers §2.1.2, eq. (13)-(15)",
        bound={"feature_map": "elu+1"}, params=_KERNEL_PARAMS,
    ),
    AttentionVariant(
        "linear-relu", "linear", linear_attention, _ALL,
        Exactness(DIFFERENT, equals="kernel attention with phi = max(x, 0), eq. (15)"),
        _kernel(0), "linear", "math-behind-transformers §2.1.2, eq. (13)-(15)",
        bound={"feature_map": "relu"}, params=_KERNEL_PARAMS,
    ),
    AttentionVariant(
        "linear-taylor", "linear", linear_attention, _ALL,
        Exactness(DIFFERENT, equals="kernel attention with sim(q, k) = 1 + q^·k^ (first-order Taylor), eq. (15)"),
        _kernel(1), "linear", "math-behind-transformers §2.1.2, eq. (15) and the Taylor formula after it",
        bound={"feature_map": "taylor"}, params=_KERNEL_PARAMS,
    ),
    AttentionVariant(
        "favor+", "linear", linear_attention, _ALL,
        Exactness(APPROXIMATE, tolerance=None, approximates="softmax attention, eq. (1): the features are "
                  "unbiased for exp(q·k / sqrt(d)), error O(1/sqrt(m))", equals=""),
        _favor, "linear", "math-behind-transformers §2.1.2, eq. (14) (Performer, Choromanski et al. 2021)",
        bound={"feature_map": "favor+"},
        params={"num_features": "m random features", "generator": "draws the features", **_KERNEL_PARAMS},
    ),
    AttentionVariant(
        "linformer", "low rank", linformer_attention, frozenset({"weights"}),
        Exactness(APPROXIMATE, tolerance=None, approximates="softmax attention, eq. (1), by a rank-k' "
                  "projection of the keys and values (Theorem 2.3)", equals=""),
        _linformer, "linear", "math-behind-transformers §2.1.3, eq. (17)",
        params={"E, F": "(k', n_k) projections, or (H, k', n_k) (attnlab.ops.lowrank.linformer_projections)"},
    ),
]

CATALOGUE: Mapping[str, AttentionVariant] = MappingProxyType({e.name: e for e in _ENTRIES})
"""Every attention variant, by name, in the order above."""


def get_attention_variant(name: str) -> AttentionVariant:
    """The catalogue entry ``name`` (UnknownNameError lists the names)."""
    if name not in CATALOGUE:
        raise UnknownNameError(f"unknown attention variant {name!r}: choose from {', '.join(CATALOGUE)}")
    return CATALOGUE[name]


def select_variants(*, family: str | None = None, kind: str | None = None,
                    features: tuple[str, ...] = ()) -> list[AttentionVariant]:
    """The entries of one family and/or one exactness kind that support every feature named, in order."""
    return [e for e in CATALOGUE.values()
            if (family is None or e.family == family) and (kind is None or e.exactness.kind == kind)
            and e.supports(*features)]


__all__ = ["AttentionVariant", "CATALOGUE", "Exactness", "get_attention_variant", "select_variants"]
