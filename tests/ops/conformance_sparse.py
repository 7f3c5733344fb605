"""Conformance entries of the sparse family (attnlab.ops.sparse).

A graph lives on one sequence of N tokens, but the suite also calls operators
with n_q != n_k. Queries and keys are placed on the graph's positions as the
causal alignments of attnlab.ops.masks place them: N = max(n_q, n_k), query i at
position i (+ N - n_q when causal="bottom_right"), key j at position j
(+ N - n_k then). The operator's pattern is the graph (its causal variant when
causal is requested) restricted to those rows and columns, intersected with any
mask or key padding the suite passes; the oracle is dense masked softmax
attention in float64 with exactly that pattern.

The causality test checks the Jacobian's support against the oracle's own
pattern inside the causal mask. Finite additive masks have no sparse
counterpart ("float_mask").
"""

from __future__ import annotations

from conformance import ALL_FEATURES, OperatorEntry

from attnlab.ops import softmax_attention
from attnlab.ops.masks import combine_masks, reject_finite_additive, resolve_causal
from attnlab.ops.softmax import batch_shape
from attnlab.ops.sparse import (
    bigbird_attention,
    bigbird_graph,
    graph_attention,
    graph_to_mask,
    longformer_attention,
    longformer_graph,
    mask_to_graph,
    pattern_attention,
    pattern_from_mask,
    sliding_window_attention,
)


def _pattern(build, q, k, v, mask, causal, key_padding_mask):
    """Boolean (..., n_q, n_k) pattern on the CPU: the graph on N tokens, placed, intersected with
    the masks (brought to the host: a sparse graph is a host-side structure)."""
    n_q, n_k = q.shape[-2], k.shape[-2]
    alignment = resolve_causal(causal, n_q, n_k)
    N = max(n_q, n_k)
    rows = slice(N - n_q, N) if alignment == "bottom_right" else slice(0, n_q)
    cols = slice(N - n_k, N) if alignment == "bottom_right" else slice(0, n_k)
    graph = graph_to_mask(build(N, alignment is not None), N)[..., rows, cols]  # (n_q, n_k)
    allowed, additive = combine_masks(
        n_q, n_k, batch_shape=batch_shape(q, k, v), mask=mask, key_padding_mask=key_padding_mask
    )
    reject_finite_additive(additive, "sparse attention")
    return graph if allowed is None else graph & allowed.cpu()


def _graph_entry(name: str, build, variant: str) -> OperatorEntry:
    def fn(q, k, v, *, mask=None, causal=None, key_padding_mask=None, return_weights=False):
        pattern = _pattern(build, q, k, v, mask, causal, key_padding_mask)
        return graph_attention(q, k, v, mask_to_graph(pattern), return_weights=return_weights)

    def reference(q, k, v, *, mask=None, causal=None, key_padding_mask=None, return_weights=False):
        pattern = _pattern(build, q, k, v, mask, causal, key_padding_mask)
        return softmax_attention(q, k, v, mask=pattern, return_weights=True)

    return OperatorEntry(
        name, fn, normalized=True, features=ALL_FEATURES - {"float_mask"}, reference_fn=reference, variant=variant
    )


def _window_fn(q, k, v, *, mask=None, causal=None, key_padding_mask=None, return_weights=False):
    """The banded backend itself when nothing else is masked; with masks, the window graph."""
    if mask is None and key_padding_mask is None:
        return sliding_window_attention(q, k, v, 3, causal=causal or False, return_weights=return_weights)
    pattern = _pattern(_window, q, k, v, mask, causal, key_padding_mask)
    return graph_attention(q, k, v, mask_to_graph(pattern), return_weights=return_weights)


def _window(N: int, causal: bool):
    from attnlab.ops.sparse import sliding_window_graph

    return sliding_window_graph(N, 3, causal=causal)


def _window_reference(q, k, v, *, mask=None, causal=None, key_padding_mask=None, return_weights=False):
    pattern = _pattern(_window, q, k, v, mask, causal, key_padding_mask)
    return softmax_attention(q, k, v, mask=pattern, return_weights=True)


def _structured_entry(name: str, build, attend, global_rows, variant: str) -> OperatorEntry:
    """The O(n) pattern path: ``attend`` itself when n_q == n_k and nothing else is masked;
    otherwise the placed pattern with the rows of the global tokens computed densely."""

    def fn(q, k, v, *, mask=None, causal=None, key_padding_mask=None, return_weights=False):
        n_q, n_k = q.shape[-2], k.shape[-2]
        if mask is None and key_padding_mask is None and n_q == n_k:
            return attend(q, k, v, causal=resolve_causal(causal, n_q, n_k) is not None, return_weights=return_weights)
        pattern = _pattern(build, q, k, v, mask, causal, key_padding_mask)
        if n_q != n_k:  # a SparsePattern is square: the general gather path
            return graph_attention(q, k, v, mask_to_graph(pattern), return_weights=return_weights)
        rows = [i for i in global_rows if i < n_q]
        return pattern_attention(q, k, v, pattern_from_mask(pattern, rows), return_weights=return_weights)

    def reference(q, k, v, *, mask=None, causal=None, key_padding_mask=None, return_weights=False):
        pattern = _pattern(build, q, k, v, mask, causal, key_padding_mask)
        return softmax_attention(q, k, v, mask=pattern, return_weights=True)

    return OperatorEntry(name, fn, normalized=True, features=ALL_FEATURES - {"float_mask"}, reference_fn=reference,
                         variant=variant)


def _bigbird(N: int, causal: bool):
    return bigbird_graph(N, g=2, w=3, r=2, seed=7, causal=causal)


def _longformer(N: int, causal: bool):
    return longformer_graph(N, w=4, dilation=2, global_tokens=(0, 3), causal=causal)


OPERATORS: list[OperatorEntry] = [
    _graph_entry("sparse-bigbird", _bigbird, "bigbird"),
    _graph_entry("sparse-longformer", _longformer, "longformer"),
    _structured_entry(
        "sparse-bigbird-pattern", _bigbird,
        lambda q, k, v, **kw: bigbird_attention(q, k, v, g=2, w=3, r=2, seed=7, **kw), (0, 1), "bigbird",
    ),
    _structured_entry(
        "sparse-longformer-pattern", _longformer,
        lambda q, k, v, **kw: longformer_attention(q, k, v, w=4, dilation=2, global_tokens=(0, 3), **kw), (0, 3), "longformer",
    ),
    OperatorEntry(
        "sparse-window-gather", _window_fn, normalized=True,
        features=ALL_FEATURES - {"float_mask"}, reference_fn=_window_reference, variant="window",
    ),
]
