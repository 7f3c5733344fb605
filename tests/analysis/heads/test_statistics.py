"""Per-head statistics: hand-derived values on prime sizes, padding, causal maps, batching, invariances."""

from __future__ import annotations

import math

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnlab.analysis.heads.statistics import CLARK_SMOOTHING, head_statistics, offset_weight, row_entropy
from tolerances import assert_close


def _shift(n, k):
    cols = (torch.arange(n) + k).clamp(0, n - 1)
    return torch.nn.functional.one_hot(cols, n).double()


def _random(shape, seed):
    g = torch.Generator().manual_seed(seed)
    e = -torch.log(torch.rand(*shape, generator=g, dtype=torch.float64))
    return e / e.sum(-1, keepdim=True)


def test_clark_smoothing_of_a_one_hot_row_by_hand():
    n = 5
    big, small = CLARK_SMOOTHING + 1e-4 / n, 1e-4 / n  # a' = 0.9999 a + 1e-4 / n
    expected = -(big * math.log(big) + (n - 1) * small * math.log(small))
    H = row_entropy(torch.eye(n))
    assert_close(H, torch.full((n,), expected, dtype=torch.float64))


def test_uniform_rows_keep_entropy_log_n_and_causal_rows_log_i_plus_one():
    n = 7
    uniform = torch.full((n, n), 1.0 / n, dtype=torch.float64)
    assert_close(row_entropy(uniform), torch.full((n,), math.log(n), dtype=torch.float64))
    causal = torch.ones(n, n, dtype=torch.float64).tril()
    causal = causal / causal.sum(-1, keepdim=True)
    expected = torch.log(torch.arange(1, n + 1, dtype=torch.float64))
    assert_close(row_entropy(causal, causal=True), expected)
    # read as bidirectional, the smoothing spreads 1e-4 over future keys too: a different number
    assert (row_entropy(causal) - expected).abs().max() > 1e-4


def test_offsets_distance_and_confidence_of_a_previous_token_head_by_hand():
    n = 7
    s = head_statistics(_shift(n, -1))  # row 0 attends itself, row i >= 1 attends i - 1
    assert_close(s.previous, torch.tensor(6 / 7, dtype=torch.float64))
    assert_close(s.self_, torch.tensor(1 / 7, dtype=torch.float64))
    assert s.next.item() == 0.0
    assert_close(s.distance, torch.tensor(6 / 7, dtype=torch.float64))
    assert s.confidence.item() == 1.0 and s.rows.item() == 7
    s = head_statistics(_shift(n, 1))
    assert_close(s.next, torch.tensor(6 / 7, dtype=torch.float64))  # next = the superdiagonal


def test_offset_weight_reads_the_diagonals():
    A = torch.arange(25, dtype=torch.float64).reshape(5, 5)
    assert offset_weight(A, 1).tolist() == [1.0, 7.0, 13.0, 19.0, 0.0]
    assert offset_weight(A, -2).tolist() == [0.0, 0.0, 10.0, 16.0, 22.0]
    assert offset_weight(A, 5).tolist() == [0.0] * 5


def test_special_key_sets():
    n = 5
    A = torch.zeros(n, n, dtype=torch.float64)
    A[:, 0], A[:, 4], A[:, 2] = 0.5, 0.3, 0.2
    s = head_statistics(A, keys={"[CLS]": [0], "[SEP]": torch.tensor([0, 0, 0, 0, 1]).bool(), "both": [0, -1]})
    assert_close(s.to_keys["[CLS]"], torch.tensor(0.5, dtype=torch.float64))
    assert_close(s.to_keys["[SEP]"], torch.tensor(0.3, dtype=torch.float64))
    assert_close(s.to_keys["both"], torch.tensor(0.8, dtype=torch.float64))


def test_padding_gives_the_statistics_of_the_unpadded_map():
    n, m = 7, 5
    inner = _random((m, m), 0)
    A = torch.zeros(n, n, dtype=torch.float64)
    A[:m, :m] = inner
    A[m:] = 1.0 / n  # padded rows: anything row-stochastic
    pad = torch.tensor([False] * m + [True] * (n - m))
    a, b = head_statistics(A, key_padding_mask=pad), head_statistics(inner)
    for field in ("entropy", "uniform_entropy", "distance", "previous", "self_", "next", "confidence"):
        assert_close(getattr(a, field), getattr(b, field))
    assert a.rows.item() == m


def test_batched_maps_equal_one_map_at_a_time_and_are_not_written():
    A = _random((3, 5, 7, 7), 1)  # (layers, heads, n, n)
    before = A.clone()
    s = head_statistics(A, keys={"first": [0]}, causal=False)
    assert torch.equal(A, before)
    assert s.entropy.shape == (3, 5)
    one = head_statistics(A[2, 4], keys={"first": [0]})
    assert_close(s.entropy[2, 4], one.entropy)
    assert_close(s.to_keys["first"][2, 4], one.to_keys["first"])


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.sampled_from([3, 5, 7, 11]))
def test_relabelling_tokens_leaves_entropy_confidence_and_key_mass_unchanged(seed, n):
    """P A P^T is the same head on reordered tokens: row-wise quantities move with the rows."""
    A = _random((n, n), seed)
    g = torch.Generator().manual_seed(seed)
    perm = torch.randperm(n, generator=g)
    keys = torch.zeros(n, dtype=torch.bool)
    keys[0] = True
    a = head_statistics(A, keys={"k": keys})
    b = head_statistics(A[perm][:, perm], keys={"k": keys[perm]})
    for x, y in ((a.entropy, b.entropy), (a.confidence, b.confidence), (a.to_keys["k"], b.to_keys["k"])):
        assert_close(x, y)


def test_statistics_of_uniform_attention_are_the_closed_form_chance_levels():
    from attnlab.analysis.heads.maps import uniform_attention

    n = 13
    harmonic = sum(1 / k for k in range(1, n + 1))
    keys = {"[CLS]": [0], "[SEP]": [n - 1]}
    bi = head_statistics(uniform_attention(n), keys=keys)
    assert_close(bi.previous, torch.tensor((n - 1) / n**2, dtype=torch.float64))
    assert_close(bi.next, torch.tensor((n - 1) / n**2, dtype=torch.float64))
    assert_close(bi.to_keys["[CLS]"], torch.tensor(1 / n, dtype=torch.float64))
    ca = head_statistics(uniform_attention(n, causal=True), causal=True, keys=keys)
    assert_close(ca.previous, torch.tensor((harmonic - 1) / n, dtype=torch.float64))  # sum 1/(i+1)
    assert ca.next.item() == 0.0
    assert_close(ca.to_keys["[CLS]"], torch.tensor(harmonic / n, dtype=torch.float64))
    assert_close(ca.to_keys["[SEP]"], torch.tensor(1 / n**2, dtype=torch.float64))  # only the last row
    assert_close(ca.entropy, ca.uniform_entropy)  # smoothing leaves a uniform row uniform
