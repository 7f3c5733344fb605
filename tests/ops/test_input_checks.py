"""One input check for every public operator: a one-line ConfigError for a list, an integer tensor, mixed
devices or dtypes, non-finite inputs and logits that overflow the dtype; empty sizes give an empty output
(no query) or zeros (no key) everywhere; an empty BigBird graph is refused."""

from __future__ import annotations

import pytest
import torch

from attnlab.errors import ConfigError
from attnlab.ops import reference_attention, softmax_attention, unnormalized_attention
from attnlab.ops.linear.attention import linear_attention, recurrent_linear_attention
from attnlab.ops.sparse.structured import bigbird_attention, longformer_attention
from attnlab.ops.sparse.window import sliding_window_attention

OPERATORS = {
    "softmax": lambda q, k, v, **kw: softmax_attention(q, k, v, **kw),
    "unnormalized": lambda q, k, v, **kw: unnormalized_attention(q, k, v, **kw),
    "sliding-window": lambda q, k, v, **kw: sliding_window_attention(q, k, v, w=2, **kw),
    "bigbird": lambda q, k, v, **kw: bigbird_attention(q, k, v, g=1, w=1, r=1, seed=0, **kw),
    "longformer": lambda q, k, v, **kw: longformer_attention(q, k, v, w=2, **kw),
    "linear": lambda q, k, v, **kw: linear_attention(q, k, v, **kw),
    "recurrent-linear": lambda q, k, v, **kw: recurrent_linear_attention(q, k, v, **kw),
}


def _qkv(n=4, d=8, dtype=torch.float32, fill=None):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(1, n, d, generator=g, dtype=dtype) if fill is None else torch.full((1, n, d), fill, dtype=dtype)
    return x, x.clone(), x.clone()


@pytest.mark.parametrize("name", OPERATORS)
@pytest.mark.parametrize("bad,match", [
    (lambda: ([[1.0] * 8] * 4,) * 3, "q must be a torch.Tensor, got list"),
    (lambda: (torch.ones(1, 4, 8, dtype=torch.int64),) * 3, "q is a torch.int64 tensor; attention needs floating"),
    (lambda: _qkv(fill=float("nan")), r"q holds 32 non-finite value\(s\)"),
    (lambda: _qkv(fill=1e20), r"can overflow torch.float32 \(max \|q\| max \|k\| d_k = 8e\+40"),
    (lambda: (_qkv()[0], _qkv()[1].double(), _qkv()[2]), "dtypes differ"),
])
def test_bad_inputs_are_one_line(name, bad, match):
    with pytest.raises(ConfigError, match=match) as e:
        OPERATORS[name](*bad())
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("name", OPERATORS)
def test_no_query_is_an_empty_output(name):
    q, k, v = _qkv(n=0)
    out = OPERATORS[name](q, k, v)
    assert out.output.shape == (1, 0, 8)


def test_no_key_gives_zero_rows():
    q = torch.randn(2, 3, 8)
    k = v = torch.zeros(2, 0, 8)
    for out in (softmax_attention(q, k, v, return_weights=True), reference_attention(q, k, v)):
        assert out.output.shape == (2, 3, 8) and float(out.output.abs().sum()) == 0.0
        assert out.weights.shape == (2, 3, 0)


def test_the_float64_oracle_takes_any_numbers():
    """reference_attention computes in float64 whatever it is given: 1e20 in float32 does not overflow there."""
    q, k, v = _qkv(fill=1e20)
    out = reference_attention(q, k, v)
    assert torch.isfinite(out.output).all()
    assert reference_attention([[1.0, 0.0]], [[1.0, 0.0]], [[2.0, 3.0]]).output.tolist() == [[2.0, 3.0]]


def test_an_empty_bigbird_graph_is_refused():
    q, k, v = _qkv()
    with pytest.raises(ConfigError, match="g = w = r = 0 attends to nothing"):
        bigbird_attention(q, k, v, g=0, w=0, r=0, seed=0)
