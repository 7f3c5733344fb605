"""Sparse attention: attention over a graph D (math-behind-transformers §2.1.1, eq. 11).

* graphs.py: BigBird, Longformer and sliding-window graphs as padded neighbour
  lists, and their conversion to and from boolean masks;
* gather.py: graph_attention, the O(n w) gather path with autograd;
* window.py: sliding_window_attention with the "gather" (banded), "flex" and
  "dense" backends;
* flex.py: the FlexAttention block mask of a window.
"""

from attnlab.ops.sparse.gather import graph_attention
from attnlab.ops.sparse.graphs import (
    bigbird_graph,
    graph_to_mask,
    longformer_graph,
    mask_to_graph,
    sliding_window_graph,
)
from attnlab.ops.sparse.window import sliding_window_attention

__all__ = [
    "bigbird_graph",
    "graph_attention",
    "graph_to_mask",
    "longformer_graph",
    "mask_to_graph",
    "sliding_window_attention",
    "sliding_window_graph",
]
