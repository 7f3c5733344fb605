"""SparsePattern and bigbird_attention / longformer_attention (the O(n) path with global tokens)."""

from __future__ import annotations

import pytest
import torch
from tolerances import assert_close

from attnlab.errors import ConfigError
from attnlab.ops import softmax_attention
from attnlab.ops.sparse import (
    bigbird_attention,
    bigbird_graph,
    bigbird_pattern,
    graph_to_mask,
    longformer_attention,
    longformer_graph,
    longformer_pattern,
    pattern_attention,
)


def qkv(n, seed=0):
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(2, 3, n, d, generator=g, dtype=torch.float64).requires_grad_() for d in (5, 5, 7))


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("n", [13, 71])
def test_patterns_equal_the_graphs(n, causal):
    bb = bigbird_pattern(n, g=2, w=4, r=3, seed=1, causal=causal)
    assert torch.equal(bb.to_mask(), graph_to_mask(bigbird_graph(n, g=2, w=4, r=3, seed=1, causal=causal), n))
    lf = longformer_pattern(n, w=5, dilation=[1, 2, 3], global_tokens=(0, 7), causal=causal)
    ref = longformer_graph(n, w=5, dilation=[1, 2, 3], global_tokens=(0, 7), causal=causal)
    assert torch.equal(lf.to_mask(), graph_to_mask(ref, n))
    assert bb.extra.shape[-1] <= 3 + 2 and lf.extra.shape[-1] <= 2  # no row is n wide


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("n", [13, 71])  # 71 spans two query blocks of 64
def test_structured_attention_equals_dense_masked_value_weights_gradient(n, causal):
    q, k, v = qkv(n)
    cases = [
        (bigbird_attention(q, k, v, g=2, w=4, r=3, seed=1, causal=causal, return_weights=True),
         graph_to_mask(bigbird_graph(n, g=2, w=4, r=3, seed=1, causal=causal), n)),
        (longformer_attention(q, k, v, w=5, dilation=[1, 2, 3], global_tokens=(0, 7), causal=causal,
                              return_weights=True),
         graph_to_mask(longformer_graph(n, w=5, dilation=[1, 2, 3], global_tokens=(0, 7), causal=causal), n)),
    ]
    R = torch.randn(2, 3, n, 7, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    for fast, mask in cases:
        dense = softmax_attention(q, k, v, mask=mask, return_weights=True)
        assert_close(fast.output, dense.output)
        assert_close(fast.weights, dense.weights)
        for a, b in zip(torch.autograd.grad((fast.output * R).sum(), (q, k, v)),
                        torch.autograd.grad((dense.output * R).sum(), (q, k, v))):
            assert_close(a, b)


def test_memory_is_linear_with_global_tokens():
    """n = 4096 with a global token: extra keys per row stay g + r wide, and row 2000 is exact."""
    n = 4096
    p = bigbird_pattern(n, g=1, w=5, r=2, seed=0)
    assert p.extra.shape == (n, 3) and p.global_mask.shape == (1, n)
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(n, 4, generator=g, dtype=torch.float64) for _ in range(3))
    out = pattern_attention(q, k, v, p).output
    i, keys = 2000, sorted({0, 1998, 1999, 2000, 2001, 2002, *p.extra[2000].tolist()} - {-1})
    P = torch.softmax(q[i] @ k[keys].T / 2.0, dim=-1)
    assert_close(out[i], P @ v[keys])
    assert_close(out[0], torch.softmax(q[0] @ k.T / 2.0, dim=-1) @ v)  # the global row sees every key


@pytest.mark.parametrize(
    "call,message",
    [
        (lambda q: bigbird_attention(q, q, q, g=-1, w=3, r=1, seed=0), "g (global tokens) must be an integer >= 0"),
        (lambda q: bigbird_attention(q, q, q, g=1, w=3, r=20, seed=0), "r (random keys)=20 is larger"),
        (lambda q: longformer_attention(q, q, q, w=3, dilation=[1, 2]), "one dilation per head"),
        (lambda q: longformer_attention(q, q, q, w=3, dilation=0), "dilation must be an integer >= 1"),
        (lambda q: longformer_attention(q, q, q, w=14), "larger than the sequence"),
        (lambda q: longformer_attention(q, q, q, w=3, global_tokens=(13,)), "outside [0, 13)"),
        (lambda q: pattern_attention(q, q, q, bigbird_pattern(12, g=1, w=3, r=1, seed=0)), "pattern is for n=12"),
    ],
)
def test_bad_input_raises_one_line_config_errors(call, message):
    q = torch.randn(2, 3, 13, 5, dtype=torch.float64)
    with pytest.raises(ConfigError) as err:
        call(q)
    assert message in str(err.value) and "\n" not in str(err.value)
