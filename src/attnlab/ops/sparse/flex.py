"""Sliding-window attention through torch.nn.attention.flex_attention with a block mask.

FlexAttention evaluates the mask predicate per (query block, key block) and
skips blocks with no allowed pair, so a window of w costs O(n w d). On CPU it is
forward only (its backward raises), and its compiled kernels reject float64:
float64 inputs run the eager implementation (exact, but it forms the scores),
other dtypes a compiled one, cached per process. Gradients through this backend
on CPU raise a ConfigError naming the backends that support them.
"""

from __future__ import annotations

from typing import Callable

import warnings
from functools import lru_cache

import torch
from torch import Tensor

from attnlab.errors import ConfigError
from attnlab.ops.softmax import batch_shape
from attnlab.ops.tables import table_cache


@lru_cache(maxsize=1)
def _compiled_flex() -> Callable[..., Tensor]:
    from torch.nn.attention.flex_attention import flex_attention

    return torch.compile(flex_attention, dynamic=False)


@table_cache(maxsize=32)
def window_block_mask(n_q: int, n_k: int, half: int, dilation: int, causal: bool, off: int, device: str):
    """The block mask of N(i) = {j : -half <= (j - p(i)) / dilation <= half (or 0 if causal)}."""
    from torch.nn.attention.flex_attention import create_block_mask

    hi = 0 if causal else half

    def in_window(b, h, q_idx, kv_idx):
        rel = kv_idx - (q_idx + off)  # j - p(i)
        return (rel >= -half * dilation) & (rel <= hi * dilation) & (rel % dilation == 0)

    return create_block_mask(in_window, None, None, n_q, n_k, device=device)


def flex_window_attention(
    q: Tensor, k: Tensor, v: Tensor, half: int, dilation: int, causal: bool, off: int, c: float
) -> Tensor:
    """(..., n_q, d_v) window attention; queries with an empty window give 0."""
    if q.device.type == "cpu" and torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v)):
        raise ConfigError(
            "the flex backend is forward-only on CPU: use backend='gather' for gradients, "
            "or call it under torch.no_grad()"
        )
    from torch.nn.attention.flex_attention import flex_attention

    batch = batch_shape(q, k, v)
    n_q, n_k = q.shape[-2], k.shape[-2]
    Q, K, V = (t.expand(*batch, *t.shape[-2:]).reshape(1, -1, *t.shape[-2:]) for t in (q, k, v))
    mask = window_block_mask(n_q, n_k, half, dilation, causal, off, str(q.device))
    if q.dtype == torch.float64:
        with warnings.catch_warnings():  # the eager path is chosen on purpose (float64)
            warnings.simplefilter("ignore", UserWarning)
            out = flex_attention(Q, K, V, block_mask=mask, scale=c)  # (1, prod(batch), n_q, d_v)
    else:
        out = _compiled_flex()(Q, K, V, block_mask=mask, scale=c)
    return out.reshape(*batch, n_q, v.shape[-1])
