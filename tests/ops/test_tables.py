"""Cached tables (attnlab.ops.tables): a table first built during an inference pass serves a later
training pass. Built as an inference tensor, it would make that pass fail with "Inference tensors
cannot be saved for backward"."""

from __future__ import annotations

import pytest
import torch

from attnlab.ops.linear.attention import linear_attention
from attnlab.ops.linear.features import feature_map
from attnlab.ops.softmax import softmax_attention
from attnlab.ops.sparse import (
    bigbird_attention,
    bigbird_pattern,
    longformer_attention,
    longformer_pattern,
    sliding_window_attention,
)
from attnlab.ops.sparse.flex import window_block_mask
from attnlab.ops.sparse.pattern import _longformer_pattern
from attnlab.ops.sparse.structured import _placed, _placed_bands
from attnlab.ops.sparse.window import _band_layout, window_mask
from tolerances import FLOAT64

N = 24


def _clear():
    for cache in (bigbird_pattern, _longformer_pattern, _placed, _placed_bands, _band_layout, window_block_mask):
        cache.cache_clear()


CASES = {
    "window": (lambda q: sliding_window_attention(q, q, q, 5),
               lambda: window_mask(N, N, 5, 1, False, 0)),
    "longformer per-head dilation": (
        lambda q: longformer_attention(q, q, q, w=4, dilation=(1, 2, 1), global_tokens=(0,)),
        lambda: longformer_pattern(N, w=4, dilation=(1, 2, 1), global_tokens=(0,)).to_mask()),
    "bigbird": (lambda q: bigbird_attention(q, q, q, g=2, w=3, r=2, seed=1),
                lambda: bigbird_pattern(N, g=2, w=3, r=2, seed=1).to_mask()),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_table_built_in_inference_mode_serves_a_training_pass(name):
    call, mask = CASES[name]
    q = torch.randn(2, 3, N, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    _clear()
    with torch.inference_mode():
        call(q)  # builds and caches every table in inference mode
    x = q.clone().requires_grad_()
    (call(x).output ** 2).sum().backward()
    y = q.clone().requires_grad_()
    (softmax_attention(y, y, y, mask=mask()).output ** 2).sum().backward()
    assert (x.grad - y.grad).abs().max().item() <= FLOAT64


def test_favor_projection_placed_in_inference_mode_serves_a_training_pass():
    fm = feature_map("favor+", d=8, num_features=16, generator=torch.Generator().manual_seed(0))
    # float32 inputs: the float64 projection is converted (a new tensor) on first use
    q = torch.randn(2, 3, N, 8, generator=torch.Generator().manual_seed(3))
    with torch.inference_mode():
        first = linear_attention(q, q, q, feature_map=fm).output.clone()
    x = q.clone().requires_grad_()
    out = linear_attention(x, x, x, feature_map=fm).output
    out.sum().backward()
    assert torch.equal(out.detach(), first) and torch.isfinite(x.grad).all()


def test_the_window_layout_decides_empty_rows_from_the_sizes():
    """has_empty (from n_q, n_k, half, causal, offset) agrees with counting the layout's empty rows."""
    from attnlab.ops.sparse.window import _band_layout

    seen = {True: 0, False: 0}
    for n_q in (1, 5, 16, 37):
        for n_k in (1, 4, 16, 40):
            for half in (0, 1, 3):
                for causal in (False, True):
                    for off in (-50, -7, -1, 0, 3, n_k - n_q, 45):
                        bias, empty = _band_layout(n_q, n_k, half, causal, off, 8, torch.float64, torch.device("cpu"))
                        # A row with a key has -inf at the other L - (half + hi + 1) >= 7 places
                        # (B = 8); an empty row is opened to all zeros (then zeroed in the output).
                        opened = (bias == 0).all(-1, keepdim=True)  # (nb, B, 1)
                        counted = bool(opened.any())
                        assert (empty is not None) == counted
                        assert empty is None or torch.equal(empty, opened)
                        seen[counted] += 1
    assert seen[True] > 100 and seen[False] > 100
