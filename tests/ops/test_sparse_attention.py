"""graph_attention and sliding_window_attention against the dense masked computation.

Sizes are distinct primes where they can be (B 2, H 3, n 13/17, d_k 5, d_v 7).
Tolerances come from tests/tolerances.py (float64 1e-12, float32 1e-5).
"""

from __future__ import annotations

import pytest
import torch
from tolerances import assert_close

import conformance_sparse
from attnlab.errors import ConfigError
from attnlab.ops import causal_mask, softmax_attention
from attnlab.ops.sparse import (
    bigbird_graph,
    graph_attention,
    graph_to_mask,
    longformer_graph,
    sliding_window_attention,
    sliding_window_graph,
)


def qkv(n_q=13, n_k=13, dtype=torch.float64, seed=0, grad=False):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(2, 3, n_q, 5, generator=g, dtype=torch.float64).to(dtype)
    k = torch.randn(2, 3, n_k, 5, generator=g, dtype=torch.float64).to(dtype)
    v = torch.randn(2, 3, n_k, 7, generator=g, dtype=torch.float64).to(dtype)
    return tuple(t.requires_grad_(grad) for t in (q, k, v))


GRAPHS = {
    "bigbird": lambda c: bigbird_graph(13, g=1, w=3, r=2, seed=3, causal=c),
    "longformer-per-head": lambda c: longformer_graph(13, w=4, dilation=[1, 2, 3], global_tokens=(6,), causal=c),
    "window-dilated": lambda c: sliding_window_graph(13, 5, dilation=2, causal=c),
}


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("name", GRAPHS)
def test_graph_attention_equals_dense_masked_value_weights_gradient(name, causal):
    G = GRAPHS[name](causal)
    q, k, v = qkv(grad=True)
    fast = graph_attention(q, k, v, G, return_weights=True)
    dense = softmax_attention(q, k, v, mask=graph_to_mask(G, 13), return_weights=True)
    assert_close(fast.output, dense.output)
    assert_close(fast.weights, dense.weights)
    R = torch.randn(fast.output.shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    for a, b in zip(
        torch.autograd.grad((fast.output * R).sum(), (q, k, v)),
        torch.autograd.grad((dense.output * R).sum(), (q, k, v)),
    ):
        assert_close(a, b)


def test_query_without_neighbours_gives_zero_and_finite_gradients():
    q, k, v = qkv(grad=True)
    G = sliding_window_graph(13, 3).clone()
    G[4] = -1  # query 4 sees nothing
    res = graph_attention(q, k, v, G, return_weights=True)
    assert (res.output[..., 4, :] == 0).all() and (res.weights[..., 4, :] == 0).all()
    gq, gk, gv = torch.autograd.grad(res.output.sum(), (q, k, v))
    assert torch.isfinite(gk).all() and torch.isfinite(gv).all() and (gq[..., 4, :] == 0).all()


def test_graph_attention_memory_is_n_times_w_not_n_squared():
    """The gathered tensors have n w entries per feature: n = 4096, w = 5 runs in a few MB."""
    n = 4096
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(n, 4, generator=g) for _ in range(3))
    out = graph_attention(q, k, v, sliding_window_graph(n, 5)).output
    i = 2000
    p = torch.softmax(q[i] @ k[i - 2 : i + 3].T / 2.0, dim=-1)
    assert_close(out[i], p @ v[i - 2 : i + 3])


CASES = [(13, 13, False), (13, 13, True), (11, 17, "top_left"), (11, 17, "bottom_right"), (17, 11, "bottom_right")]


@pytest.mark.parametrize("n_q,n_k,causal", CASES)
@pytest.mark.parametrize("w,dilation", [(1, 1), (4, 1), (5, 3)])
def test_banded_backend_equals_dense_value_and_gradient(n_q, n_k, causal, w, dilation):
    q, k, v = qkv(n_q, n_k, grad=True)
    kw = dict(dilation=dilation, causal=causal)
    banded = sliding_window_attention(q, k, v, w, **kw).output
    dense = sliding_window_attention(q, k, v, w, backend="dense", **kw).output
    assert_close(banded, dense)
    R = torch.randn(dense.shape, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    for a, b in zip(
        torch.autograd.grad((banded * R).sum(), (q, k, v)), torch.autograd.grad((dense * R).sum(), (q, k, v))
    ):
        assert_close(a, b)
    with_weights = sliding_window_attention(q, k, v, w, return_weights=True, **kw)
    assert_close(with_weights.output, dense)


def test_banded_backend_across_many_blocks_float32():
    """n = 300 spans 5 query blocks of 64, with a partial last block; float32 vs a float64 dense oracle."""
    q, k, v = qkv(300, 300, dtype=torch.float32)
    out = sliding_window_attention(q, k, v, 41, causal=True).output
    ref = sliding_window_attention(*(t.double() for t in (q, k, v)), 41, causal=True, backend="dense").output
    assert_close(out, ref, torch.float32)


@pytest.mark.parametrize("n_q,n_k,causal", CASES)
def test_flex_backend_float64_forward_equals_dense(n_q, n_k, causal):
    q, k, v = qkv(n_q, n_k)
    with torch.no_grad():
        flex = sliding_window_attention(q, k, v, 5, dilation=2, causal=causal, backend="flex").output
    dense = sliding_window_attention(q, k, v, 5, dilation=2, causal=causal, backend="dense").output
    assert_close(flex, dense)


@pytest.mark.slow
def test_flex_backend_compiled_float32_equals_dense():
    q, k, v = qkv(37, 37, dtype=torch.float32)
    with torch.no_grad():
        flex = sliding_window_attention(q, k, v, 9, causal=True, backend="flex").output
    ref = sliding_window_attention(*(t.double() for t in (q, k, v)), 9, causal=True, backend="dense").output
    assert_close(flex, ref, torch.float32)


def test_flex_backend_refuses_gradients_and_weights_on_cpu():
    q, k, v = qkv(grad=True)
    with pytest.raises(ConfigError, match="forward-only on CPU: use backend='gather'"):
        sliding_window_attention(q, k, v, 3, backend="flex")
    with pytest.raises(ConfigError, match="never forms the weights"):
        sliding_window_attention(q, k, v, 3, backend="flex", return_weights=True)


@pytest.mark.parametrize(
    "kw,message",
    [
        (dict(w=14), "window w must be an integer in [1, n_k=13]"),
        (dict(w=0), "window w must be an integer in [1, n_k=13]"),
        (dict(w=3, dilation=0), "dilation must be an integer >= 1"),
        (dict(w=3, backend="sparse"), "unknown backend 'sparse'"),
        (dict(w=3, causal="left"), "causal must be False, True"),
    ],
)
def test_sliding_window_bad_input(kw, message):
    q, k, v = qkv()
    with pytest.raises(ConfigError) as err:
        sliding_window_attention(q, k, v, **kw)
    assert message in str(err.value) and "\n" not in str(err.value)


# --- the conformance entries with causal=..., which the suite does not ask of them ---


@pytest.mark.parametrize("entry", conformance_sparse.OPERATORS, ids=lambda e: e.name)
@pytest.mark.parametrize("n_q,n_k,alignment", [(5, 7, "top_left"), (5, 7, "bottom_right"), (7, 5, "bottom_right"), (5, 5, True)])
def test_entries_causal_match_oracle_and_depend_exactly_on_the_pattern(entry, n_q, n_k, alignment):
    """Value equals the float64 oracle, and d out_i / d v_j != 0 exactly on the oracle's pattern,
    which lies inside the causal mask: causality by Jacobian, against the graph's own pattern."""
    q, k, v = qkv(n_q, n_k)
    out = entry.fn(q, k, v, causal=alignment).output
    ref = entry.reference(q, k, v, causal=alignment)
    assert_close(out, ref.output)
    J_v = torch.autograd.functional.jacobian(lambda v_: entry.fn(q, k, v_, causal=alignment).output, v)
    dep = J_v.abs().sum(dim=(3, 7))  # (B, H, n_q, B, H, n_k)
    pattern = ref.weights > 0  # (B, H, n_q, n_k)
    for b in range(2):
        for h in range(3):
            assert torch.equal(dep[b, h, :, b, h, :] > 0, pattern[b, h])
    align = "top_left" if alignment is True else alignment
    assert not (pattern & ~causal_mask(n_q, n_k, alignment=align)).any()
