"""Graph builders of attnlab.ops.sparse: hand-derived neighbour lists, invariants, bad input."""

from __future__ import annotations

import pytest
import torch

from attnlab.errors import ConfigError
from attnlab.ops.sparse import (
    bigbird_graph,
    graph_attention,
    graph_to_mask,
    longformer_graph,
    mask_to_graph,
    max_hops,
    sliding_window_graph,
)
from tolerances import FLOAT64

_ = -1  # padding


def test_sliding_window_hand_derived():
    # w = 3: |j - i| <= 1, clipped at the ends, padded at the end of the row.
    expected = [[0, 1, _], [0, 1, 2], [1, 2, 3], [2, 3, 4], [3, 4, _]]
    assert sliding_window_graph(5, 3).tolist() == expected


def test_even_window_is_w_over_2_on_each_side():
    # w = 4: i - 2 .. i + 2, the text's inequality taken literally (5 tokens inside).
    G = sliding_window_graph(7, 4)
    assert G[3].tolist() == [1, 2, 3, 4, 5]
    assert G[0].tolist() == [0, 1, 2, _, _]


def test_dilated_and_causal_window():
    assert sliding_window_graph(7, 3, dilation=2)[3].tolist() == [1, 3, 5]
    assert sliding_window_graph(7, 5, dilation=2, causal=True)[6].tolist() == [2, 4, 6]
    assert sliding_window_graph(7, 3, causal=True).tolist()[:3] == [[0, _], [0, 1], [1, 2]]


def test_per_head_dilation_gives_one_graph_per_head():
    G = longformer_graph(9, w=3, dilation=[1, 2, 3])
    assert G.shape == (3, 9, 3)
    assert [G[h, 4].tolist() for h in range(3)] == [[3, 4, 5], [2, 4, 6], [1, 4, 7]]


def test_bigbird_global_window_random_and_seed():
    n, g, w, r = 23, 2, 3, 4
    G = bigbird_graph(n, g=g, w=w, r=r, seed=5)
    M = graph_to_mask(G, n)
    assert M[:g].all()  # global tokens attend to everything
    assert M[:, :g].all()  # and every token attends to them
    i = torch.arange(n)
    assert M[i, i].all() and M[i[1:], i[1:] - 1].all() and M[i[:-1], i[:-1] + 1].all()
    counts = M[g:].sum(-1)
    # each row: g globals + <= 3 window keys + r random keys, duplicates counted once
    assert counts.max().item() <= g + w + r and counts.min().item() >= w
    assert torch.equal(G, bigbird_graph(n, g=g, w=w, r=r, seed=5))  # same seed, same graph
    assert not torch.equal(G, bigbird_graph(n, g=g, w=w, r=r, seed=6))


def test_random_keys_are_distinct_and_roughly_uniform():
    # g = 0, w = 0: only the r random keys, each row r distinct keys.
    G = bigbird_graph(50, g=0, w=0, r=5, seed=1)
    assert G.shape == (50, 5) and (G >= 0).all()
    hits = graph_to_mask(G, 50).sum(0).to(torch.float64)  # each key drawn 5 times on average
    assert hits.mean().item() == pytest.approx(5.0, abs=FLOAT64)
    assert hits.max().item() <= 14  # P(Binomial(50, 0.1) > 14) < 1e-4


@pytest.mark.parametrize(
    "build",
    [
        lambda causal: bigbird_graph(19, g=1, w=3, r=3, seed=2, causal=causal),
        lambda causal: longformer_graph(19, w=4, dilation=[1, 3], global_tokens=(5,), causal=causal),
        lambda causal: sliding_window_graph(19, 6, causal=causal),
    ],
    ids=["bigbird", "longformer", "window"],
)
def test_causal_graph_is_the_graph_below_the_diagonal(build):
    full, causal = graph_to_mask(build(False), 19), graph_to_mask(build(True), 19)
    assert torch.equal(causal, full & torch.ones(19, 19, dtype=torch.bool).tril())


def test_longformer_global_tokens_are_symmetric():
    M = graph_to_mask(longformer_graph(12, w=3, global_tokens=(4, 9)), 12)
    assert M[[4, 9]].all() and M[:, [4, 9]].all()
    # away from the global rows and columns only the window |i - j| <= 1 remains
    other = [i for i in range(12) if i not in (4, 9)]
    block = M[other][:, other]
    expected = torch.tensor([[abs(a - b) <= 1 for b in other] for a in other])
    assert torch.equal(block, expected)


def test_mask_graph_round_trip():
    g = torch.Generator().manual_seed(0)
    M = torch.rand(3, 6, 9, generator=g) < 0.4
    M[0, 2] = False  # an empty row
    G = mask_to_graph(M)
    assert G.shape[-1] == M.sum(-1).max().item()
    assert torch.equal(graph_to_mask(G, 9), M)
    assert (G[0, 2] == -1).all()


def _adjacency(n: int, edges) -> torch.Tensor:
    A = torch.zeros(n, n, dtype=torch.bool)
    for i, j in edges:
        A[i, j] = True
    return A


def test_max_hops_hand_derived():
    # directed 5-cycle 0 -> 1 -> 2 -> 3 -> 4 -> 0: from 1 back to 0 takes 4 edges
    assert max_hops(_adjacency(5, [(i, (i + 1) % 5) for i in range(5)])) == 4.0
    # a two-way star around 0: leaf to leaf is leaf -> 0 -> leaf
    assert max_hops(_adjacency(7, [(0, j) for j in range(1, 7)] + [(j, 0) for j in range(1, 7)])) == 2.0
    assert max_hops(torch.ones(3, 3, dtype=torch.bool)) == 1.0
    # a one-way chain 0 -> 1 -> 2 never gets back to 0
    assert max_hops(_adjacency(3, [(0, 1), (1, 2)])) == float("inf")
    # a window of w=3 on n tokens links i to i +- 1 only: the ends are n - 1 hops apart
    assert max_hops(graph_to_mask(sliding_window_graph(11, 3), 11)) == 10.0
    assert max_hops(graph_to_mask(longformer_graph(11, w=3, global_tokens=(5,)), 11)) == 2.0


BAD = [
    (lambda: sliding_window_graph(5, 6), "larger than the sequence"),
    (lambda: sliding_window_graph(5, 0), "w must be an integer >= 1"),
    (lambda: sliding_window_graph(5, 3, dilation=0), "dilation must be an integer >= 1"),
    (lambda: longformer_graph(5, w=3, dilation=[1, 0]), "dilation must be an integer >= 1"),
    (lambda: longformer_graph(5, w=3, dilation=[]), "at least one entry"),
    (lambda: longformer_graph(5, w=3, global_tokens=(5,)), "outside [0, 5)"),
    (lambda: bigbird_graph(5, g=-1, w=3, r=1, seed=0), "g (global tokens) must be an integer >= 0"),
    (lambda: bigbird_graph(5, g=6, w=3, r=1, seed=0), "g (global tokens)=6 is larger"),
    (lambda: bigbird_graph(5, g=1, w=3, r=6, seed=0), "r (random keys)=6 is larger"),
    (lambda: bigbird_graph(5, g=1, w=7, r=1, seed=0), "larger than the sequence"),
    (lambda: graph_to_mask(torch.tensor([[0, 5]]), 5), "must lie in [0, 5)"),
    (lambda: graph_to_mask(torch.tensor([[0.0, 1.0]]), 5), "integer tensor"),
    (lambda: mask_to_graph(torch.zeros(2, 2)), "needs a boolean mask"),
    (lambda: max_hops(torch.zeros(3, 3)), "square boolean adjacency"),
    (lambda: max_hops(torch.zeros(3, 4, dtype=torch.bool)), "square boolean adjacency"),
]


@pytest.mark.parametrize("call,message", BAD, ids=[m for _, m in BAD])
def test_bad_configurations_raise_one_line_config_errors(call, message):
    with pytest.raises(ConfigError) as err:
        call()
    assert message in str(err.value) and "\n" not in str(err.value)


def test_graph_attention_rejects_repeated_keys_and_wrong_row_count():
    q = torch.randn(4, 3, dtype=torch.float64)
    with pytest.raises(ConfigError, match="names the same key twice"):
        graph_attention(q, q, q, torch.tensor([[0, 0], [1, -1], [2, -1], [3, -1]]), validate=True)
    with pytest.raises(ConfigError, match="neighbors has 3 rows but there are n_q=4"):
        graph_attention(q, q, q, sliding_window_graph(3, 3))
