"""Reading attention maps: validation, copies, per-position inputs aligned from the left."""

from __future__ import annotations

import pytest
import torch

from attnlab.analysis.heads.maps import (
    as_maps,
    key_set,
    per_position,
    real_tokens,
    row_mean,
    token_ids,
    token_mask,
    uniform_attention,
)
from attnlab.errors import ConfigError


def _uniform(*shape):
    return torch.full(shape, 1.0 / shape[-1])


def test_as_maps_returns_a_float64_copy():
    A = _uniform(3, 5, 5).to(torch.float16)
    B = as_maps(A)
    assert B.dtype == torch.float64 and B.shape == (3, 5, 5)
    B.zero_()
    assert bool((A == torch.tensor(0.2, dtype=torch.float16)).all())  # the input is untouched
    C = torch.eye(7, dtype=torch.float64)
    D = as_maps(C)
    D[0, 0] = 5.0
    assert C[0, 0] == 1.0  # a float64 input is copied too


@pytest.mark.parametrize("A, match", [
    (torch.ones(3, 5), r"shape \(\.\.\., n, n\)"),
    (-torch.eye(3), "negative weights"),
    (2 * torch.eye(3), "rows of A must sum to 1.*transpose"),
    (torch.tensor([[1, 0], [0, 1]]), "finite real weights"),
    (torch.tensor([[float("nan"), 1.0], [0.0, 1.0]]), "finite real weights"),
])
def test_bad_maps_are_refused_with_what_to_change(A, match):
    with pytest.raises(ConfigError, match=match):
        as_maps(A)


def test_per_position_inputs_align_from_the_left():
    A = torch.zeros(2, 3, 5, 7, 7)  # (B, L, H, n, n)
    x = torch.arange(14).reshape(2, 7)  # (B, n)
    y = per_position(x, A, name="x")
    assert y.shape == (2, 3, 5, 7)
    assert torch.equal(y[1, 2, 4], x[1]) and torch.equal(y[0, 1, 3], x[0])
    assert per_position(torch.arange(7), A, name="x").shape == (2, 3, 5, 7)
    with pytest.raises(ConfigError, match=r"leading axes start the maps' leading axes"):
        per_position(torch.zeros(3, 7), A, name="x")  # (3, n) is not (B=2, n)
    with pytest.raises(ConfigError, match=r"n=7"):
        per_position(torch.zeros(5), A, name="x")


def test_real_tokens_and_padding_errors():
    A = _uniform(2, 5, 5)
    pad = torch.tensor([[False] * 5, [False, False, False, True, True]])
    real = real_tokens(A, pad)
    assert real.tolist() == [[True] * 5, [True, True, True, False, False]]
    with pytest.raises(ConfigError, match="boolean"):
        real_tokens(A, pad.int())
    with pytest.raises(ConfigError, match="every token of some map"):
        real_tokens(A, torch.ones(2, 5, dtype=torch.bool))


def test_row_mean_skips_rows_and_is_nan_without_any():
    x = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=torch.float64)
    rows = torch.tensor([[True, False, True], [False, False, False]])
    m = row_mean(x, rows)
    assert m[0] == 2.0 and torch.isnan(m[1])


def test_token_masks_and_key_sets():
    tokens = ["[CLS]", "the", "cat", ",", "sat", ".", "[SEP]"]
    assert token_mask(tokens, {"[CLS]", "[SEP]"}).tolist() == [True, False, False, False, False, False, True]
    assert token_mask([tokens, tokens], ".,").shape == (2, 7)
    with pytest.raises(ConfigError, match="same length"):
        token_mask([tokens, tokens[:3]], ".")
    A = _uniform(3, 7, 7)
    assert key_set(A, [0, -1], name="k")[2].tolist() == [True, False, False, False, False, False, True]
    assert key_set(A, torch.tensor([1, 2]), name="k").sum() == 6
    with pytest.raises(ConfigError, match=r"k must be integers in \[-7, 7\)"):
        key_set(A, [7], name="k")
    with pytest.raises(ConfigError, match="list of positions"):
        key_set(A, 3, name="k")


def test_token_ids_must_be_integers():
    A = _uniform(2, 5, 5)
    assert token_ids(torch.arange(5), A).shape == (2, 5)
    with pytest.raises(ConfigError, match="integer ids"):
        token_ids(torch.rand(5), A)


def test_uniform_attention_is_uniform_over_the_keys_each_row_could_attend():
    n = 7
    assert torch.equal(uniform_attention(n), torch.full((n, n), 1.0 / n, dtype=torch.float64))
    U = uniform_attention(n, causal=True)
    i = torch.arange(n, dtype=torch.float64)
    assert torch.allclose(U, torch.where(i[None, :] <= i[:, None], 1.0 / (i[:, None] + 1.0), 0.0), rtol=0, atol=1e-16)
    pad = torch.tensor([[False] * 5 + [True] * 2, [False] * 7])
    P = uniform_attention(n, key_padding_mask=pad)
    assert P.shape == (2, n, n) and torch.allclose(P.sum(-1), torch.ones(2, n, dtype=torch.float64))
    assert (P[0, :, 5:] == 0).all() and torch.allclose(P[0, :, :5], torch.full((n, 5), 0.2, dtype=torch.float64))
    assert torch.equal(P[1], uniform_attention(n))
