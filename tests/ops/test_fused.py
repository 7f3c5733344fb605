"""Causal and key-padding masks on the fused kernels (attnlab.ops.fused): the float64 oracle's
values and gradients for every alignment and padding pattern, exact zeros where a key is
padded or a row is empty, and no n_q x n_k mask handed to the kernel."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from tolerances import FLOAT32, assert_close

from attnlab.ops import reference_attention, softmax_attention
from attnlab.ops import fused as fused_module

F64 = torch.float64
B, H, D, DV = 3, 2, 5, 7  # distinct primes: an axis mix-up fails

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def _padding(kind: str, n_k: int, device) -> torch.Tensor | None:
    """(B, n_k), True = padding: none, a suffix, a prefix, scattered, or one element all padded."""
    if kind == "none":
        return None
    pad = torch.zeros(B, n_k, dtype=torch.bool, device=device)
    if kind == "right":
        pad[0, -2:], pad[1, -1:] = True, True
    elif kind == "left":
        pad[0, :2], pad[2, :3] = True, True
    elif kind == "scattered":
        pad[:, 1::3] = True
        pad[1, 0] = True
    elif kind == "all":
        pad[1] = True
        pad[2, :2] = True
    return pad


def _qkv(n_q, n_k, device, dtype=F64, scale=1.0, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = (scale * torch.randn(B, H, n_q, D, generator=g, dtype=F64)).to(device, dtype).requires_grad_()
    k = (scale * torch.randn(B, H, n_k, D, generator=g, dtype=F64)).to(device, dtype).requires_grad_()
    v = torch.randn(B, H, n_k, DV, generator=g, dtype=F64).to(device, dtype).requires_grad_()
    return q, k, v


CASES = [(None, 7, 7), ("top_left", 7, 7), ("top_left", 5, 11), ("top_left", 11, 5),
         ("bottom_right", 5, 11), ("bottom_right", 11, 5), ("bottom_right", 7, 7)]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("padding", ["none", "right", "left", "scattered", "all"])
@pytest.mark.parametrize("causal, n_q, n_k", CASES)
def test_values_and_gradients_match_the_float64_oracle(device, padding, causal, n_q, n_k):
    q, k, v = _qkv(n_q, n_k, device)
    pad = _padding(padding, n_k, device)
    out = softmax_attention(q, k, v, causal=causal, key_padding_mask=pad).output
    ref = reference_attention(q, k, v, causal=causal, key_padding_mask=pad).output
    assert_close(out, ref)
    g_out = torch.randn_like(out)
    grads = torch.autograd.grad(out, (q, k, v), g_out)
    grads_ref = torch.autograd.grad(ref, (q, k, v), g_out)
    for a, b in zip(grads, grads_ref):
        assert torch.isfinite(a).all()
        assert_close(a, b)


@pytest.mark.parametrize("device", DEVICES)
def test_padded_keys_get_exactly_zero_weight_and_gradient(device):
    q, k, v = _qkv(9, 9, device, scale=30.0)  # logits of size ~1e3: the penalty must still win
    pad = _padding("scattered", 9, device)
    out = softmax_attention(q, k, v, causal=True, key_padding_mask=pad).output
    g_k, g_v = torch.autograd.grad(out.sum(), (k, v))
    padded = pad[:, None, :, None].expand_as(g_v)
    assert (g_v[padded] == 0).all() and (g_k[pad[:, None, :, None].expand_as(g_k)] == 0).all()
    assert (g_v[~padded] != 0).any()
    assert_close(out, reference_attention(q, k, v, causal=True, key_padding_mask=pad).output)


@pytest.mark.parametrize("device", DEVICES)
def test_empty_rows_are_zero_with_zero_gradient(device):
    # bottom-right with n_q > n_k: the first n_q - n_k rows see no key; a left padding of
    # 2 keys empties the next 2 rows of element 0; element 1 has every key padded.
    q, k, v = _qkv(8, 5, device)
    pad = torch.zeros(B, 5, dtype=torch.bool, device=device)
    pad[0, :2], pad[1] = True, True
    out = softmax_attention(q, k, v, causal="bottom_right", key_padding_mask=pad).output
    empty = torch.zeros(B, 8, dtype=torch.bool, device=device)
    empty[:, :3], empty[0, 3:5], empty[1] = True, True, True
    assert (out[empty[:, None, :, None].expand_as(out)] == 0).all()
    assert (out[~empty[:, None, :, None].expand_as(out)] != 0).all()
    (g_q,) = torch.autograd.grad(out.square().sum(), (q,))
    assert torch.isfinite(g_q).all() and (g_q[empty[:, None, :, None].expand_as(g_q)] == 0).all()


def test_no_n_q_by_n_k_mask_reaches_the_kernel(monkeypatch):
    """Every structured case hands the kernel a flag, a lower-right bias or a (B, 1, 1, n_k)
    mask: nothing with n_q x n_k entries."""
    from torch.nn.attention.bias import CausalBias

    seen, biases = [], []
    real = F.scaled_dot_product_attention

    def spy(q, k, v, attn_mask=None, **kw):
        if isinstance(attn_mask, CausalBias):  # a description of the mask, never materialised
            biases.append(attn_mask)
        elif isinstance(attn_mask, torch.Tensor):
            seen.append(tuple(attn_mask.shape))
        return real(q, k, v, attn_mask=attn_mask, **kw)

    monkeypatch.setattr(fused_module.F, "scaled_dot_product_attention", spy)
    for causal, n_q, n_k in CASES:
        for padding in ("none", "right", "scattered"):
            q, k, v = _qkv(n_q, n_k, "cpu")
            softmax_attention(q, k, v, causal=causal, key_padding_mask=_padding(padding, n_k, "cpu"))
    assert seen and all(shape[-2] == 1 for shape in seen), seen  # (B, 1, 1, n_k): keys only
    assert len(biases) == 3  # bottom-right with n_q < n_k, for each padding


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_lower_precisions_agree_with_the_explicit_path(dtype):
    q, k, v = _qkv(33, 33, "cpu", dtype=dtype)
    pad = _padding("right", 33, "cpu")
    fused = softmax_attention(q, k, v, causal=True, key_padding_mask=pad).output.to(F64)
    explicit = softmax_attention(q, k, v, causal=True, key_padding_mask=pad, return_weights=True).output.to(F64)
    tol = FLOAT32 if dtype == torch.float32 else 2e-2
    assert (fused - explicit).abs().max().item() <= tol


def test_broadcast_batch_axes_and_value_width_other_than_the_key_width():
    g = torch.Generator().manual_seed(3)
    q = torch.randn(B, H, 6, D, generator=g, dtype=F64)
    k = torch.randn(B, 1, 6, D, generator=g, dtype=F64)  # keys shared by the heads
    v = torch.randn(1, 1, 6, 2 * D + 1, generator=g, dtype=F64)  # d_v > d + 1
    pad = _padding("left", 6, "cpu")
    out = softmax_attention(q, k, v, causal=True, key_padding_mask=pad).output
    assert out.shape == (B, H, 6, 2 * D + 1)
    assert_close(out, reference_attention(q, k, v, causal=True, key_padding_mask=pad).output)


def test_without_autograd_the_result_is_the_same():
    q, k, v = _qkv(8, 5, "cpu")
    pad = _padding("left", 5, "cpu")
    with torch.no_grad():
        inference = softmax_attention(q, k, v, causal="bottom_right", key_padding_mask=pad).output
    training = softmax_attention(q, k, v, causal="bottom_right", key_padding_mask=pad).output
    assert torch.equal(inference, training.detach())
