"""Masks (ops/masks.py): causal alignment, mask merging, and every ConfigError path."""

from __future__ import annotations

import pytest
import torch

from conformance import draw_qkv, entries
from tolerances import assert_close

from attnlab.errors import ConfigError
from attnlab.ops import (
    causal_mask,
    combine_masks,
    reference_attention,
    softmax_attention,
    unnormalized_attention,
)
from attnlab.ops.masks import key_padding_mask_from_attention_mask, resolve_causal

T, F = True, False


def test_causal_mask_top_left_by_hand():
    # query i sees keys j <= i
    assert causal_mask(3, 5, alignment="top_left").tolist() == [
        [T, F, F, F, F],
        [T, T, F, F, F],
        [T, T, T, F, F],
    ]


def test_causal_mask_bottom_right_by_hand():
    # query i sees keys j <= i + (n_k - n_q): the last query sees every key
    assert causal_mask(3, 5, alignment="bottom_right").tolist() == [
        [T, T, T, F, F],
        [T, T, T, T, F],
        [T, T, T, T, T],
    ]
    # more queries than keys: the first n_q - n_k queries see nothing
    assert causal_mask(5, 3, alignment="bottom_right").tolist() == [
        [F, F, F],
        [F, F, F],
        [T, F, F],
        [T, T, F],
        [T, T, T],
    ]


@pytest.mark.parametrize("n", [1, 5, 7])
def test_alignments_agree_when_square(n):
    tl, br = causal_mask(n, n, alignment="top_left"), causal_mask(n, n, alignment="bottom_right")
    assert torch.equal(tl, br) and torch.equal(tl, torch.ones(n, n, dtype=torch.bool).tril())


def test_resolve_causal():
    assert resolve_causal(None, 5, 7) is None and resolve_causal(False, 5, 7) is None
    assert resolve_causal(True, 7, 7) == "top_left"
    assert resolve_causal("bottom_right", 5, 7) == "bottom_right"


def test_math_text_eq10_additive_mask_equals_causal():
    """Eq. (10): M = 0 on and below the diagonal, -inf above, added to the scaled scores."""
    q, k, v = draw_qkv((3, 7, 7, 11, 13), torch.float64, seed=1)
    M = torch.zeros(7, 7, dtype=torch.float64).masked_fill(~causal_mask(7, 7), float("-inf"))
    a = softmax_attention(q, k, v, mask=M, return_weights=True)
    b = softmax_attention(q, k, v, causal=True, return_weights=True)
    assert_close(a.output, b.output)
    assert torch.equal(a.weights == 0, b.weights == 0)
    assert (a.weights.triu(1) == 0).all()


def test_combine_masks_folds_inf_into_allowed_and_broadcasts_padding():
    m = torch.tensor([[0.0, float("-inf"), 1.5]])  # (1, 3)
    kpm = torch.tensor([[F, F, T], [T, F, F]])  # (B=2, n_k=3)
    allowed, additive = combine_masks(1, 3, batch_shape=(2, 4), mask=m, key_padding_mask=kpm)
    assert additive is m
    assert allowed.shape == (2, 1, 1, 3)  # (B, 1, 1, n_k) after the mask's (1, 3)
    assert allowed[:, 0, 0].tolist() == [[T, F, F], [F, F, T]]


def test_combine_masks_nothing_given():
    assert combine_masks(5, 7) == (None, None)


def test_bool_mask_broadcast_over_heads():
    q, k, v = draw_qkv((2, 3, 5, 7, 11, 13), torch.float64, seed=2)
    m = torch.rand(2, 1, 5, 7, generator=torch.Generator().manual_seed(3)) < 0.5  # (B, 1, n_q, n_k)
    out = softmax_attention(q, k, v, mask=m).output
    assert_close(out, reference_attention(q, k, v, mask=m.expand(2, 3, 5, 7)).output)


# --- ConfigError paths ---------------------------------------------------------------

ALL_MASKED_OPS = entries("mask")


@pytest.mark.parametrize("entry", entries("causal"), ids=lambda e: e.name)
def test_causal_true_needs_square(entry):
    q, k, v = draw_qkv((2, 3, 5, 7, 11, 13), torch.float64, seed=4)
    with pytest.raises(ConfigError, match=r"causal=True is ambiguous with 5 queries and 7 keys"):
        entry.fn(q, k, v, causal=True)


def test_unknown_causal_value():
    with pytest.raises(ConfigError, match=r"causal must be False, True, 'top_left' or 'bottom_right', got 'left'"):
        resolve_causal("left", 5, 5)
    with pytest.raises(ConfigError, match=r"causal alignment must be 'top_left' or 'bottom_right'"):
        causal_mask(5, 5, alignment="diagonal")  # type: ignore[arg-type]


@pytest.mark.parametrize("entry", ALL_MASKED_OPS, ids=lambda e: e.name)
def test_wrong_mask_shape(entry):
    q, k, v = draw_qkv((2, 3, 5, 7, 11, 13), torch.float64, seed=5)
    with pytest.raises(ConfigError, match=r"mask has shape \(7, 5\), which does not broadcast to the logits. shape"):
        entry.fn(q, k, v, mask=torch.ones(7, 5, dtype=torch.bool))


def test_wrong_mask_dtype():
    q, k, v = draw_qkv((3, 5, 7, 11, 13), torch.float64, seed=6)
    with pytest.raises(ConfigError, match="mask must be bool or floating point, got dtype torch.int64"):
        softmax_attention(q, k, v, mask=torch.ones(5, 7, dtype=torch.int64))


@pytest.mark.parametrize("attention_mask", [
    torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1]]),
    torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1]], dtype=torch.int32),
    torch.tensor([[T, T, T, F], [T, T, T, T]]),
    torch.tensor([[1.0, 1.0, 1.0, 0.0], [1.0, 1.0, 1.0, 1.0]]),
])
def test_attention_mask_converts_to_key_padding_mask(attention_mask):
    # transformers: 1 = real token; attnlab: True = padding
    kpm = key_padding_mask_from_attention_mask(attention_mask)
    assert kpm.dtype == torch.bool and kpm.tolist() == [[F, F, F, T], [F, F, F, F]]


@pytest.mark.parametrize("attention_mask, message", [
    (torch.tensor([[0.0, float("-inf")]]), r"must hold only 0 \(padding\) and 1 \(real token\)"),
    (torch.tensor([[1, 2]]), "must hold only 0"),
    (torch.ones(1, 1, 2, 2), r"must have shape \(batch, n\)"),
    ([[1, 0]], "must be a tensor of 0 and 1"),
])
def test_attention_mask_conversion_rejects_what_is_not_a_0_1_mask(attention_mask, message):
    with pytest.raises(ConfigError, match=message):
        key_padding_mask_from_attention_mask(attention_mask)


@pytest.mark.parametrize("name", ["softmax", "softmax-weights", "reference", "unnormalized"])
def test_a_transformers_mask_given_as_key_padding_mask_is_an_error(name):
    q, k, v = draw_qkv((3, 5, 7, 11, 13), torch.float64, seed=7)
    fn = {"softmax": softmax_attention, "reference": reference_attention, "unnormalized": unnormalized_attention,
          "softmax-weights": lambda *a, **kw: softmax_attention(*a, return_weights=True, **kw)}[name]
    attention_mask = torch.ones(3, 7, dtype=torch.int64)
    attention_mask[0, 5:] = 0
    # integer (or float) where a boolean key_padding_mask is expected: points to the converter
    with pytest.raises(ConfigError, match="key_padding_mask_from_attention_mask"):
        fn(q, k, v, key_padding_mask=attention_mask)
    # an unpadded batch's attention_mask made boolean pads every key of every sequence
    with pytest.raises(ConfigError, match="every key of every sequence"):
        fn(q, k, v, key_padding_mask=torch.ones(3, 7, dtype=torch.int64).bool())
    out = fn(q, k, v, key_padding_mask=key_padding_mask_from_attention_mask(attention_mask)).output
    assert torch.isfinite(out).all()


def test_one_fully_padded_sequence_stays_legal():
    q, k, v = draw_qkv((3, 5, 7, 11, 13), torch.float64, seed=8)
    kpm = torch.zeros(3, 7, dtype=torch.bool)
    kpm[1] = True  # sequence 1 has no key; the others do
    out = softmax_attention(q, k, v, key_padding_mask=kpm, return_weights=True)
    assert (out.output[1] == 0).all() and (out.weights[1] == 0).all()
    assert_close(out.output, reference_attention(q, k, v, key_padding_mask=kpm).output)


def test_key_padding_mask_dtype_and_shape():
    q, k, v = draw_qkv((3, 5, 7, 11, 13), torch.float64, seed=7)
    with pytest.raises(ConfigError, match=r"key_padding_mask must be boolean \(True marks a padding key\)"):
        softmax_attention(q, k, v, key_padding_mask=torch.zeros(3, 7))
    with pytest.raises(ConfigError, match=r"key_padding_mask must have shape \(batch, n_k\) = \(3, 7\), got \(3, 5\)"):
        softmax_attention(q, k, v, key_padding_mask=torch.zeros(3, 5, dtype=torch.bool))
    with pytest.raises(ConfigError, match=r"key_padding_mask must have shape \(batch, n_k\) = \(3, 7\), got \(7,\)"):
        softmax_attention(q, k, v, key_padding_mask=torch.zeros(7, dtype=torch.bool))
    with pytest.raises(ConfigError, match=r"key_padding_mask needs batched inputs"):
        softmax_attention(q[0], k[0], v[0], key_padding_mask=torch.zeros(1, 7, dtype=torch.bool))


# --- shape checks that fall through to a raw torch error (ops/masks.py) ---------------


def test_one_d_mask_of_length_n_k_broadcasts_like_torch():
    """(n_k,) broadcasts to (n_q, n_k) under torch's rules: same as the 2-D mask."""
    q, k, v = draw_qkv((3, 5, 7, 11, 13), torch.float64, seed=8)
    row = torch.tensor([T, F, T, T, F, T, T])
    expected = softmax_attention(q, k, v, mask=row.expand(5, 7)).output
    try:
        got = softmax_attention(q, k, v, mask=row).output
    except ConfigError as err:
        raise AssertionError(f"rejected: {err}") from err
    assert_close(got, expected)


def test_one_d_mask_of_length_n_q_is_a_config_error():
    q, k, v = draw_qkv((3, 5, 7, 11, 13), torch.float64, seed=9)
    with pytest.raises(ConfigError, match="mask"):
        softmax_attention(q, k, v, mask=torch.ones(5, dtype=torch.bool))


def test_mask_batch_mismatch_is_a_config_error():
    q, k, v = draw_qkv((3, 5, 7, 11, 13), torch.float64, seed=10)
    with pytest.raises(ConfigError, match="mask"):
        softmax_attention(q, k, v, mask=torch.ones(4, 5, 7, dtype=torch.bool))


def test_key_padding_batch_mismatch_is_a_config_error():
    q, k, v = draw_qkv((3, 5, 7, 11, 13), torch.float64, seed=11)
    with pytest.raises(ConfigError, match="key_padding_mask"):
        softmax_attention(q, k, v, key_padding_mask=torch.zeros(4, 7, dtype=torch.bool))


@pytest.mark.parametrize("name", ["unnormalized", "pooling-dot-unnormalized"])
def test_operators_without_logits_reject_finite_additive_values(name):
    entry = next(e for e in ALL_MASKED_OPS if e.name == name)
    q, k, v = draw_qkv((3, 5, 7, 11, 13), torch.float64, seed=12)
    m = torch.zeros(5, 7)
    m[0, 0] = 0.5
    with pytest.raises(ConfigError, match="finite non-zero additive mask values have no logits to shift"):
        entry.fn(q, k, v, mask=m)
    m[0, 0] = float("-inf")  # 0 / -inf is a plain mask and is accepted
    out = entry.fn(q, k, v, mask=m, return_weights=True)
    assert out.weights[..., 0, 0].abs().max().item() == 0.0
