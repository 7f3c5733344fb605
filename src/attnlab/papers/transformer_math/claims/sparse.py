"""Claims about sparse attention over a graph D (math-behind-transformers §2.1.1, eq. 11)."""

from __future__ import annotations

import torch
from torch import Tensor

from attnlab.ops.softmax import softmax_attention
from attnlab.ops.sparse import (
    bigbird_graph,
    graph_attention,
    graph_to_mask,
    longformer_graph,
    max_hops,
    sliding_window_attention,
    sliding_window_graph,
)
from attnlab.checks import Check, at_most
from attnlab.registry import claim


def _graphs(n: int, causal: bool) -> dict[str, Tensor]:
    """The three graph families the claims check, as neighbour lists (n, w_max)."""
    return {
        "bigbird": bigbird_graph(n, g=2, w=5, r=3, seed=11, causal=causal),
        "longformer": longformer_graph(n, w=6, dilation=[1, 2, 3], global_tokens=(0, n // 2), causal=causal),
        "window": sliding_window_graph(n, 7, dilation=2, causal=causal),
    }


@claim(
    "transformer-math.sparse-fast-path-exact",
    where="§2.1.1, eq. (11)",
    statement="attnlab's sparse attention, computed on the gathered neighbours N(i) only, equals its dense "
    "masked softmax, for BigBird, Longformer and windowed graphs, causal or not",
    paper_value="exact (eq. 11 reduces to eq. 5 with a mask)",
)
def _fast_path_exact(seed: int) -> Check:
    """attnlab's gather path (graph_attention, the banded window) against its dense masked path: two code
    paths of attnlab that must agree for every input, so a sanity check, not a test of the text."""
    g = torch.Generator().manual_seed(seed)
    n, worst, where = 37, 0.0, ""
    q, k, v = (torch.randn(2, 3, n, 8, generator=g, dtype=torch.float64) for _ in range(3))
    for causal in (False, True):
        for name, G in _graphs(n, causal).items():
            fast = graph_attention(q, k, v, G).output
            dense = softmax_attention(q, k, v, mask=graph_to_mask(G, n), return_weights=True).output
            err = (fast - dense).abs().max().item()
            worst, where = max((worst, where), (err, f"{name}{' causal' if causal else ''}"))
        banded = sliding_window_attention(q, k, v, 7, dilation=2, causal=causal).output
        dense = sliding_window_attention(q, k, v, 7, dilation=2, causal=causal, backend="dense").output
        worst, where = max((worst, where), ((banded - dense).abs().max().item(), "banded window"))
    return at_most(worst, 1e-12, f"max |gather - dense masked|, float64, n={n}, B=2, H=3; worst: {where}",
                   {"max_error": worst, "worst_graph": where, "n": n, "batch": 2, "heads": 3}, role="sanity")


@claim(
    "transformer-math.sparse-two-hop",
    where="§2.1.1 (global tokens 'connect indirectly any pair')",
    statement="with g >= 1 global tokens every BigBird or Longformer graph joins any two tokens "
    "by a directed path of at most 2 edges",
    paper_value="<= 2 hops",
    anchor="transformer-math.global-connects-pairs",
    falsifier="two tokens more than 2 edges apart in a BigBird or Longformer graph with a global token",
)
def _two_hop(seed: int) -> Check:
    g = torch.Generator().manual_seed(seed)
    worst, count, window_only = 0.0, 0, 0.0
    for n in (16, 33, 64):
        for w in (1, 3, 4):
            for s in range(3):
                graph_seed = int(torch.randint(0, 2**31 - 1, (1,), generator=g))
                glob = int(torch.randint(0, n, (1,), generator=g))
                for G in (
                    bigbird_graph(n, g=1, w=w, r=2, seed=graph_seed),
                    longformer_graph(n, w=w, dilation=1 + s, global_tokens=(glob,)),
                ):
                    worst = max(worst, max_hops(graph_to_mask(G, n)))
                    count += 1
        window_only = max(window_only, max_hops(graph_to_mask(sliding_window_graph(n, 3), n)))
    detail = (
        f"max shortest path over {count} graphs (n in 16, 33, 64; w in 1, 3, 4; random seeds and "
        f"global positions); without global tokens a w=3 window needs up to {window_only:.0f} hops"
    )
    values = {"max_hops": worst, "graphs": count, "window_only_max_hops": window_only,
              "n_values": [16, 33, 64], "windows": [1, 3, 4]}
    return at_most(worst, 2.0, detail, values=values)


@claim(
    "transformer-math.sparse-lost-mass-bound",
    where="§2.1.1, eq. (11) vs eq. (5)",
    statement="restricting softmax to N(i) moves output i by at most 2 m_i max_j ||v_j||, "
    "m_i = the full softmax mass outside N(i)",
    paper_value=None,
)
def _lost_mass_bound(seed: int) -> Check:
    """||o_i - o~_i|| <= 2 m_i max_j ||v_j||_2.

    Proof: o~_i = sum_{j in N} p_j v_j / (1 - m), so o - o~ = sum_{j in N} (p_j - p_j/(1-m)) v_j
    + sum_{j not in N} p_j v_j; the first sum has L1 weight (1-m) m/(1-m) = m, the second m. QED.
    The text states no bound; this one holds by the proof: a sanity check of the sparse path.
    """
    from attnlab.analysis.approximation import lost_mass

    g = torch.Generator().manual_seed(seed)
    n, worst, tightest_m = 64, 0.0, 0.0
    for temperature in (0.5, 2.0, 6.0):
        q, k, v = (torch.randn(2, 3, n, 16, generator=g, dtype=torch.float64) for _ in range(3))
        q = q * temperature
        full = softmax_attention(q, k, v, return_weights=True)
        for G in _graphs(n, causal=False).values():
            sparse = graph_attention(q, k, v, G).output
            m = lost_mass(full.weights, graph_to_mask(G, n))  # (2, 3, n)
            bound = 2 * m * v.norm(dim=-1).amax(dim=-1, keepdim=True)  # (2, 3, n)
            err = (full.output - sparse).norm(dim=-1)
            ratio = torch.where(bound > 0, err / bound, err)
            worst = max(worst, ratio.max().item())
            tightest_m = max(tightest_m, m.max().item())
    detail = f"max over rows of ||o_i - o~_i|| / (2 m_i max||v_j||), n={n}, 3 graphs x 3 logit scales; max m_i = {tightest_m:.3f}"
    values = {"max_ratio_to_bound": worst, "max_lost_mass": tightest_m, "n": n, "logit_scales": [0.5, 2.0, 6.0],
              "graphs": ["bigbird", "longformer", "window"]}
    return at_most(worst, 1.0, detail, values, role="sanity")
