"""Sparse attention: attention over a graph D (math-behind-transformers §2.1.1, eq. 11).

* graphs.py: BigBird, Longformer and sliding-window graphs as padded neighbour
  lists, their conversion to and from boolean masks, and a graph's diameter in hops;
* gather.py: graph_attention, the O(n w) gather path with autograd;
* window.py: sliding_window_attention with the "gather" (banded), "flex" and
  "dense" backends;
* flex.py: the FlexAttention block mask of a window;
* pattern.py, structured.py: SparsePattern (window + extra keys + dense global
  rows) and bigbird_attention / longformer_attention over it, O(n) with global tokens.
"""

from attnlab.ops.sparse.gather import graph_attention
from attnlab.ops.sparse.graphs import (
    bigbird_graph,
    graph_to_mask,
    longformer_graph,
    mask_to_graph,
    max_hops,
    sliding_window_graph,
)
from attnlab.ops.sparse.pattern import SparsePattern, bigbird_pattern, longformer_pattern, pattern_from_mask
from attnlab.ops.sparse.structured import bigbird_attention, longformer_attention, pattern_attention
from attnlab.ops.sparse.window import sliding_window_attention

__all__ = [
    "SparsePattern",
    "bigbird_attention",
    "bigbird_pattern",
    "longformer_attention",
    "longformer_pattern",
    "pattern_attention",
    "pattern_from_mask",
    "bigbird_graph",
    "graph_attention",
    "graph_to_mask",
    "longformer_graph",
    "mask_to_graph",
    "max_hops",
    "sliding_window_attention",
    "sliding_window_graph",
]
