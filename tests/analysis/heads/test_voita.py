"""Voita et al.'s roles: positional (90% argmax rule), confidence, rare-token scores, syntactic accuracy."""

from __future__ import annotations

import math

import pytest
import torch

from attnlab.analysis.heads.maps import uniform_attention
from attnlab.analysis.heads.voita import (
    POSITIONAL_FRACTION,
    confidence,
    dependency_accuracy,
    offset_argmax_fraction,
    rare_token_scores,
    voita_labels,
)
from attnlab.errors import ConfigError


def _shift(n, k):
    return torch.nn.functional.one_hot((torch.arange(n) + k).clamp(0, n - 1), n).double()


def test_offset_fractions_of_shifted_heads():
    n = 11
    F = offset_argmax_fraction(_shift(n, -1))
    assert F.tolist() == [1.0, 0.0]  # rows 1..10 (where i - 1 exists) all hit -1
    labels = voita_labels(torch.stack([_shift(n, -1), _shift(n, 1), torch.eye(n).double()]))
    assert labels.positional.tolist() == [True, True, False]
    assert labels.positional_offset.tolist() == [-1, 1, 0]
    assert labels.thresholds["positional_fraction"] == POSITIONAL_FRACTION == 0.9
    assert labels.summary((0,)) == "positional -1: argmax at offset -1: 1.000, +1: 0.000 (>= 0.9); confidence 1.000"


def test_ninety_percent_is_the_line():
    n = 11  # 10 rows can look back; 9 of them on i - 1 is 90%, 8 is 80%
    A = _shift(n, -1)
    A[5] = torch.eye(n, dtype=torch.float64)[5]
    assert offset_argmax_fraction(A)[0].item() == pytest.approx(0.9)
    assert bool(voita_labels(A).positional)
    A[7] = torch.eye(n, dtype=torch.float64)[7]
    assert offset_argmax_fraction(A)[0].item() == pytest.approx(0.8)
    assert not bool(voita_labels(A).positional)


def test_a_tie_for_the_maximum_counts_and_causal_has_no_next_offset():
    n = 5
    A = torch.zeros(n, n, dtype=torch.float64)
    A[0, 0] = 1
    for i in range(1, n):
        A[i, i - 1] = A[i, i] = 0.5
    assert offset_argmax_fraction(A, causal=True)[0].item() == 1.0
    assert math.isnan(offset_argmax_fraction(A, causal=True)[1].item())


def test_confidence_excluding_eos():
    n = 5
    A = torch.zeros(n, n, dtype=torch.float64)
    A[:, n - 1] = 0.8  # EOS at the end takes 0.8 of every row
    A[:, 0] = 0.2
    assert confidence(A).item() == pytest.approx(0.8)
    assert confidence(A, exclude=[n - 1]).item() == pytest.approx(0.2)  # EOS out as key and query


def test_rare_token_scores_by_hand():
    n = 5
    freq = torch.tensor([9.0, 3.0, 1.0, 4.0, 1.0])  # positions 2 and 4 tie as rarest
    A = torch.zeros(n, n, dtype=torch.float64)
    A[:, 2] = 0.6
    A[:, 0] = 0.4
    A[3] = torch.tensor([0.7, 0.0, 0.3, 0.0, 0.0], dtype=torch.float64)
    mass, hit = rare_token_scores(A, freq)
    assert mass.item() == pytest.approx((4 * 0.6 + 0.3) / 5)
    assert hit.item() == pytest.approx(4 / 5)
    labels = voita_labels(A, frequencies=freq)
    assert not bool(labels.rare) and labels.thresholds["rare_token_fraction"] == 0.9
    # causally, rows 0 and 1 cannot see position 2 and are not counted
    mass_c, hit_c = rare_token_scores(A.tril() / A.tril().sum(-1, keepdim=True), freq, causal=True)
    assert hit_c.item() == pytest.approx(2 / 3)


def test_dependency_accuracy_against_offset_baselines():
    # tokens 0..5; gold heads of tokens 1..4 (token 0 and 5 unscored)
    gold = torch.tensor([-1, 2, 3, 3, 3, -1])
    n = 6
    A = torch.zeros(n, n, dtype=torch.float64)
    A[1, 2] = A[2, 3] = A[3, 0] = A[4, 3] = 1.0  # 3 of 4 right; row 3's head is itself (never predicted)
    A[0, 0] = A[5, 5] = 1.0
    acc = dependency_accuracy(A, gold, ignore=[0])
    # row 3 cannot pick itself or the ignored 0: argmax over the rest is the first zero, key 1
    assert acc.accuracy.item() == pytest.approx(3 / 4)
    # offsets: +1 is right for tokens 1, 2 (2/4); -1 for token 4 (1/4)
    assert acc.offset_accuracy.tolist() == pytest.approx([0.0, 0.0, 0.25, 0.5, 0.0])
    assert acc.baseline.item() == 0.5 and acc.best_offset.item() == 1
    assert bool(acc.syntactic)  # 0.75 >= 0.5 + 0.10


def test_dependency_accuracy_pools_documents():
    n = 5
    gold = torch.tensor([[1, -1, -1, -1, -1], [-1, 2, -1, -1, -1]])  # (documents, n)
    A = torch.stack([torch.eye(n).double().roll(1, -1), torch.eye(n).double()])[:, None]  # (2 docs, 1 head, n, n)
    acc = dependency_accuracy(A, gold)
    assert acc.hits.shape == (2, 1) and acc.scored.tolist() == [[1.0], [1.0]]
    pooled = acc.pooled((0,))
    assert pooled.scored.tolist() == [2.0] and pooled.accuracy.tolist() == [0.5]
    with pytest.raises(ConfigError, match="scores no token"):
        dependency_accuracy(A, -torch.ones(2, n, dtype=torch.long))


def test_chance_levels_of_argmax_scores_split_the_ties_of_uniform_attention():
    n = 11
    harmonic = sum(1 / k for k in range(1, n + 1))
    U = uniform_attention(n)
    # a tie counts: uniform attention would be "positional" on every offset; split, it scores 1/n
    assert offset_argmax_fraction(U).tolist() == [1.0, 1.0]
    assert offset_argmax_fraction(U, ties="split").tolist() == pytest.approx([1 / n, 1 / n], abs=1e-15)
    C = uniform_attention(n, causal=True)
    prev, nxt = offset_argmax_fraction(C, causal=True, ties="split").tolist()
    assert prev == pytest.approx((harmonic - 1) / (n - 1), abs=1e-15)  # rows 1..n-1, each 1/(i+1)
    assert math.isnan(nxt)  # no visible next key
    freq = torch.full((n,), 3.0)
    freq[4] = 1.0  # the rarest token at position 4
    mass, argmax = rare_token_scores(U, freq, ties="split")
    assert (mass.item(), argmax.item()) == pytest.approx((1 / n, 1 / n), abs=1e-15)
    mass, argmax = rare_token_scores(C, freq, causal=True, ties="split")  # rows 4..n-1 see it
    want = sum(1 / (i + 1) for i in range(4, n)) / (n - 4)
    assert (mass.item(), argmax.item()) == pytest.approx((want, want), abs=1e-15)
    assert rare_token_scores(U, freq)[1].item() == 1.0  # counted ties
    labels = voita_labels(U, frequencies=freq, ties="split")
    assert not bool(labels.positional) and not bool(labels.rare)
    with pytest.raises(ConfigError, match="ties must be one of"):
        offset_argmax_fraction(U, ties="random")
