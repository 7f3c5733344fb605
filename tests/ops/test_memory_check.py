"""Operators that form dense (..., n_q, n_k) tensors refuse, before allocating, what the device cannot
hold: one ConfigError line with both sizes and what to change, never the allocator's raw error.

The machine's memory is set to 16 GiB here, so that n = 200000 (149 GiB per float32 weight matrix)
is refused on every machine; nothing of that size is ever allocated."""

from __future__ import annotations

import time

import pytest
import torch

import attnlab.config
from attnlab.errors import ConfigError
from attnlab.ops import attention_pooling, reference_attention, softmax_attention, unnormalized_attention
from attnlab.ops.linear.attention import linear_attention
from attnlab.ops.lowrank import linformer_attention
from attnlab.ops.memory import check_dense_fits, dense_shape
from attnlab.ops.sparse import graph_attention

N, D = 200_000, 8
GIB = 2 ** 30


@pytest.fixture
def sixteen_gib(monkeypatch):
    monkeypatch.setattr(attnlab.config, "device_memory", lambda device="cpu": 16 * GIB)


@pytest.fixture(scope="module")
def qkv():
    g = torch.Generator().manual_seed(0)
    return tuple(torch.randn(N, D, generator=g) for _ in range(3))


def _calls(q, k, v):
    E = torch.randn(4, N, generator=torch.Generator().manual_seed(1)) / N
    nbrs = torch.arange(N).unsqueeze(-1)
    return {
        "softmax": (lambda: softmax_attention(q, k, v, return_weights=True),
                    "softmax_attention(return_weights=True): the logits and the weights P, 2 x (200000 x 200000) "
                    "float32, needs at least 298.0 GiB on cpu; it has 16.0 GiB: lower n, or drop return_weights"),
        "softmax causal": (lambda: softmax_attention(q, k, v, causal=True, return_weights=True), "298.0 GiB"),
        "softmax grouped": (lambda: softmax_attention(q.expand(4, N, D), k.expand(2, N, D), v.expand(2, N, D),
                                                      enable_gqa=True, return_weights=True),
                            "2 x (2 x 2 x 200000 x 200000) float32, needs at least 1192.1 GiB"),
        "reference": (lambda: reference_attention(q, k, v), "3 x (200000 x 200000) float64, needs at least 894.1 GiB"),
        "unnormalized": (lambda: unnormalized_attention(q, k, v), "1 x (200000 x 200000) float32"),
        "pooling": (lambda: attention_pooling(q, k, v), "attention_pooling: the similarities"),
        "linformer": (lambda: linformer_attention(q, k, v, E, E, return_weights=True), "149.0 GiB"),
        "linear": (lambda: linear_attention(q, k, v, return_weights=True), "the kernel matrix"),
        "graph": (lambda: graph_attention(q, k, v, nbrs, return_weights=True), "the dense weights"),
    }


@pytest.mark.parametrize("name", ["softmax", "softmax causal", "softmax grouped", "reference", "unnormalized",
                                  "pooling", "linformer", "linear", "graph"])
def test_dense_weights_beyond_memory_are_refused_before_allocation(sixteen_gib, qkv, name):
    call, needle = _calls(*qkv)[name]
    start = time.perf_counter()
    with pytest.raises(ConfigError) as err:
        call()
    message = str(err.value)
    assert needle in message and "\n" not in message and "on cpu; it has 16.0 GiB" in message
    assert time.perf_counter() - start < 5


def test_what_fits_still_runs_and_the_fused_path_is_not_checked(sixteen_gib, qkv):
    q, k, v = qkv
    small = softmax_attention(q[:64], k[:64], v[:64], return_weights=True)
    assert small.weights.shape == (64, 64)
    out = softmax_attention(q[:16], k, v)  # no weights: the fused path, memory linear in n
    assert out.weights is None and out.output.shape == (16, D)


def test_check_dense_fits_counts_copies_batch_and_dtype():
    q = torch.zeros(3, 5, 7, dtype=torch.float64)
    k = torch.zeros(1, 11, 7, dtype=torch.float64)
    assert dense_shape(q, k, k) == (3, 5, 11)
    need = 2 * 3 * 5 * 11 * 8
    check_dense_fits(q, k, k, copies=2, what="x", available=need)  # exactly fits
    with pytest.raises(ConfigError, match=r"^x, 2 x \(3 x 5 x 11\) float64, needs at least 0.0 GiB on cpu"):
        check_dense_fits(q, k, k, copies=2, what="x", available=need - 1)
    check_dense_fits(q.to("meta"), k.to("meta"), k.to("meta"), copies=2, what="x", available=0)  # not checked
